"""dtype objects, the default dtype and torch's type-promotion rules.

A `dtype` wraps a NumPy dtype and prints as torch does (`torch.float32`). Promotion follows
torch, not NumPy: an int64 tensor times a float32 tensor is float32, and Python scalars or
0-d tensors only promote a result when they belong to a higher category (bool < int < float
< complex) than the dimensioned tensors.
"""

from __future__ import annotations

import math

import numpy as np

from . import _xp
from ._warn import warn_once_at_user


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
        return {complex32: float16, complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype of the same precision (float64 -> complex128)."""
        return {float16: complex32, bfloat16: complex64, float32: complex64, float64: complex128}.get(self, self)


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
# torch's "barebones" unsigned types: few kernels take them, no other integer promotes with them
# (Note [unsigned dtypes] in ops/unsigned.py)
uint16 = dtype("uint16", np.uint16, 1)
uint32 = dtype("uint32", np.uint32, 1)
uint64 = dtype("uint64", np.uint64, 1)

# Note [bfloat16]
# NumPy has no bfloat16; the optional ml_dtypes package (JAX's, `pip install 'retrograd[bfloat16]'`) gives it
# one, imported when the first bfloat16 array is made (`bfloat16.np`), so `import retrograd` stays NumPy-only
# and scripts that only name torch.bfloat16 (nanoGPT's dtype dict) need nothing more. A bfloat16 tensor holds
# an ml_dtypes.bfloat16 ndarray (kind 'V', not 'f': ask the torch dtype or `kind()`, not the array's kind).
# torch computes every op on bfloat16 in float32 ("opmath") and rounds the result to bfloat16 once (to nearest
# even), sums and matmul accumulating in float32; so does the choke point (ops/registry.py, _apply_bfloat16):
# the forward runs on float32 copies of the bfloat16 arrays and its float32 results are rounded, unless the
# row's `dtype` asks for another. A Python number beside them is read as torch's kernels read it: as the
# bfloat16 it is wrapped in, except by mul and div (float32). Gradients are bfloat16 tensors and take the
# same road, op by op of each formula (torch's fused backward kernels, layer norm's, round once: a few ulps
# apart). The entry points find bfloat16 at no cost to other dtypes: a float row's kind test fails on 'V', a
# promoted row's identity test (`d0.dtype is NUMPY_BFLOAT16`) sends it to _arrays, after which its dtype, not
# NumPy's own (`isbuiltin` 2), sends it on; other rows find it by its scalar type (SPECIAL_TYPES). Views,
# shape ops, bit reinterpretation (`view(torch.int16)`), nextafter, device moves and the samplers (which draw
# as torch does for bfloat16) run on the bfloat16 array itself. Promotion: bfloat16 with float16 is float32,
# with a wider float that float, with integers, bool or a Python float bfloat16 (promote_types). `numpy()`
# refuses, as torch's. Under another array namespace (CuPy, array_api_strict) there is no bfloat16: moving a
# bfloat16 tensor there raises (_xp.no_bfloat16).
NO_ML_DTYPES = ("bfloat16 tensors need the ml_dtypes package (NumPy has no bfloat16 type): "
                "pip install 'retrograd[bfloat16]'")
NUMPY_BFLOAT16: np.dtype | None = None  # ml_dtypes' bfloat16 once a bfloat16 array was made (the choke point reads it)
# the NumPy scalar types the choke point's entry points treat apart: the wide unsigned types (refused by most ops),
# complex32's np.void and, once loaded, bfloat16's (both computed through a wider type; Notes [bfloat16], [complex32])
SPECIAL_TYPES: set[type] = {np.uint16, np.uint32, np.uint64, np.void}


class _BFloat16(dtype):
    """torch.bfloat16, whose NumPy type comes from ml_dtypes, imported on first use (Note [bfloat16])."""

    __slots__ = ()

    def __init__(self) -> None:
        self.name, self.category, self.itemsize = "bfloat16", 2, 2
        self.is_floating_point, self.is_complex, self.is_signed = True, False, True

    @property
    def np(self) -> np.dtype:
        global NUMPY_BFLOAT16
        if NUMPY_BFLOAT16 is None:
            try:
                import ml_dtypes
            except ImportError:
                raise RuntimeError(NO_ML_DTYPES) from None
            NUMPY_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
            FROM_NUMPY[NUMPY_BFLOAT16] = self
            SPECIAL_TYPES.add(NUMPY_BFLOAT16.type)
        return NUMPY_BFLOAT16


bfloat16 = _BFloat16()

# Note [complex32]
# torch's complex32 (chalf, ComplexHalf): two float16 parts, 4 bytes. NumPy has no such type; a complex32 tensor
# holds a NumPy *structured* array of two float16 fields, `real` and `imag` (NUMPY_COMPLEX32), one element per
# complex number. Chosen over a float16 array with a hidden trailing dim of 2 because every array fact torch
# reads stays the array's own: shape, strides (in elements of 4 bytes), storage offset, views, reshapes,
# transposes, indexing, cat and where run on the structured array unchanged, as they do on any dtype; and
# `view_as_real` is one NumPy view of any strided array, `.view((float16, (2,)))`, whose subarray dtype adds the
# trailing dim of 2 (`.real`/`.imag` are its [..., 0] and [..., 1]). NumPy computes nothing on it (its ufuncs
# have no loop for a structured type; `astype` would copy a number into both fields), so values cross only
# through `widen` (to complex64, exact) and `to_complex32` (each part rounded to float16 once, to nearest even;
# from complex128 through complex64 first, as torch's c10::complex<Half> conversion does). torch computes the
# few ops it has ComplexHalf kernels for in complex64 ("opmath") and rounds each result once (a few kernels round
# more often: addcmul after each product, var and std per part; ops/complex32.py's FORWARDS); so does the choke
# point (ops/registry.py, _complex32_forward), and every other op raises torch's NotImplementedError naming the
# kernel (ops/complex32.py lists which). The entry points pay nothing for it: a row with no dtype promotion finds
# complex32 by its scalar type (np.void, in SPECIAL_TYPES, one set lookup it shares with the unsigned types and
# bfloat16) or by its dtype not being NumPy's own (`isbuiltin` 0); a promoted row sends complex32 beside another
# dtype through _arrays, whose promotion decides, and complex32 alone to its forward, which NumPy refuses (no
# ufunc loop takes a structured type), so the forward's failure path computes it; the variadic rows (cat, stack)
# move its values as they are. Promotion: complex32 with bool, integers and float16 is complex32 (so is float16
# with a complex number), with bfloat16, float32 and complex64 complex64, with float64 and complex128 complex128
# (promote_types). `numpy()` refuses, as torch's; printing, `item`, `tolist` read the complex64 values. The
# array's kind is 'V' (as ml_dtypes' bfloat16's): ask the torch dtype or `kind()`, which says 'c'.
NUMPY_COMPLEX32 = np.dtype([("real", np.float16), ("imag", np.float16)])
_PARTS = np.dtype((np.float16, (2,)))  # a complex32 element seen as its two float16 parts (Note [complex32])


class _Complex32(dtype):
    """torch.complex32, held in a NumPy structured array of two float16 fields (Note [complex32])."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("complex32", NUMPY_COMPLEX32, 3)
        self.is_signed = True


complex32 = _Complex32()


def is_complex32(array: object) -> bool:
    """Whether `array` (a NumPy array; anything else is not) holds complex32 (Note [complex32])."""
    return getattr(array, "dtype", None) == NUMPY_COMPLEX32


def complex32_parts(array: np.ndarray) -> np.ndarray:
    """A complex32 array's float16 parts as a view with a trailing dim of 2 (view_as_real), any strides."""
    return array.view(_PARTS)


def widen(array: object) -> object:
    """A complex32 array as complex64 (exact), a bfloat16 one as float32; any other value as it is."""
    if not isinstance(array, np.ndarray) or array.dtype.kind != "V":
        return array
    if array.dtype is NUMPY_BFLOAT16:
        return array.astype(np.float32)
    return complex32_parts(array).astype(np.float32, order="C").view(np.complex64)[..., 0]


def warn_experimental_complex32() -> None:
    """torch's warning, once per process, as memory for complex32 values is made (its EmptyTensor.cpp)."""
    warn_once_at_user("ComplexHalf support is experimental and many operators don't support it yet. (Triggered "
                      "internally at /__w/pytorch/pytorch/aten/src/ATen/EmptyTensor.cpp:54.)")


def to_complex32(array: object) -> np.ndarray:
    """A complex32 array of `array`'s values (numbers, bool, integer, floating or complex), each part rounded to
    float16 once; complex128 and float64 through complex64 first, as torch converts (Note [complex32])."""
    array = widen(np.asarray(array))
    if array.dtype == NUMPY_COMPLEX32:
        return array
    warn_experimental_complex32()
    values = array.astype(np.complex64) if array.dtype != np.complex64 else array
    out = np.empty(values.shape, NUMPY_COMPLEX32)
    parts = complex32_parts(out)
    parts[..., 0], parts[..., 1] = values.real, values.imag
    return out


def cast(array: np.ndarray, target: dtype) -> np.ndarray:
    """A NumPy `array` as dtype `target`, complex32 either side (Note [complex32]); NumPy's astype otherwise."""
    if target is complex32:
        return to_complex32(array)
    if array.dtype.kind == "V" and array.dtype is not NUMPY_BFLOAT16:
        array = widen(array)
        if not target.is_complex:  # torch reads the real part (its warning is the caller's)
            array = array.real
    return array.astype(target.np)


ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128,
              uint16, uint32, uint64)
