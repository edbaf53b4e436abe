"""The dtype table: numpy, IR, Ascend C and LLVM spellings in one place.

Promotion (documented rule, used by every op's type rule):
- equal dtypes stay; bool joins anything as the other dtype;
- two integer dtypes of different kind/width give int32 (fusedsl has no int16/int64);
- integer with float: int8/uint8 keep the float dtype; int32 with a 16-bit float gives
  float32 (numpy would give float64, which the NPU does not have);
- float16 with bfloat16 gives float32; narrower float with float32 gives float32.
- Python scalars are "weak" (as in numpy 2 / NEP 50): an int scalar takes the tensor's
  dtype (bool tensors become int32); a float scalar takes the tensor's dtype if it is a
  float, else float32; a bool scalar takes the tensor's dtype.
Arithmetic rounding: every op result is rounded to its result dtype (float16 and
bfloat16 are computed in float32 and rounded once per op) in every executor.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str        # numpy-style public name, e.g. "float32"
    ir: str          # spelling in text IR, e.g. "f32"
    np: np.dtype     # numpy dtype used by executors
    ascendc: str     # Ascend C element type
    itemsize: int
    kind: str        # "float" | "int" | "uint" | "bool"

    @property
    def dtype(self) -> np.dtype:
        """numpy reads this attribute, so np.zeros(3, fs.bfloat16) and a.astype(fs.float16) work."""
        return self.np

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    def __repr__(self) -> str:
        return f"fs.{self.name}"

    def __str__(self) -> str:
        return self.name


float16 = DType("float16", "f16", np.dtype(np.float16), "half", 2, "float")
bfloat16 = DType("bfloat16", "bf16", np.dtype(ml_dtypes.bfloat16), "bfloat16_t", 2, "float")
float32 = DType("float32", "f32", np.dtype(np.float32), "float", 4, "float")
int32 = DType("int32", "i32", np.dtype(np.int32), "int32_t", 4, "int")
int8 = DType("int8", "i8", np.dtype(np.int8), "int8_t", 1, "int")
uint8 = DType("uint8", "u8", np.dtype(np.uint8), "uint8_t", 1, "uint")
bool_ = DType("bool", "i1", np.dtype(np.bool_), "uint8_t", 1, "bool")

ALL = (float16, bfloat16, float32, int32, int8, uint8, bool_)
FLOATS = (float16, bfloat16, float32)
_BY_NAME = {d.name: d for d in ALL} | {d.ir: d for d in ALL} | {"bool_": bool_, "half": float16,
                                                                 "float": float32}
_BY_NP = {d.np: d for d in ALL}


def to_dtype(x) -> DType:
    """A DType from a DType, a name ('float32', 'f32'), a numpy dtype or a scalar type.

    Raises KeyError with the list of supported names when unknown; the caller turns
    that into a located DTypeError.
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        raise KeyError(x)
    try:
        npd = np.dtype(x)
    except TypeError as exc:
        raise KeyError(str(x)) from exc
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise KeyError(str(npd))


def supported_names() -> str:
    return ", ".join(d.name for d in ALL)


def promote(a: DType, b: DType) -> DType:
    """The result dtype of a binary op on tensors of dtypes a and b (see module doc)."""
    if a == b:
        return a
    if a == bool_:
        return b
    if b == bool_:
        return a
    if a.is_int and b.is_int:
        return int32
    if a.is_float and b.is_float:
        return float32 if a.itemsize == b.itemsize or float32 in (a, b) else max(a, b, key=lambda d: d.itemsize)
    flt, other = (a, b) if a.is_float else (b, a)
    if other.itemsize == 1:
        return flt
    return float32


def scalar_dtype(value, tensor: DType) -> DType:
    """The dtype a weak Python scalar takes next to a tensor of dtype `tensor`."""
    if isinstance(value, bool):
        return tensor
    if isinstance(value, int):
        return int32 if tensor == bool_ else tensor
    return tensor if tensor.is_float else float32


def default_scalar_dtype(value) -> DType:
    """The dtype of a Python scalar standing alone (e.g. fs.where(c, 1.0, 2.0))."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int32
    return float32
