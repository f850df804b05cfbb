"""Matrix products that call BLAS directly: generated code calls `blas.matmul(x, y)` and
`blas.matvec(x, v)` where NumPy code would call np.dot.

Numba compiles np.dot's generic implementation again for each combination of operand
layouts (C, Fortran, strided) a process meets; for a small model that was most of the
first call's compile time, all of it in the kernel's LLVM module. Here the work is done
by small functions compiled once per dtype for operands of any layout ('A'): they read
the strides at run time and hand BLAS each matrix in place (C or Fortran order, a
transposed view, a slice with one unit stride). Operands typed C or Fortran order always
have a unit stride, and their calls go to a core that never copies; others go to one
that first copies a matrix with no unit stride. Calls of the public names are typed and
lowered as calls of a core with the operands retyped to layout 'A', so a new layout
combination costs no compilation at all.

BLAS is reached through the `numba_xxgemm` and `numba_xxgemv` functions of Numba's
helper library (the wrappers numba/np/linalg.py uses; they fetch dgemm/sgemm/dgemv/sgemv
from scipy.linalg.cython_blas on first use), a Numba internal: where numba_adapter's gate
does not allow internals, the public names compile as np.dot instead. Float32 and float64
operands of one dtype only, as Numba's np.dot. Imported only by generated code, never by
`import srcxform`.
"""

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from srcxform import numba_adapter
from srcxform.numba_adapter.jit import (call_as_core, call_numba_helper, ensure_blas, helper,
                                        read_only_operand)
from srcxform.runtime import arrays

_KINDS = {types.float32: "s", types.float64: "d"}
# Sizes pass to BLAS as its Fortran int: 32 bits in an LP64 BLAS (an ILP64 one would take
# more, but no sane matrix needs it). They are never negative, so their bitwise or
# exceeds _MAX_INT exactly when one of them does.
_MAX_INT = np.iinfo(np.int32).max
_FAILED = "srcxform.runtime.blas: a size beyond BLAS's int range, or no BLAS (scipy.linalg.cython_blas)"
_char = ir.IntType(8)
_void_p = ir.IntType(8).as_pointer()


# ----- the BLAS calls -----


def _kind(name, *arrays):
    """The BLAS kind letter of arrays of one float dtype; a typing error otherwise."""
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1 or next(iter(dtypes)) not in _KINDS:
        raise TypingError(f"srcxform.runtime.blas.{name} takes float32 or float64 arrays of one "
                          f"dtype, got {', '.join(str(a.dtype) for a in arrays)}")
    ensure_blas()  # scipy's BLAS must be importable, as for np.dot
    return _KINDS[next(iter(dtypes))]


def _data(context, builder, ty, value):
    return builder.bitcast(context.make_array(ty)(context, builder, value).data, _void_p)


def _scalar_slot(context, builder, dtype, value):
    """The address of a stack slot holding `value` (BLAS takes alpha and beta so)."""
    slot = cgutils.alloca_once_value(builder, context.get_constant(dtype, value))
    return builder.bitcast(slot, _void_p)


def _trans(builder, flag):
    return builder.select(flag, ir.Constant(_char, ord("t")), ir.Constant(_char, ord("n")))


@intrinsic
def _gemm(typingctx, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc):
    """c = op(a) @ op(b) in BLAS's column-major view of memory: op(a) m×k, op(b) k×n,
    c m×n, op transposing where trans_ is True. Returns numba_xxgemm's status."""
    kind = _kind("matmul", a, b, c)
    intp, flag = types.intp, types.boolean
    sig = types.int32(flag, flag, intp, intp, intp, a, intp, b, intp, c, intp)

    def codegen(context, builder, signature, args):
        ta, tb, m, n, k, a_, lda, b_, ldb, c_, ldc = args
        tys = signature.args
        dtype = tys[5].dtype
        return call_numba_helper(builder, "numba_xxgemm", [
            ir.Constant(_char, ord(kind)), _trans(builder, ta), _trans(builder, tb), m, n, k,
            _scalar_slot(context, builder, dtype, 1.0), _data(context, builder, tys[5], a_),
            lda, _data(context, builder, tys[7], b_), ldb,
            _scalar_slot(context, builder, dtype, 0.0), _data(context, builder, tys[9], c_),
            ldc])

    return sig, codegen


@intrinsic
def _gemv(typingctx, trans, m, n, a, lda, x, y):
    """y = op(a) @ x in BLAS's column-major view of memory: a m×n, op transposing where
    trans is True; x and y contiguous. Returns numba_xxgemv's status."""
    kind = _kind("matvec", a, x, y)
    intp = types.intp
    sig = types.int32(types.boolean, intp, intp, a, intp, x, y)

    def codegen(context, builder, signature, args):
        t, m, n, a_, lda, x_, y_ = args
        tys = signature.args
        dtype = tys[3].dtype
        return call_numba_helper(builder, "numba_xxgemv", [
            ir.Constant(_char, ord(kind)), _trans(builder, t), m, n,
            _scalar_slot(context, builder, dtype, 1.0), _data(context, builder, tys[3], a_),
            lda, _data(context, builder, tys[5], x_),
            _scalar_slot(context, builder, dtype, 0.0), _data(context, builder, tys[6], y_)])

    return sig, codegen


# ----- the products -----