UNSIGNED_WIDE = frozenset((uint16, uint32, uint64))
FROM_NUMPY: dict[np.dtype, dtype] = {d.np: d for d in (*ALL_DTYPES, complex32)}
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128}
# How torch's error texts name element types: the ScalarType ("Float") and the C++ type ("float")
SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                     "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
                     "complex32": "ComplexHalf", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                     "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


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
    """Our dtype of an array library's dtype object (a NumPy dtype, or one of a namespace already met or behind a
    device type: an op may ask of its input's dtype first)."""
    if isinstance(native, np.dtype):
        return FROM_NUMPY[native]
    if native not in _FROM_NATIVE:
        for xp in _xp.namespaces():
            native_table(xp)
    return _FROM_NATIVE[native]


def native(xp: object, dt: dtype | np.dtype | object) -> object:
    """`dt` (ours, a NumPy dtype or already the namespace's own) as namespace `xp` spells it."""
    if isinstance(dt, dtype):
        dt = dt.np
    elif isinstance(dt, type) and issubclass(dt, np.generic):  # np.float64 the type, for its dtype
        dt = np.dtype(dt)
    if xp is np or not isinstance(dt, np.dtype):
        return dt
    if dt is NUMPY_BFLOAT16:
        raise RuntimeError(_xp.no_bfloat16(xp))
    return native_table(xp)[FROM_NUMPY[dt]]


