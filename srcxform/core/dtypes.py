"""Dtypes: the public aliases, TensorFlow's Python-scalar rule and NumPy promotion.

A Python scalar is *weak*: it takes the dtype of the arrays it meets (NumPy's NEP 50
rule, which is also TensorFlow's for a scalar beside a tensor). It is held exactly (as
float64 or int64) until then, so 0.1 beside a float64 array is 0.1. A value made of weak
operands only shows float32 or int32 (TensorFlow's rule for a lone Python scalar).
"""

import numpy as np

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
bool_ = np.dtype(np.bool_)
half, double = float16, float64  # TensorFlow's other names for them

# tf.dtypes's names; the rest of this module is srcxform's own dtype rules.
__all__ = ["as_dtype", "bool_", "double", "float16", "float32", "float64", "half", "int8",
           "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]

# The Python value that stands for a weak operand of each kind in np.result_type.
_WEAK_STANDIN = {"f": 0.0, "i": 0, "u": 0, "b": False, "c": 0j}


def weak_storage(value):
    """The dtype that holds a Python scalar exactly while it is weak."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float64
    raise TypeError(f"expected a Python scalar, got {type(value).__name__}")


def settled(dtype, value=None):
    """The dtype a weak result settles to on its own: float32, bool, or int32 (TensorFlow),
    int64 where `value` (the weak array) does not fit int32, as TensorFlow converts a
    Python int (tf.add(2**31, 0) is int64)."""
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return int32 if value is None or out_of_range(value, int32) is None else int64
    return {"f": float32, "b": bool_}.get(kind, dtype)


def settled_of(value):
    """The dtype a weak Value settles to (settled), a traced int's int64: its value is
    known only when the kernel runs, and int32 could wrap it."""
    array = getattr(value, "_array", None)
    if array is None and value.aval.dtype.kind in "iu":
        return int64
    return settled(value.aval.dtype, array)


def promote(avals):
    """The common dtype of some avals, weak ones taking the strong ones' dtype (NEP 50)."""
    strong = [a.dtype for a in avals if not a.weak]
    if not strong:
        return np.result_type(*[a.dtype for a in avals]), True
    weak = [_WEAK_STANDIN[a.dtype.kind] for a in avals if a.weak]
    return np.result_type(*strong, *weak), False


def as_dtype(dtype):
    """Accepts a NumPy dtype, a type, or a name ('float32'); returns a NumPy dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "bool":
        return bool_
    return np.dtype(dtype)



def check_convertible(source, target, what):
    """TypeError unless Python values held as `source` (or a tensor made of them) can
    become `target`, as TensorFlow converts them: bools to anything, integers to integers
    or floats, floats to floats. (NumPy values convert as NumPy casts them, in both.)"""
    source, target = np.dtype(source), np.dtype(target)
    if source.kind not in {"b": "b", "i": "biu", "u": "biu", "f": "bfiu"}[target.kind]:
        kind = {"b": "bool", "i": "integer", "u": "integer", "f": "float"}[source.kind]
        raise TypeError(f"{what}: cannot convert a {kind} value to {target.name}, as "
                        "TensorFlow cannot; cast it (srcxform.cast) to change its kind")


def out_of_range(array, target):
    """An integer of `array` that the integer dtype `target` cannot hold (a cast would wrap
    it), or None."""
    target = np.dtype(target)
    if array.dtype.kind not in "iu" or target.kind not in "iu" or not array.size:
        return None
    info = np.iinfo(target)
    low, high = array.min(), array.max()
    return low if low < info.min else high if high > info.max else None


# Eigen- and singular vectors' signs (ops/lapack.py): a column's entries within this many
# epsilons (relative) of its largest are ties, the first of them picking the sign. LAPACK
# builds part exact ties by an ulp or two (NumPy's 0.70710677 twice, Numba's 0.70710671
# and 0.70710677: helper 124's columns flipped between eager and compiled).
SIGN_TIE = 64
