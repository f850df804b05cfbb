"""What the generated CUDA driver calls on the host: launch sizes, device allocation and
filling, views, the ops that are one kernel of their own here (matmul, an image's
windows), and random draws.

Imports numba.cuda (the real target, or its simulator under NUMBA_ENABLE_CUDASIM=1):
only generated modules and srcxform/cuda/compiled.py import this module, so
`import srcxform` never loads numba-cuda.
"""

import numpy as np
from numba import cuda

from srcxform.ops.random import philox_p
from srcxform.ops.shape import check_indices, check_range_p, check_window

# Threads per block: a multiple of the warp (32); 256 is the usual first choice, to be
# tuned by measurement on a real GPU (none has been measured).
THREADS = 256
# Blocks at most per launch: a grid-stride loop covers any size with a bounded grid.
MAX_BLOCKS = 4096


def grid(n):
    """(blocks, threads) for a grid-stride loop over n elements: no more threads than
    elements rounded up to a warp (the simulator runs each thread as a Python thread)."""
    threads = min(THREADS, max(32, -(-n // 32) * 32))
    return max(1, min(MAX_BLOCKS, -(-n // threads))), threads


def gridsize(n):
    """The threads a launch over n elements starts (grid's blocks times threads)."""
    blocks, threads = grid(n)
    return blocks * threads


@cuda.jit
def _multiplied(partials, out):
    acc = partials[0]
    for k in range(1, partials.shape[0]):
        acc *= partials[k]
    out[0] = acc


def multiplied(partials, out):
    """out (one element) = the product of the threads' products, in their order, by one
    thread: CUDA has no atomic multiply."""
    _multiplied[1, 1](partials, reshape(out, (1,)))


@cuda.jit
def _fill(flat, value):
    for k in range(cuda.grid(1), flat.shape[0], cuda.gridsize(1)):
        flat[k] = value


def full(shape, value, dtype):
    """A new device array of `shape` filled with `value` on the device (no host copy)."""
    return _filled(cuda.device_array(shape, dtype), value)


def _filled(out, value):
    if out.size:
        _fill[grid(out.size)](out.reshape(out.size), out.dtype.type(value))
    return out


def empty(shape, dtype):
    return cuda.device_array(shape, dtype)


class Buffers:
    """A kernel's intermediate device arrays, kept from one call to the next: each
    allocation site's latest, reused while its shape and dtype stay the same (a new batch
    size replaces it). Never for what a call returns. One per thread (compiled.py): two
    calls at once need their own; calls in turn on one stream run in order."""

    def __init__(self):
        self.kept = {}  # site (the value's name): its device array

    def empty(self, site, shape, dtype):
        shape = tuple(int(d) for d in shape)
        found = self.kept.get(site)
        if found is None or found.shape != shape or found.dtype != np.dtype(dtype):
            found = self.kept[site] = cuda.device_array(shape, dtype)
        return found

    def full(self, site, shape, value, dtype):
        return _filled(self.empty(site, shape, dtype), value)


def to_device(value, dtype):
    """A traced argument on the device: an array with __cuda_array_interface__ as it is (no
    copy), a NumPy array copied to the device once, a number as a 1-element array (the
    kernels read scalars from device memory)."""
    if cuda.cudadrv.devicearray.is_cuda_ndarray(value):  # numba's own, the simulator's too
        return value.reshape((1,)) if value.ndim == 0 else value
    if hasattr(value, "__cuda_array_interface__"):
        return to_device(cuda.as_cuda_array(value), dtype)
    array = np.asarray(value, dtype)
    return cuda.to_device(np.ascontiguousarray(array.reshape(1) if array.ndim == 0 else array))


def host(x):
    """A scalar's value on the host (a loop's bound or test, a branch's predicate): its
    1-element device array read back, which waits for the kernels before it."""
    return to_host(x).reshape(-1)[0]


def to_host(x):
    """x copied to a host array; a view with a negative stride (x[::-1]) through a copy
    of its own first, as numba-cuda's copy to the host refuses one (helper 123; its
    simulator copies it)."""
    return (_contiguous(x) if any(s < 0 for s in x.strides) else x).copy_to_host()


def scalar(value, dtype):
    """A host number as kernels read a scalar: a 1-element device array."""
    return cuda.to_device(np.full(1, value, dtype))


def row(stack, k):
    """Row k of a loop's stack as a view (a scalar's as a 1-element one)."""
    return stack[k:k + 1] if stack.ndim == 1 else stack[k]


def put(stack, k, value):
    """Row k of a loop's stack = value, copied by a kernel."""
    _copy(value, row(stack, k))


def grown(stack):
    """A while_loop's full stack, its rows copied into one with twice as many."""
    out = cuda.device_array((2 * stack.shape[0],) + stack.shape[1:], stack.dtype)
    _copy(stack, out[:stack.shape[0]])
    return out


def on_device(value):
    """Whether an argument already lives on the device: numba's device arrays (the
    simulator's too, which have no __cuda_array_interface__) and other libraries'."""
    return hasattr(value, "__cuda_array_interface__") or \
        cuda.cudadrv.devicearray.is_cuda_ndarray(value)


def transpose(x, perm):
    """x's axes in the order `perm`, as a view: numba-cuda's DeviceNDArray.T copies through
    a kernel it compiles at every call (0.1 s each on an H200: W5's warm gradient took
    334 ms), and it has no transpose of more than 2 axes."""
    if not hasattr(cuda.cudadrv.devicearray, "DeviceNDArray"):  # the simulator: NumPy's view
        return x.transpose(perm)
    return cuda.cudadrv.devicearray.DeviceNDArray(
        tuple(x.shape[k] for k in perm), tuple(x.strides[k] for k in perm), x.dtype,
        stream=x.stream, gpu_data=x.gpu_data)


def reshape(x, shape):
    """x reshaped on the device: a view of a contiguous array, else a contiguous copy
    (made by a kernel) reshaped. A scalar is a 1-element array, as kernels read it."""
    if not x.is_c_contiguous():
        x = _contiguous(x)
    return x.reshape(tuple(int(d) for d in shape) or (1,))


def element(x, index):
    """x[index] for integer indices, as a 1-element view (a scalar, as kernels read it)."""
    return x[_kept_axes(index)].reshape((1,))


def embedded(g, out, index):
    """out (zeros) with g copied into out[index] by a kernel, g reshaped to the view's
    shape (_kept_axes)."""
    view = out[_kept_axes(index)]
    _copy(reshape(g, view.shape), view)
    return out


def concatenate(parts, axis, out):
    """out = the parts joined along `axis`, each copied into its span by a kernel."""
    start = 0
    for part in parts:
        _copy(part, out[(slice(None),) * axis + (slice(start, start + part.shape[axis]),)])
        start += part.shape[axis]
    return out


def _kept_axes(index):
    """index with each integer a slice of one (indexed by an integer, a device array
    copies to the host; kernels need a view) and each None (a new axis) left out."""
    return tuple(slice(i, i + 1 or None) if isinstance(i, (int, np.integer)) else i
                 for i in index if i is not None)


def _copy(x, out):
    """out[...] = x (of out's shape) by the 1-d or 2-d copy kernel; more axes a launch per
    2-d slab (a view of each, as numba's indexing by leading integers makes)."""
    if out.ndim > 2:
        for lead in np.ndindex(*out.shape[:-2]):
            _copy(x[lead], out[lead])
    elif out.size:
        (_copy_1d if out.ndim == 1 else _copy_2d)[grid(out.size)](x, out)


@cuda.jit
def _copy_1d(x, out):
    for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[k] = x[k]


@cuda.jit
def _copy_2d(x, out):
    for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[k // out.shape[1], k % out.shape[1]] = x[k // out.shape[1], k % out.shape[1]]


def _contiguous(x):
    out = cuda.device_array(x.shape, x.dtype)
    _copy(x, out)
    return out


@cuda.jit
def _matmul(x, y, out):
    """A thread per output element, each a dot product of a row and a column: the simple
    kernel, not cuBLAS (to be chosen by measurement on a real GPU)."""
    n, m = out.shape
    for k in range(cuda.grid(1), n * m, cuda.gridsize(1)):
        i, j = k // m, k % m
        acc = x[i, 0] * y[0, j]
        for p in range(1, x.shape[1]):
            acc += x[i, p] * y[p, j]
        out[i, j] = acc


def matmul(x, y, out):
    """out = x @ y for 2-d device arrays."""
    if x.shape[1] == 0:  # a sum of no terms
        return _filled(out, 0)
    if out.size:
        _matmul[grid(out.size)](x, y, out)
    return out


@cuda.jit
def _matvec(x, v, out):
    """A thread per output element: a row of x times v."""
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        acc = x[i, 0] * v[0]
        for p in range(1, x.shape[1]):
            acc += x[i, p] * v[p]
        out[i] = acc


def matvec(x, v, out):
    """out = x @ v for a 2-d and a 1-d device array."""
    if x.shape[1] == 0:
        return _filled(out, 0)
    if out.size:
        _matvec[grid(out.size)](x, v, out)
    return out


@cuda.jit
def _patches(x, sh, sw, dh, dw, top, left, fill, out):
    """A thread per element of out (n, oh, ow, kh, kw, c): the element of image x under
    it, or `fill` where its window reaches into the padding."""
    _, oh, ow, kh, kw, c = out.shape
    for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        ch, rest = k % c, k // c
        q, rest = rest % kw, rest // kw
        p, rest = rest % kh, rest // kh
        j, rest = rest % ow, rest // ow
        i, b = rest % oh, rest // oh
        row, col = i * sh + p * dh - top, j * sw + q * dw - left
        inside = 0 <= row < x.shape[1] and 0 <= col < x.shape[2]
        out[b, i, j, p, q, ch] = x[b, row, col, ch] if inside else fill


def patches(x, ksize, strides, dilations, pads, fill, out):
    """out = each window of the NHWC images x (runtime/windows.py's patches)."""
    if out.size:
        _patches[grid(out.size)](x, *strides, *dilations, pads[0][0], pads[1][0], fill, out)
    return out


@cuda.jit
def _fold(g, sh, sw, dh, dw, top, left, out):
    """A thread per element of the image out (n, h, w, c), adding the patch elements of
    g (n, oh, ow, kh, kw, c) that came from it: no atomics, and in the CPU's order (by
    window, then tap: taps from the last, since a later tap belongs to an earlier window)."""
    _, h, w, c = out.shape
    oh, ow, kh, kw = g.shape[1], g.shape[2], g.shape[3], g.shape[4]
    for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        ch, rest = k % c, k // c
        col, rest = rest % w, rest // w
        row, b = rest % h, rest // h
        out[b, row, col, ch] = 0
        for p in range(kh - 1, -1, -1):
            i = row + top - p * dh
            if i >= 0 and i % sh == 0 and i // sh < oh:
                for q in range(kw - 1, -1, -1):
                    j = col + left - q * dw
                    if j >= 0 and j % sw == 0 and j // sw < ow:
                        out[b, row, col, ch] += g[b, i // sh, j // sw, p, q, ch]


def fold(g, size, strides, dilations, pads, out):
    """out = the patches g added back into images of `size` (runtime/windows.py's fold)."""
    if out.size:
        _fold[grid(out.size)](g, *strides, *dilations, pads[0][0], pads[1][0], out)
    return out


@cuda.jit
def _gather(x, rows, out):
    """A thread per element of out (m, r): row rows[i] of x (n, r), from its end where
    negative."""
    r = out.shape[1]
    for k in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        i = rows[k // r]
        out[k // r, k % r] = x[i + x.shape[0] if i < 0 else i, k % r]


def gather(x, indices, out):
    """out = x's rows at indices; the indices are read back and checked first, as the
    CPU kernel checks them (a kernel cannot raise): a wait for the device."""
    check_indices(indices.copy_to_host(), x.shape[0], "gather")
    if out.size:
        rows = _one_axis(indices)
        _gather[grid(out.size)](_rows(x), rows, _rows(_by_index(out, rows, x)))
    return out


@cuda.jit
def _scatter_add(g, rows, out):
    """A thread per element of g (m, r), added atomically into row rows[i] of out: rows
    may repeat."""
    r = g.shape[1]
    for k in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        i = rows[k // r]
        cuda.atomic.add(out, (i + out.shape[0] if i < 0 else i, k % r), g[k // r, k % r])


def scatter_add(g, indices, size, out):
    """out = zeros of `size` rows with g's rows added at indices (gather's gradient),
    the indices checked as gather's are."""
    check_indices(indices.copy_to_host(), size, "scatter_add")
    _filled(out, 0)
    if g.size:
        rows = _one_axis(indices)
        _scatter_add[grid(g.size)](_rows(_by_index(g, rows, out)), rows, _rows(out))
    return out


def _one_axis(indices):
    """The indices as a vector: one integer (x[i]) is a vector of one."""
    return reshape(indices, (indices.size,))


def _by_index(rows, indices, table):
    """rows (a gather's result, a scatter's updates) with an axis per index, as one index's
    row has none: a row of `table` for each."""
    return reshape(rows, (indices.size,) + tuple(table.shape[1:]))


def window(x, begin, size, op, out):
    """out = x[begin:begin + size] (ops/shape.py's window), begin read back and checked
    first, as the CPU kernel checks it."""
    b = int(host(begin))
    check_window(b, size, x.shape[0], op)
    if out.size:
        out.copy_to_device(x[b:b + size])
    return out


def check_range(indices, size, op, negatives):
    """indices as int64, read back and checked first as the CPU kernel checks them."""
    host = indices.copy_to_host()
    checked = check_range_p.impl(host, size=int(size), op=op, negatives=negatives)
    return indices if checked is host else cuda.to_device(checked)


def _rows(x):
    """x as a matrix of its rows (n, r), a view where x is contiguous."""
    return reshape(x, (x.shape[0], int(np.prod(x.shape[1:]))))


def counted(count, dtype):
    """0, 1, ..., count - 1 (iota): made on the host and copied, as a draw is."""
    return cuda.to_device(np.arange(count, dtype=dtype))


def drawn(counter, key, count, dist, dtype):
    """A random draw, made on the host by the CPU kernel's Philox (so with its bits) and
    copied to the device: the counter and key (8 bytes each) come back first."""
    counter, key = (int(host(a)) for a in (counter, key))
    values = philox_p.impl(counter, key, count=int(count), dist=dist, dtype=np.dtype(dtype))
    return cuda.to_device(np.asarray(values).astype(dtype))