def kind(value: object) -> str:
    """NumPy's kind letter ('b', 'i', 'u', 'f', 'c') of an array, or of a dtype object, of any array library."""
    if type(value) is np.ndarray:  # the usual call (forwards test their arrays): one attribute chain
        letter = value.dtype.kind
        if letter != "V":
            return letter
    dt = value if isinstance(value, np.dtype) else getattr(value, "dtype", value)
    if isinstance(dt, np.dtype):
        return dt.kind if dt.kind != "V" else "f" if dt is NUMPY_BFLOAT16 else "c"  # ml_dtypes', complex32's: 'V'
    return from_native(dt).np.kind


def of_array(array: object) -> dtype:
    """The torch dtype of any array-API array (NumPy's and CuPy's dtypes are NumPy dtypes)."""
    native = array.dtype
    if isinstance(native, np.dtype):
        return FROM_NUMPY[native]
    return native_table(_xp.namespace(array))[native]


def scalar_type_name(dt: dtype | np.dtype) -> str:
    """torch's ScalarType name of a dtype, as its error texts print it: Float, Long, ComplexDouble."""
    return SCALAR_TYPE_NAMES.get(dt.name, dt.name)


def tensor_type_name(dt: dtype | np.dtype) -> str:
    """torch's legacy tensor type name of a dtype: torch.FloatTensor, torch.LongTensor."""
    return f"torch.{scalar_type_name(dt)}Tensor"


