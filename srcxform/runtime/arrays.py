"""Array helpers for generated code: allocation (`arrays.empty((n0, n1), np.float64)`
where NumPy code would call np.empty), and gathering and scattering rows at indices with
their bounds checked, as NumPy checks them (Numba does not: an index out of range would
read or write past the array).

Numba types and lowers each np.empty call site anew, error paths included; a model's
kernel has a dozen of them, and that was a tenth of its first call's compile time. Here
one small function per rank and dtype is compiled once and kept in Numba's on-disk
cache, and a kernel only calls it. Imported only by generated code.
"""

import sys

import numpy as np
from llvmlite import ir
from numba import literal_unroll
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from srcxform.core.errors import (DtypeArgumentError, IndexOutOfBounds,
                                   ValueArgumentError, ZeroDivisionArgumentError)
from srcxform.numba_adapter import enabled
from srcxform.numba_adapter.jit import call_as_core, helper, read_only_operand
from srcxform.runtime import CHUNK


def empty(shape, dtype):
    """np.empty(shape, dtype): shape a tuple of sizes, dtype a NumPy scalar type."""
    return np.empty(shape, dtype)


@overload(empty, inline="always")
def _empty(shape, dtype):
    # Overloads are typed with literal sizes made plain first, so `(100, n0)` and `(5, n0)`
    # share one compiled allocation; a jitted function called with them directly would be
    # compiled anew for each literal size (a tenth of a second each, new in every program).
    def impl(shape, dtype):
        return _allocate(shape, dtype)

    return impl


def zeros(shape, dtype):
    """np.zeros(shape, dtype), allocated as `empty`'s arrays are."""
    return np.zeros(shape, dtype)


@overload(zeros, inline="always")
def _zeros(shape, dtype):
    return lambda shape, dtype: _allocate_zeros(shape, dtype)


@helper
def _allocate(shape, dtype):
    out = np.empty(shape, dtype)
    if out.nbytes >= _HUGE_PAGES_FROM:
        _advise_huge_pages(out)
    return out


@helper
def _allocate_zeros(shape, dtype):
    out = _allocate(shape, dtype)
    out.fill(0)
    return out


def iota(count, dtype):
    """0, 1, ..., count - 1 in dtype: count a size, dtype a NumPy scalar type."""
    return np.arange(count).astype(dtype)


@overload(iota, inline="always")
def _iota(count, dtype):
    return lambda count, dtype: _counted(count, dtype)


@helper
def _counted(count, dtype):
    out = _allocate((count,), dtype)
    for i in range(count):
        out[i] = i
    return out


# Arrays of 4 MiB or more ask Linux for transparent huge pages, as NumPy's own allocator
# does, so that their first touch faults 2 MiB at a time, not 4 KiB. Numba allocates with
# malloc, which maps arrays above 32 MiB afresh at every call (smaller ones stay in its
# heap: jit/heap.py): filling an 80 MB temporary (GradBench kmeans' distances) took four
# times as long as filling NumPy's.
_HUGE_PAGES_FROM = 1 << 22
_PAGE = 4096
_MADV_HUGEPAGE = 14  # Linux's value


@intrinsic
def _advise_huge_pages(typingctx, array):
    """madvise(MADV_HUGEPAGE) over the whole pages of the array's data on Linux, its
    result ignored (advice an older kernel refuses); nothing elsewhere."""

    def codegen(context, builder, signature, args):
        if sys.platform.startswith("linux"):
            data = context.make_array(signature.args[0])(context, builder, args[0])
            word = context.get_value_type(types.intp)
            nbytes = builder.mul(data.nitems, data.itemsize)
            start = builder.ptrtoint(data.data, word)
            skip = builder.and_(builder.neg(start), ir.Constant(word, _PAGE - 1))
            byte_p = ir.IntType(8).as_pointer()
            madvise = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.IntType(32), [byte_p, word, ir.IntType(32)]),
                "madvise")
            builder.call(madvise, [builder.inttoptr(builder.add(start, skip), byte_p),
                                   builder.sub(nbytes, skip), ir.Constant(ir.IntType(32),
                                                                          _MADV_HUGEPAGE)])
        return context.get_dummy_value()

    return types.none(array), codegen


