"""dtype objects, the default dtype and torch's type-promotion rules.

A `dtype` wraps a NumPy dtype and prints as torch does (`torch.float32`). Promotion follows
torch, not NumPy: an int64 tensor times a float32 tensor is float32, and Python scalars or
0-d tensors only promote a result when they belong to a higher category (bool < int < float
< complex) than the dimensioned tensors.
"""

from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - torch spells it in lower case
    """A tensor element type, e.g. `retrograd.float32`."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "category")

    def __init__(self, name: str, np_dtype: type, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = self.np.kind in "ifc"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        """The real dtype of the same precision (complex64 -> float32)."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype of the same precision (float64 -> complex128)."""
        return {float16: complex64, float32: complex64, float64: complex128}.get(self, self)


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128)
FROM_NUMPY: dict[np.dtype, dtype] = {d.np: d for d in ALL_DTYPES}
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128}
# How torch's error texts name element types: the ScalarType ("Float") and the C++ type ("float")
SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                     "float16": "Half", "float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
                     "complex128": "ComplexDouble"}


_NATIVE: dict[object, dict] = {}  # namespace -> {its dtype object: our dtype, and back}, made on first use
_FROM_NATIVE: dict[object, dtype] = {}  # every namespace's dtype objects met so far -> ours


def native_table(xp: object) -> dict:
    """An array namespace's dtype objects and ours, both ways: {xp.float32: float32, float32: xp.float32, ...}."""
    table = _NATIVE.get(xp)
    if table is None:
        pairs = [(getattr(xp, "bool" if d is bool_ else d.name), d) for d in ALL_DTYPES
                 if hasattr(xp, "bool" if d is bool_ else d.name)]
        table = _NATIVE[xp] = {**dict(pairs), **{d: n for n, d in pairs}}
        _FROM_NATIVE.update(pairs)
    return table


def from_native(native: object) -> dtype:
    """Our dtype of an array library's dtype object (a NumPy dtype, or one of a namespace already met)."""
    return FROM_NUMPY[native] if isinstance(native, np.dtype) else _FROM_NATIVE[native]


def native(xp: object, dt: dtype | np.dtype | object) -> object:
    """`dt` (ours, a NumPy dtype or already the namespace's own) as namespace `xp` spells it."""
    if isinstance(dt, dtype):
        dt = dt.np
    elif isinstance(dt, type) and issubclass(dt, np.generic):  # np.float64 the type, for its dtype
        dt = np.dtype(dt)
    if xp is np or not isinstance(dt, np.dtype):
        return dt
    return native_table(xp)[FROM_NUMPY[dt]]


def kind(value: object) -> str:
    """NumPy's kind letter ('b', 'i', 'u', 'f', 'c') of an array, or of a dtype object, of any array library."""
    dt = value if isinstance(value, np.dtype) else getattr(value, "dtype", value)
    return dt.kind if isinstance(dt, np.dtype) else from_native(dt).np.kind


def of_array(array: object) -> dtype:
    """The torch dtype of any array-API array (NumPy's and CuPy's dtypes are NumPy dtypes)."""
    native = array.dtype
    if isinstance(native, np.dtype):
        return FROM_NUMPY[native]
    return native_table(array.__array_namespace__())[native]


def scalar_type_name(dt: dtype | np.dtype) -> str:
    """torch's ScalarType name of a dtype, as its error texts print it: Float, Long, ComplexDouble."""
    return SCALAR_TYPE_NAMES.get(dt.name, dt.name)


def tensor_type_name(dt: dtype | np.dtype) -> str:
    """torch's legacy tensor type name of a dtype: torch.FloatTensor, torch.LongTensor."""
    return f"torch.{scalar_type_name(dt)}Tensor"


CPP_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                  "int32": "int", "int64": "long int", "float16": "c10::Half", "float32": "float", "float64": "double",
                  "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


class _Defaults:
    """Process-wide default floating dtype (torch.set_default_dtype)."""

    floating = float32


defaults = _Defaults()


def get_default_dtype() -> dtype:
    """The dtype of `tensor([1.5])`: float32 unless changed."""
    return defaults.floating


def set_default_dtype(d: dtype) -> None:
    """Change the default floating dtype (float32 or float64, as torch allows)."""
    if d not in (float16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    defaults.floating = d


def default_complex() -> dtype:
    return complex128 if defaults.floating is float64 else complex64


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The torch dtype of a NumPy dtype; TypeError for those torch lacks (strings, objects)."""
    try:
        return FROM_NUMPY[np_dtype]
    except KeyError:
        if np_dtype == np.uint16 or np_dtype == np.uint32 or np_dtype == np.uint64:
            raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype} to a tensor") from None
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types are: float64, "
            "float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
        ) from None


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both a and b convert to without losing category."""
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.is_complex and lo.is_floating_point and lo.itemsize > hi.itemsize // 2:
            return lo.to_complex()
        return hi
    return FROM_NUMPY[np.promote_types(a.np, b.np)]


def number(value: object) -> object:
    """A NumPy scalar as the Python number torch reads it as (np.bool_ counts as a float); any other
    value as it is. torch never lets a NumPy scalar raise a tensor's dtype (Note [operands])."""
    if isinstance(value, np.generic):
        return float(value) if value.dtype.kind == "b" else value.item()
    return value


def scalar_dtype(value: object) -> dtype:
    """The dtype torch gives a Python number: bool, int64, the default float or complex."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return defaults.floating
    if isinstance(value, complex):
        return default_complex()
    if isinstance(value, np.generic):  # a NumPy scalar counts as the Python number it holds (torch's rule)
        return scalar_dtype(number(value))
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(dims: list[dtype], zero_dims: list[dtype], scalars: list[dtype]) -> dtype:
    """torch.result_type from the dtypes of dimensioned tensors, 0-d tensors and Python scalars."""

    def fold(dtypes: list[dtype]) -> dtype | None:
        out = None
        for d in dtypes:
            out = d if out is None else promote_types(out, d)
        return out

    def combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
        if higher is None:
            return lower
        if lower is None or lower.category <= higher.category:
            return higher
        if higher.is_floating_point and lower.is_complex:
            return higher.to_complex()
        return lower

    out = combine(fold(dims), combine(fold(zero_dims), fold(scalars)))
    return out if out is not None else defaults.floating