def aten_type_name(dt: dtype | np.dtype) -> str:
    """The name ATen's Type::toString gives a CPU tensor's type in error texts (stft's): the legacy name for the
    eight dtypes that had a legacy tensor class, CPU<ScalarType>Type for the others (CPUBoolType)."""
    if dt.name in ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"):
        return tensor_type_name(dt)
    return f"CPU{scalar_type_name(dt)}Type"


CPP_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                  "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                  "float32": "float", "float64": "double", "complex32": "c10::complex<c10::Half>",
                  "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
                  "uint16": "short unsigned int", "uint32": "unsigned int", "uint64": "long unsigned int"}


def check_cast(result: dtype, out: dtype) -> None:
    """torch's refusal to write a result into memory of a lower category (a float result into an integer
    output or self); within a category it casts."""
    if result.category > out.category:
        raise RuntimeError(f"result type {scalar_type_name(result)} can't be cast to the desired output type "
                           f"{scalar_type_name(out)}")


def refuse_unsigned(kernel: str, dt: dtype) -> None:
    """torch's error from `kernel`, which has no version for the wide unsigned dtypes (Note [unsigned dtypes] in
    ops/unsigned.py), if `dt` is one of them."""
    if dt in UNSIGNED_WIDE:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt)}'")


def refuse_integral(kernel: str, dt: dtype | None) -> None:
    """torch's error from `kernel`, a sampler of a continuous distribution with no version for bool or integers, if
    `dt` is one of them (the wide unsigned dtypes too)."""
    if dt is not None and dt.category < 2:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt)}'")


def refuse_complex32(kernel: str, dt: dtype | None) -> None:
    """torch's error from `kernel`, which has no ComplexHalf version (Note [complex32]), if `dt` is complex32."""
    if dt is complex32:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'ComplexHalf'")


class finfo:  # noqa: N801 - torch's name
    """Machine limits of a floating dtype (of a complex dtype's real part): torch.finfo, values as Python floats."""

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002 - torch's name
        real = (type or defaults.floating).to_real()
        if not real.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = _machine_limits(real.np)
        self.bits, self.dtype = info.bits, real.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -info.precision

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


def _machine_limits(np_dtype: np.dtype) -> np.finfo:
    """NumPy's finfo of a floating type; ml_dtypes' for bfloat16 (Note [bfloat16])."""
    if np_dtype is NUMPY_BFLOAT16:
        import ml_dtypes  # loaded by then: bfloat16.np imported it

        return ml_dtypes.finfo(np_dtype)
    return np.finfo(np_dtype)


class iinfo:  # noqa: N801 - torch's name
    """Limits of an integer dtype: torch.iinfo, values as Python ints."""

    def __init__(self, type: dtype) -> None:  # noqa: A002 - torch's name
        if type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits, self.dtype, self.min, self.max = info.bits, type.name, int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class _Defaults:
    """Process-wide default floating dtype (torch.set_default_dtype)."""

    floating = float32


defaults = _Defaults()


