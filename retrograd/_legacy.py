"""torch's legacy tensor types (torch.FloatTensor, torch.LongTensor, ...) and the legacy constructor
they share with Tensor.new: a size makes a tensor of that shape, data makes a copy, a tensor of the
same dtype is aliased.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D
from ._creation import _shape, tensor
from ._tensor import Size, Tensor, _wrap, checked_array


def legacy_new(dtype: D.dtype, args: tuple) -> Tensor:
    """torch's legacy constructor for `dtype`: (), sizes (ints or a torch.Size), data, or a tensor."""
    if not args:
        return _wrap(np.zeros(0, dtype.np))
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], Size)):
        return _wrap(np.zeros(_shape(args), dtype.np))  # torch leaves them uninitialised
    (data,) = args
    if isinstance(data, Tensor):
        if data.dtype is not dtype:
            raise TypeError(f"expected {_options(dtype)} (got {_options(data.dtype)})")
        return data.detach()
    if isinstance(data, np.ndarray):  # torch aliases the array before copying it: a read-only one is warned about
        checked_array(data, aliased=True)
    return tensor(data, dtype=dtype)


def _options(dtype: D.dtype) -> str:
    return (f"TensorOptions(dtype={D.CPP_TYPE_NAMES[dtype.name]}, device=cpu, layout=Strided, requires_grad=false "
            "(default), pinned_memory=false (default), memory_format=(nullopt))")


class tensortype(type):  # noqa: N801 - torch's name
    """The class of a legacy tensor type: calling it constructs a tensor of its dtype, and a tensor is
    an instance of it when it has that dtype."""

    dtype: D.dtype

    def __call__(cls, *args: Any) -> Tensor:
        return legacy_new(cls.dtype, args)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _legacy_type(dt: D.dtype) -> tensortype:
    name = D.tensor_type_name(dt)[len("torch."):]
    return tensortype(name, (), {"dtype": dt, "is_cuda": False, "__doc__": f"Legacy tensor type of {dt}."})


TYPES = {t.__name__: t for t in map(_legacy_type, (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16,
                                                  D.float32, D.float64, D.bfloat16))}
(BoolTensor, ByteTensor, CharTensor, ShortTensor, IntTensor, LongTensor, HalfTensor, FloatTensor, DoubleTensor,
 BFloat16Tensor) = TYPES.values()