def concatenate(xs, axis):
    """np.concatenate(xs, axis) for a tuple of arrays."""
    return np.concatenate(xs, axis)


def _one_layout(xs, axis):
    """(_join, xs's arrays retyped to layout 'A' and writable: _join only reads them),
    or None where their dtypes or ranks differ."""
    if not isinstance(xs, types.BaseTuple) or not all(isinstance(x, types.Array) for x in xs) \
            or len({(x.dtype, x.ndim) for x in xs}) != 1:
        return None
    return _join, (types.UniTuple(read_only_operand(xs[0]), len(xs)), axis)


# Numba's np.concatenate compiles in time that grows faster than the number of arrays
# (22 took 23 s, GradBench ht's stack of bone transforms), and anew for each tuple of
# layouts; arrays of one dtype and rank are joined by one loop (_join) instead, compiled
# once per dtype, rank and count and cached (without Numba's internals, once per tuple of
# one layout). Others go to np.concatenate.
if enabled():
    call_as_core(concatenate, _one_layout)


@overload(concatenate)
def _concatenate(xs, axis):
    if _one_layout(xs, axis) is None or not isinstance(xs, types.UniTuple):
        return lambda xs, axis: np.concatenate(xs, axis)
    if not enabled():
        return lambda xs, axis: _join(xs, axis)


@helper
def _join(xs, axis):
    shape, total, outer, inner = xs[0].shape, 0, 1, 1
    axis = axis + len(shape) if axis < 0 else axis
    for x in xs:
        total += x.shape[axis]
    for d in range(len(shape)):
        if d < axis:
            outer *= shape[d]
        elif d > axis:
            inner *= shape[d]
    out = empty(_replaced(shape, axis, total), xs[0].dtype)
    rows, start = out.reshape((outer, total, inner)), 0
    for x in xs:
        n = x.shape[axis]
        part = np.ascontiguousarray(x).reshape((outer, n, inner))
        for i in range(outer):
            for j in range(n):
                for k in range(inner):
                    rows[i, start + j, k] = part[i, j, k]
        start += n
    return out