def get_default_dtype() -> dtype:
    """The dtype of `tensor([1.5])`: float32 unless changed."""
    return defaults.floating


def set_default_dtype(d: dtype) -> None:
    """Change the default floating dtype (float32 or float64, as torch allows)."""
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    if d is bfloat16:
        bfloat16.np  # noqa: B018 - loads ml_dtypes now: numbers and integers promote to it (Note [bfloat16])
    defaults.floating = d


def default_complex() -> dtype:
    return complex128 if defaults.floating is float64 else complex64


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The torch dtype of a NumPy dtype; TypeError for those torch lacks (strings, objects)."""
    try:
        return FROM_NUMPY[np_dtype]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. The only supported types "
            "are: float64, "
            "float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, "
            "and bool."
        ) from None


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both a and b convert to without losing category."""
    if a is b:
        return a
    if (a in UNSIGNED_WIDE or b in UNSIGNED_WIDE) and not (a.is_floating_point or b.is_floating_point):
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{scalar_type_name(a)} and {scalar_type_name(b)}")
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi is complex32:  # NumPy has no complex32 (Note [complex32]): float16 and below keep it
            return hi if lo.category < 2 or lo is float16 else promote_types(lo.to_complex(), complex64)
        if hi.is_complex and lo.is_floating_point and lo.itemsize > hi.itemsize // 2:
            return lo.to_complex()
        return hi
    if a is bfloat16 or b is bfloat16:  # NumPy has no common type of bfloat16 and float16 (Note [bfloat16])
        wider = b if a is bfloat16 else a
        return wider if wider.itemsize > 2 else float32
    if a is complex32 or b is complex32:  # with complex64 or complex128: that one
        return b if a is complex32 else a
    return FROM_NUMPY[np.promote_types(a.np, b.np)]


def number(value: object) -> object:
    """A NumPy scalar as the Python number torch reads it as (np.bool_ counts as a float); any other
    value as it is. torch never lets a NumPy scalar raise a tensor's dtype (Note [operands])."""
    if isinstance(value, np.generic):
        return float(value) if value.dtype.kind == "b" else value.item()
    return value


# Note [numbers out of a dtype's range]
# torch converts a Python number into a tensor's dtype in two ways. As an operand of arithmetic (`x + 300`,
# `x & 300`) it is a 0-d int64 tensor, cast to the result's dtype as C++ casts integers: modulo 2**bits
# (uint8: 300 -> 44). As the number argument of a fill (`fill_`, `full`, `masked_fill`'s value, `clamp`'s
# bounds, `alpha`, `pow`'s exponent) c10's checked conversion refuses a value the dtype cannot hold, with
# "value cannot be converted to type uint8_t without overflow". What it cannot hold: an integer type takes
# the ints of its range, an unsigned one also negative ints whose magnitude fits (two's complement: -1 is
# 255), and finite floats of its range (not NaN, not inf, not -1.0 for unsigned types); float16, bfloat16,
# float32 and complex64 take any number but a finite one beyond their largest (torch skips that check when it
# fills a one-element tensor); float64, complex128 and bool take every number. NumPy does neither: it refuses
# an int operand beyond the dtype (OverflowError) and casts a fill value silently, so both are decided here.

_CHECKED_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                       "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "float16": "c10::Half",
                       "bfloat16": "c10::BFloat16", "float32": "float", "complex64": "c10::complex<float>"}
_LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": float(np.finfo(np.float32).max),
            "complex64": float(np.finfo(np.float32).max)}  # the largest finite value of each