@numba.njit(inline="always")
def _in_place(x, rows, cols):
    """How BLAS reads the rows×cols matrix x in place: (whether BLAS must transpose it,
    its leading dimension), or (False, 0) where it cannot (x has no unit stride).

    BLAS reads x where its rows are contiguous, ld = s0 elements apart (column-major BLAS
    sees x.T there, untransposed), or its columns are, ld = s1 apart (BLAS sees x:
    transposed). The stride of a dim of 1 is never used, so it is taken as the packed
    one, which also keeps ld at least 1, as BLAS requires. Inlined: the caller compiles
    it as if written out."""
    size = x.itemsize
    s0 = x.strides[0] if rows > 1 else cols * size
    s1 = x.strides[1] if cols > 1 else size
    if s1 == size and s0 >= cols * size and s0 % size == 0:
        return False, s0 // size
    if s0 == size and s1 >= rows * size and s1 % size == 0:
        return True, s1 // size
    return False, 0


@helper
def _matmul(a, b):
    """a @ b for operands BLAS reads in place (the caller's types say C or Fortran
    order, so each has a unit stride)."""
    m, k = a.shape
    n = b.shape[1]
    out = arrays.empty((m, n), a.dtype)
    if m == 0 or n == 0 or k == 0:
        for i in range(m):  # the empty sum (BLAS need not write it)
            for j in range(n):
                out[i, j] = 0
        return out
    ta, lda = _in_place(a, m, k)
    tb, ldb = _in_place(b, k, n)
    # C-ordered out is out.T = b.T @ a.T to BLAS, which sees a row-contiguous a or b
    # transposed already.
    if lda == 0 or ldb == 0 or (m | n | k | lda | ldb) > _MAX_INT or \
            _gemm(tb, ta, n, m, k, b, ldb, a, lda, out, n):
        raise RuntimeError(_FAILED)
    return out


@helper
def _matvec(a, v):
    """a @ v for a matrix BLAS reads in place and a contiguous vector."""
    m, k = a.shape
    out = arrays.empty((m,), a.dtype)
    if m == 0 or k == 0:
        for i in range(m):
            out[i] = 0
        return out
    ta, lda = _in_place(a, m, k)
    # BLAS sees a row-contiguous a as a.T (k×m), to be transposed back, and a
    # column-contiguous one as a (m×k).
    rows, cols = (m, k) if ta else (k, m)
    if lda == 0 or (m | k | lda) > _MAX_INT or _gemv(not ta, rows, cols, a, lda, v, out):
        raise RuntimeError(_FAILED)
    return out


# Operands of any layout (strided views): an operand BLAS cannot read in place is copied,
# then the product above is called. These are kept apart from it because every kernel's
# module links in the core it calls, and the copying code was half of the old core's IR.


@helper
def _matmul_any(a, b):
    (m, k), n = a.shape, b.shape[1]
    if _in_place(a, m, k)[1] == 0:
        a = a.copy()
    if _in_place(b, k, n)[1] == 0:
        b = b.copy()
    return _matmul(a, b)


@helper
def _matvec_any(a, v):
    m, k = a.shape
    if _in_place(a, m, k)[1] == 0:
        a = a.copy()
    if v.size > 1 and v.strides[0] != v.itemsize:  # BLAS reads v at unit stride
        v = v.copy()
    return _matvec(a, v)


# ----- the public names -----


def matmul(a, b):
    """a @ b for 2-D arrays a (m×k) and b (k×n): a new C-contiguous m×n array. Run as
    Python (generated code with SRCXFORM_JIT=0), it is np.dot."""
    return np.dot(a, b)


def matvec(a, v):
    """a @ v for a 2-D array a (m×k) and a 1-D array v (k): a new array of m. Run as
    Python, it is np.dot."""
    return np.dot(a, v)


def _check(public, ndims, x, y):
    """A typing error unless x and y are arrays of ranks `ndims` and one float dtype."""
    if not all(isinstance(t, types.Array) and t.ndim == n for t, n in zip((x, y), ndims)):
        raise TypingError(f"srcxform.runtime.blas.{public.__name__} takes arrays of "
                          f"ranks {ndims}, got {x} and {y}")
    _kind(public.__name__, x, y)


def _compile_as(public, cores, ndims):
    """Calls of `public` as calls of a core with each array retyped by read_only_operand.
    `cores` is (the core for operands in C or Fortran order, the core for any layout):
    each compiles once per dtype."""

    def core_for(x, y):
        _check(public, ndims, x, y)
        core = cores[0] if all(t.layout in "CF" for t in (x, y)) else cores[1]
        return core, (read_only_operand(x), read_only_operand(y))

    call_as_core(public, core_for)


def _compile_as_np_dot(public, ndims):
    """Numba's public API alone: calls of `public` compile as np.dot's, again for each
    layout combination; operands of no unit stride are copied first (as np.dot would,
    with a warning)."""

    @overload(public)
    def typing(a, b):
        _check(public, ndims, a, b)
        if all(t.layout in "CF" for t in (a, b)):
            return lambda a, b: np.dot(a, b)
        return lambda a, b: np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))


if numba_adapter.enabled():
    _compile_as(matmul, (_matmul, _matmul_any), (2, 2))
    _compile_as(matvec, (_matvec, _matvec_any), (2, 1))
else:
    _compile_as_np_dot(matmul, (2, 2))
    _compile_as_np_dot(matvec, (2, 1))