@intrinsic
def _replaced(typingctx, sizes, at, size):
    """The tuple of sizes with sizes[at] replaced by size (at known only at run time)."""
    if not (isinstance(sizes, types.UniTuple) and isinstance(at, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        sizes, at, size = args
        slot = cgutils.alloca_once_value(builder, sizes)
        item = builder.gep(slot, [at.type(0), at], inbounds=True)
        dtype = signature.args[0].dtype
        builder.store(context.cast(builder, size, signature.args[2], dtype), item)
        return builder.load(slot)

    return sizes(sizes, at, size), codegen


def transpose(x, perm):
    """np.transpose(x, perm): a view of x, its dims in the order of perm (distinct axes:
    the trace checked them). Compiled, the view is made in place: Numba's np.transpose
    with axes compiles seconds of checks and messages into each kernel."""
    return np.transpose(x, perm)


@intrinsic
def _permuted(typingctx, x, perm):
    if not (isinstance(x, types.Array) and isinstance(perm, types.BaseTuple)
            and len(perm) == x.ndim and all(isinstance(t, types.Integer) for t in perm)):
        return None
    view = x.copy(layout="A")

    def codegen(context, builder, signature, args):
        source = context.make_array(x)(context, builder, args[0])
        out = context.make_array(view)(context, builder)
        slots = [cgutils.alloca_once_value(builder, t) for t in (source.shape, source.strides)]
        zero = ir.Constant(ir.IntType(32), 0)
        picked = [[], []]
        for i, ty in enumerate(perm):
            axis = context.cast(builder, builder.extract_value(args[1], i), ty, types.intp)
            for slot, values in zip(slots, picked):
                values.append(builder.load(builder.gep(slot, [zero, axis], inbounds=True)))
        for field, values in zip(("shape", "strides"), picked):
            setattr(out, field, cgutils.pack_array(builder, values))
        for field in ("data", "meminfo", "parent", "itemsize", "nitems"):
            setattr(out, field, getattr(source, field))
        # A view: the caller owns a new reference to x's memory.
        context.nrt.incref(builder, view, out._getvalue())
        return out._getvalue()

    return view(x, perm), codegen


if enabled():
    overload(transpose, inline="always")(lambda x, perm: (lambda x, perm: x) if x.ndim == 0
                                         else lambda x, perm: _permuted(x, perm))
else:
    overload(transpose)(lambda x, perm: lambda x, perm: np.transpose(x, perm))


def put(stack, row, value):
    """stack[row] = value, where value has stack[row]'s shape (the trace checked it)."""
    stack[row] = value


def put_lane(stack, row, value):
    """put in a prange's lane: without put's test of the shapes, as a raise in a prange
    makes Numba run it serially (the trace made the shapes equal)."""
    stack[row] = value


def _row_of(core):
    """core_for for call_as_core: a row of an array value, retyped to layout 'A'; None for
    a scalar (the overloads below) or a mismatch of dtypes (Numba's setitem casts)."""

    def core_for(stack, row, value):
        if not (isinstance(stack, types.Array) and isinstance(value, types.Array)
                and isinstance(row, types.Integer) and value.ndim > 0
                and (stack.dtype, stack.ndim) == (value.dtype, value.ndim + 1)):
            return None
        return core, (stack.copy(layout="A"), types.intp, read_only_operand(value))

    return core_for


@helper
def _put_row(stack, row, value):
    _copy_checked(stack[row], value)


@helper
def _put_lane_row(stack, row, value):
    _copy(stack[row], value)


# Rows of arrays are copied by one cached core per dtype and rank (element by element:
# Numba's own assignment of an array to a slice compiles a formatted error message,
# seconds in every new process). Without Numba's internals, by the overloads below.
if enabled():
    call_as_core(put, _row_of(_put_row))
    call_as_core(put_lane, _row_of(_put_lane_row))


@overload(put, inline="always")
def _put(stack, row, value):
    if enabled() and _row_of(_put_row)(stack, row, value):
        return None
    if not isinstance(value, types.Array) or value.ndim == 0:
        return _put_lane(stack, row, value)
    return lambda stack, row, value: _put_row(stack, row, value)


@overload(put_lane, inline="always")
def _put_lane(stack, row, value):
    if enabled() and _row_of(_put_lane_row)(stack, row, value):
        return None
    if not isinstance(value, types.Array):
        def assign(stack, row, value):
            stack[row] = value

        return assign
    if value.ndim == 0:
        def assign_element(stack, row, value):
            stack[row] = value[()]

        return assign_element

    return lambda stack, row, value: _put_lane_row(stack, row, value)


def copy_into(view, value):
    """view[...] = value, for a value of view's shape that does not overlap it.
    Compiled, element by element: Numba's own assignment of an array to a slice compiles
    a formatted error message, seconds in every new process."""
    view[...] = value


def _one_copy(view, value):
    """(_copy_checked, both arrays retyped to layout 'A'), or None where they differ in
    dtype or rank."""
    if not all(isinstance(x, types.Array) for x in (view, value)) \
            or (view.dtype, view.ndim) != (value.dtype, value.ndim):
        return None
    return _copy_checked, (view.copy(layout="A"), read_only_operand(value))


@helper
def _copy(view, value):
    for index in np.ndindex(value.shape):
        view[index] = value[index]


@helper
def _copy_checked(view, value):
    if view.shape != value.shape:
        raise ValueError("srcxform.runtime.arrays: a row or view and its value differ in shape")
    _copy(view, value)


if enabled():
    call_as_core(copy_into, _one_copy)
else:
    overload(copy_into)(lambda view, value: lambda view, value: _copy_checked(view, value))


@helper
def grown(stack):
    """A full stack of a compiled while_loop's values, with twice the rows: the old ones
    copied, the rest uninitialized."""
    rows = stack.shape[0]
    bigger = np.empty((2 * rows,) + stack.shape[1:], stack.dtype)
    bigger[:rows] = stack
    return bigger


# ----- debug_nans's checks of a whole array: one pass, no temporary array, no branch -----
# (A loop that returns at the first hit is not vectorized: five times slower on a clean
# array, the case that matters.)


@helper
def any_nan(a):
    """Whether the array holds a NaN."""
    found = False
    for v in a.flat:
        found |= np.isnan(v)
    return found


@helper
def any_inf(a):
    """Whether the array holds an inf."""
    found = False
    for v in a.flat:
        found |= np.isinf(v)
    return found


@helper
def all_finite(a):
    """Whether every element of the array is finite."""
    finite = True
    for v in a.flat:
        finite &= np.isfinite(v)
    return finite


@helper
def any_finite(a):
    """Whether the array holds a finite element."""
    found = False
    for v in a.flat:
        found |= np.isfinite(v)
    return found


@helper
def reduced_verdicts(result, held_nan, terms_finite, copied):
    """debug_nans's verdicts on a reduction that keeps axes, from flags per result element
    (whether its terms held a NaN, were all finite, held a copy of it): whether it made a
    NaN, made an inf, lost one (ad/nan_checks.py's rule)."""
    made_nan = made_inf = lost = False
    for k in range(result.size):
        r = result.flat[k]
        made_nan |= np.isnan(r) and not held_nan.flat[k]
        made_inf |= np.isinf(r) and terms_finite.flat[k]
        lost |= np.isfinite(r) and not terms_finite.flat[k] and not copied.flat[k]
    return made_nan, made_inf, lost


@helper
def check_indices(indices, size, op):
    """Raises IndexError (as eager raises it: also TensorFlow's InvalidArgumentError) if an
    index is outside [-size, size)."""
    check_range(indices, size, op, "from_end")


@helper
def gather(x, indices):
    """x[indices] for a vector of indices (negative ones count from the end)."""
    check_indices(indices, x.shape[0], "gather")
    return x[indices]


@helper
def scatter_add(g, indices, size):
    """Zeros of `size` rows with g's rows added at indices (repeats add up)."""
    check_indices(indices, size, "scatter_add")
    out = zeros((size,) + g.shape[1:], g.dtype)
    for k in range(indices.shape[0]):
        out[indices[k]] += g[k]
    return out


@helper
def add_row(x, i, g, in_place):
    """x with g added to its row i; in_place: in x's own buffer (add_rows' one row)."""
    size = x.shape[0]
    if i >= size or i < -size:
        raise IndexOutOfBounds("scatter_add", i, size)
    out = x if in_place else x.copy()
    out[i] += g
    return out


@helper
def add_rows(x, indices, g, in_place):
    """x with g's rows added at indices (repeats add up); in_place: in x's own buffer
    (ops/shape.py's add_rows)."""
    check_indices(indices, x.shape[0], "scatter_add")
    out = x if in_place else x.copy()
    for k in range(indices.shape[0]):
        out[indices[k]] += g[k]
    return out


@helper
def add_at(x, indices, g, in_place):
    """x with g added at x[indices], a tuple of integers (each checked against its axis);
    in_place: in x's own buffer (ops/shape.py's add_at of a subarray)."""
    axis, bad, index = 0, -1, 0
    for i in literal_unroll(indices):  # a raise in here does not type: after the loop
        if bad < 0 and (i >= x.shape[axis] or i < -x.shape[axis]):
            bad, index = axis, np.int64(i)
        axis += 1  # noqa: SIM113 (Numba enumerates no literal_unroll)
    if bad >= 0:
        raise IndexOutOfBounds("scatter_add", index, x.shape[bad])
    out = x if in_place else x.copy()
    out[indices] += g
    return out


@helper
def along_axis(x, axis):
    """x seen as (before, along, after): the sizes before `axis` and after it joined, so
    one loop nest serves every rank."""
    shape = x.shape
    before, after = 1, 1
    for i in range(x.ndim):
        if i < axis:
            before *= shape[i]
        elif i > axis:
            after *= shape[i]
    return np.ascontiguousarray(x).reshape((before, shape[axis], after))


@helper
def cumulative(x, axis, op, exclusive, reverse):
    """The running "sum", "product" or "logsumexp" (op) of x along `axis`, TensorFlow's
    cumsum, cumprod and cumulative_logsumexp: `exclusive` leaves each element out of its
    own total, `reverse` runs from the end. Works on x seen as (before, along, after)
    (along_axis)."""
    flat = along_axis(x, axis)
    before, n, after = flat.shape
    out = np.empty_like(flat)
    product, logs = op == "product", op == "logsumexp"
    identity = np.full(1, 1 if product else -np.inf if logs else 0, flat.dtype)[0]
    # -0.0 adds nothing, not even a sign: NumPy's running sum keeps a first -0.0.
    start = identity if product or logs else np.full(1, -0.0, flat.dtype)[0]
    # The running total in an array of x's dtype: a scalar took the type of every branch's
    # result, logaddexp's float64, so an int64 sum lost its low bits past 2**53 and
    # saturated where it wraps (helper 135).
    total = np.empty(1, flat.dtype)
    for a in range(before):
        for c in range(after):
            total[0] = start
            for k in range(n):
                j = n - 1 - k if reverse else k
                if exclusive:
                    out[a, j, c] = total[0] if k else identity
                if product:
                    total[0] = total[0] * flat[a, j, c]
                elif logs:
                    total[0] = np.logaddexp(total[0], flat[a, j, c])
                else:
                    total[0] = total[0] + flat[a, j, c]
                if not exclusive:
                    out[a, j, c] = total[0]
    return out.reshape(x.shape)


@helper
def check_range(indices, size, op, negatives):
    """The indices as int64, once each is below size and, by `negatives`, not negative
    ("raise"), at least -size ("from_end") or anything ("pass"): else IndexError naming op,
    as eager's check_range (ops/shape.py) raises it."""
    low = -size if negatives == "from_end" else 0
    for k in range(indices.shape[0]):
        i = indices[k]
        if i >= size or (i < low and negatives != "pass"):
            raise IndexOutOfBounds(op, i, size)
    return np.asarray(indices, dtype=np.int64)  # the same array where it is int64


@helper
def scatter_set(x, indices, updates):
    """x with its rows at indices replaced by updates' rows, in order (the last of
    repeated indices stays)."""
    check_indices(indices, x.shape[0], "tensor_scatter_nd_update")
    out = x.copy()
    for k in range(indices.shape[0]):
        out[indices[k]] = updates[k]
    return out


@helper
def arg_extreme(x, axis, largest, out_dtype):
    """The index of the largest (or smallest) value along `axis`, flattened: the first of
    ties, NaNs skipped, 0 where all are NaN (TensorFlow's argmax and argmin). x seen as
    (before, along, after) (along_axis)."""
    flat = along_axis(x, axis)
    before, n, after = flat.shape
    if n == 0 and before * after:  # read flat[a, 0, c] past the end, giving 0
        raise ValueArgumentError(("argmax" if largest else "argmin") + ": the axis is empty")
    out = np.zeros((before, after), out_dtype)
    for a in range(before):
        for c in range(after):
            best_k = 0
            best = flat[a, 0, c]
            for k in range(1, n):
                v = flat[a, k, c]
                better = v > best if largest else v < best
                if not np.isnan(v) and (np.isnan(best) or better):
                    best_k = k
                    best = v
            out[a, c] = best_k
    return out.reshape(before * after)


@helper
def argsort(x, descending):
    """The int32 permutation that sorts x's last axis, ties in their order (a stable
    merge sort; descending sorts the reversed row and reverses the result)."""
    n = x.shape[-1]
    out = np.empty(x.shape, np.int32)
    if x.size == 0:
        return out
    flat = np.ascontiguousarray(x).reshape((-1, n))
    order = out.reshape((-1, n))
    for r in range(flat.shape[0]):
        if descending:
            reversed_order = np.argsort(flat[r, ::-1], kind="mergesort")
            for k in range(n):
                order[r, k] = n - 1 - reversed_order[n - 1 - k]
        else:
            order[r] = np.argsort(flat[r], kind="mergesort")
    return out

# Integer x // y and x % y: Numba's error_model="numpy" gives 0 for a divisor of 0, where
# eager raises (TensorFlow's InvalidArgumentError), and 0 for the type's minimum // -1,
# where NumPy wraps to the minimum (as x * -1 does, in the dtypes' common width; -x
# would wrap in x's own). Floats divide inline, unchecked.
@helper
def floordiv(x, y):
    if y == 0:
        raise ZeroDivisionArgumentError("floordiv: integer division by zero")
    if y == -1:
        return x * y
    return x // y


# A Python int (int64 when traced) cast to the narrower integer dtype it meets: eagerly,
# one that does not fit raises (TensorFlow would wrap it).
@helper
def python_int_in(value, low, high, before, after):
    if value < low or value > high:
        raise DtypeArgumentError(before + str(value) + after)
    return value


@helper
def mod(x, y):
    if y == 0:
        raise ZeroDivisionArgumentError("mod: integer division by zero")
    return x % y


# Integer x ** y: Numba gives 0 for a negative y, where NumPy (so eager) raises, and past
# y = 65536 computes in floats (2 ** 65537 gave int64's minimum). By squaring, wrapping as
# NumPy's (a narrower dtype's result is cast back by the caller).
@helper
def power(x, y):
    if y < 0:
        raise ValueArgumentError("pow: integers to negative integer powers are not allowed")
    result, base = x ** 0, x
    while y > 0:
        if y & 1:
            result = result * base
        base = base * base
        y >>= 1
    return result


@helper
def lane_sum(terms, count):
    """The sum of terms[:count] in eight lanes: term j in lane j % 8, the last count % 8
    in lane 0, then the lanes pairwise. Eight independent chains of adds the processor
    overlaps, in a fixed order (codegen/lanes.py)."""
    full = count - count % 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = terms.dtype.type(0)
    for j in range(0, full, 8):
        a0 += terms[j]
        a1 += terms[j + 1]
        a2 += terms[j + 2]
        a3 += terms[j + 3]
        a4 += terms[j + 4]
        a5 += terms[j + 5]
        a6 += terms[j + 6]
        a7 += terms[j + 7]
    for j in range(full, count):
        a0 += terms[j]
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))