def fits(value: object, np_dtype: np.dtype, halves: bool = True) -> bool:
    """Whether c10's checked conversion takes the Python number `value` into `np_dtype` (Note [numbers out of a
    dtype's range]); dtypes it never refuses take everything, float16 and bfloat16 too unless `halves`."""
    if not isinstance(np_dtype, np.dtype):  # another array library's dtype
        np_dtype = from_native(np_dtype).np
    name = np_dtype.name
    if name not in _CHECKED_TYPE_NAMES or type(value) is bool:
        return True
    if name in _LARGEST:
        if not halves and np_dtype.itemsize == 2:
            return True
        parts = (value.real, value.imag) if type(value) is complex else (value,)
        return not any(math.isfinite(part) and abs(part) > _LARGEST[name] for part in parts)
    info = np.iinfo(np_dtype)
    if type(value) is int:
        return (-info.max if info.min == 0 else info.min) <= value <= info.max
    return type(value) is not float or info.min <= value <= info.max  # NaN fails both


def check_fits(value: object, np_dtype: np.dtype, halves: bool = True) -> None:
    """Raise torch's error when a number argument does not fit the tensor's dtype (Note [numbers out of a dtype's
    range]); torch checks no float16 or bfloat16 number it first makes a 0-d tensor (`where`, `x[i] = v`): not
    `halves` then. An int beyond int64 and uint64 does not even parse as a number argument, whatever the dtype."""
    if type(value) is int and value < -(1 << 63):
        raise OverflowError("can't convert negative int to unsigned")
    if type(value) is int and value >= 1 << 64:
        raise OverflowError("int too big to convert")
    if not fits(value, np_dtype, halves):
        name = (np_dtype if isinstance(np_dtype, np.dtype) else from_native(np_dtype).np).name
        raise RuntimeError(f"value cannot be converted to type {_CHECKED_TYPE_NAMES[name]} without overflow")


def checked(value: object, np_dtype: np.dtype, halves: bool = True) -> object:
    """A number argument in `np_dtype` as torch converts it: refused unless it fits, an int wrapped around (Note
    [numbers out of a dtype's range])."""
    check_fits(value, np_dtype, halves)
    if type(value) is int and kind(np_dtype) in "iu":
        return wrapped(value, np_dtype)
    if not halves and not fits(value, np_dtype):  # beyond a float16's range, unchecked: its rounding (maybe inf)
        with np.errstate(over="ignore"):
            return np.asarray(value, np_dtype).item()
    return value


def wrapped(value: int, np_dtype: np.dtype) -> int:
    """A Python int cast to an integer dtype as C++ casts it: modulo 2**bits, into the dtype's range."""
    np_dtype = np_dtype if isinstance(np_dtype, np.dtype) else from_native(np_dtype).np
    bits = 8 * np_dtype.itemsize
    value %= 1 << bits
    return value - (1 << bits) if np_dtype.kind == "i" and value >> (bits - 1) else value


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


def result_type(*operands: object) -> dtype:
    """torch.result_type of tensors and Python numbers (None is skipped): the one place promotion is decided.

    Operands rank in three tiers, dimensioned tensors > 0-d tensors > Python numbers; a lower tier
    changes the result only when its category (bool < int < float < complex) is higher, and then
    with its own dtype, except that a complex below a float keeps the float's precision. A NumPy
    scalar counts as the Python number it holds; a tensor is anything with a torch `dtype` and `ndim`
    (this layer sits below Tensor)."""
    dims = zero_dims = scalars = None
    for value in operands:
        if value is None:
            continue
        dt = getattr(value, "dtype", None)
        if isinstance(dt, dtype):
            if value.ndim:
                dims = dt if dims is None else promote_types(dims, dt)
            else:
                zero_dims = dt if zero_dims is None else promote_types(zero_dims, dt)
        else:
            dt = scalar_dtype(value)
            scalars = dt if scalars is None else promote_types(scalars, dt)
    out = _above(dims, _above(zero_dims, scalars))
    return out if out is not None else defaults.floating


def _above(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """The dtype of a higher tier of operands once a lower tier joins it (result_type)."""
    if higher is None:
        return lower
    if lower is None or lower.category <= higher.category:
        return higher
    if higher.is_floating_point and lower.is_complex:
        return higher.to_complex()
    return lower