def chunk_terms(dtype):
    """An uninitialized array of CHUNK elements of `dtype` (a NumPy scalar type): a sum's
    chunk of terms (codegen/lanes.py). Compiled, it is on the calling kernel's stack (the
    overload below is inlined into the kernel, so the kernel's frame holds it), which
    costs no allocation: np.empty's would be a tenth of a small kernel's time."""
    return np.empty(CHUNK, dtype)


@overload(chunk_terms, inline="always")
def _chunk_terms(dtype):
    def impl(dtype):
        return _stack_chunk(dtype)

    return impl


@intrinsic
def _stack_chunk(typingctx, dtype):
    """CHUNK elements of `dtype` on the stack of the function this is lowered in."""
    if not isinstance(dtype, types.NumberClass):
        return None
    array = types.Array(dtype.instance_type, 1, "C")

    def codegen(context, builder, signature, args):
        element = context.get_data_type(array.dtype)
        slot = cgutils.alloca_once(builder, element, size=CHUNK)
        out = context.make_array(array)(context, builder)
        intp = context.get_value_type(types.intp)
        itemsize = context.get_abi_sizeof(element)
        context.populate_array(out, data=slot, shape=[ir.Constant(intp, CHUNK)],
                               strides=[ir.Constant(intp, itemsize)],
                               itemsize=ir.Constant(intp, itemsize), meminfo=None)
        return out._getvalue()

    return array(dtype), codegen

