"""Convolutions and pooling over NHWC images: conv2d, conv1d, and max and average pooling
over 1, 2 or 3 spatial axes (max_pool, max_pool1d/2d/3d, and avg_pool's).

Two primitives do the spatial work: `patches` copies out each window of an image (im2col)
and `fold` is its transpose (col2im: patches added back where they came from). Each is
the other's VJP, so derivatives of any order are made of them. A convolution is the
patches times the filters seen as a matrix, one BLAS product forward and one for each
adjoint; a pooling is a reduction over each window. Compiled code calls
srcxform.runtime.windows for the two primitives.

A window's geometry on one spatial axis is its size k, stride s, dilation d (k taps,
d apart) and the zeros padded before and after the axis; traced sizes keep the padding
and the output size symbolic, and the choices made from a size (whether SAME pads at
all, whether a window fits) are guards.
"""

import operator

import numpy as np

from srcxform.core.aval import Aval
from srcxform.core.dtypes import promote
from srcxform.core.errors import shape_error
from srcxform.ops.creation import ones_like
from srcxform.ops.elementwise import cast
from srcxform.ops.linalg import matmul
from srcxform.ops.reduce import reduce_max, reduce_mean, reduce_sum
from srcxform.ops.shape import expand_dims, getitem, reshape, squeeze
from srcxform.core.primitive import primitive
from srcxform.core.tensor import as_value

# ----- the window primitives -----


def _out_size(size, k, stride, dilation, pad):
    """The number of windows along an axis of `size` padded by pad = (before, after).
    One division and no intermediate of 0 or 1: a traced size that is 0 or 1 becomes a
    constant under a guard, which would tie the kernel to this call's sizes."""
    return (size + pad[0] + pad[1] - (k - 1) * dilation - 1 + stride) // stride


def _patches_shape(x, *, ksize, strides, dilations, pads, fill):
    if x.ndim != 4 or x.dtype.kind != "f":
        raise TypeError(f"expects float NHWC images (rank 4), got {x.short()}")
    n, h, w, c = x.shape
    return Aval((n, _out_size(h, ksize[0], strides[0], dilations[0], pads[0]),
                 _out_size(w, ksize[1], strides[1], dilations[1], pads[1])) + tuple(ksize)
                + (c,), x.dtype)


def _fold_shape(p, *, size, strides, dilations, pads):
    if p.ndim != 6:
        raise ValueError(f"expects patches (n, oh, ow, kh, kw, c), got {p.short()}")
    n, oh, ow, kh, kw, c = p.shape
    if (oh, ow) != (_out_size(size[0], kh, strides[0], dilations[0], pads[0]),
                    _out_size(size[1], kw, strides[1], dilations[1], pads[1])):
        raise ValueError(f"{p.short()} are not the windows of an image of {tuple(size)}")
    return Aval((n,) + tuple(size) + (c,), p.dtype)


def _taps(k, stride, dilation, out):
    """The slices of the padded image that tap 0, 1, … k-1 of every window reads."""
    return [slice(t * dilation, t * dilation + (out - 1) * stride + 1, stride) for t in range(k)]


def _patches_impl(x, ksize, strides, dilations, pads, fill):
    padded = np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),), constant_values=fill)
    n, h, w, c = x.shape
    oh, ow = (_out_size(h, ksize[0], strides[0], dilations[0], pads[0]),
              _out_size(w, ksize[1], strides[1], dilations[1], pads[1]))
    out = np.empty((n, oh, ow) + tuple(ksize) + (c,), x.dtype)
    for p, rows in enumerate(_taps(ksize[0], strides[0], dilations[0], oh)):
        for q, cols in enumerate(_taps(ksize[1], strides[1], dilations[1], ow)):
            out[:, :, :, p, q] = padded[:, rows, cols]
    return out


def _fold_impl(p, size, strides, dilations, pads):
    n, oh, ow, kh, kw, c = p.shape
    (top, bottom), (left, right) = pads
    out = np.zeros((n, size[0] + top + bottom, size[1] + left + right, c), p.dtype)
    for i, rows in enumerate(_taps(kh, strides[0], dilations[0], oh)):
        for j, cols in enumerate(_taps(kw, strides[1], dilations[1], ow)):
            out[:, rows, cols] += p[:, :, :, i, j]
    return out[:, top:top + size[0], left:left + size[1]]


# Each window of x (n, h, w, c) as (n, oh, ow, kh, kw, c), `fill` where it reaches into
# the padding; its transpose adds the windows back into an image of the input's size.
patches_p = primitive("patches", "opaque", _patches_impl, _patches_shape,
                      "windows.patches(x, ksize, strides, dilations, pads, fill)",
                      vjp=lambda g, out, x, *, ksize, strides, dilations, pads, fill: (
                          fold_p.bind(g, size=tuple(x.shape[1:3]), strides=strides,
                                      dilations=dilations, pads=pads),))
fold_p = primitive("fold", "opaque", _fold_impl, _fold_shape,
                   "windows.fold(p, size, strides, dilations, pads)", sums=True,
                   vjp=lambda g, out, p, *, size, strides, dilations, pads: (
                       patches_p.bind(g, ksize=tuple(p.shape[3:5]), strides=strides,
                                      dilations=dilations, pads=pads, fill=0.0),))


# ----- arguments -----


def _spatial(value, what, op, n, default=None):
    """A stride, dilation or window size argument of an op over n spatial axes, one int
    an axis: an int, or a list of 1, n or n + 2 ints (with the batch and channels, whose
    entries must be 1), as TensorFlow."""
    if value is None:
        value = default
    items = [value] if np.ndim(value) == 0 else list(value)
    try:
        items = [operator.index(v) for v in items]
    except TypeError:
        raise TypeError(f"{op}: {what} must be ints, got {value!r}") from None
    if len(items) == n + 2 and items[0] == items[-1] == 1:
        items = items[1:-1]
    if len(items) not in (1, n) or min(items) < 1:
        layout = _LAYOUTS[n]
        raise ValueError(f"{op}: {what} must be an int or {', '.join(sorted({'1', str(n)}))} "
                         f"or {n + 2} positive ints ({layout}, 1 for the batch and "
                         f"channels), got {value!r}")
    return tuple(items * n if len(items) == 1 else items)


_LAYOUTS = {1: "NWC", 2: "NHWC", 3: "NDHWC"}
_NOUNS = {1: "sequences", 2: "images", 3: "volumes"}


def _pads(padding, sizes, ksize, strides, dilations, op, explicit=False):
    """The (before, after) padding of each spatial axis: none for VALID; for SAME, enough
    that there are ceil(size / stride) windows, the odd one after (TensorFlow's rule);
    explicit [[0, 0], [top, bottom], [left, right], [0, 0]] where the op takes it."""
    if isinstance(padding, str) and padding.upper() in ("SAME", "VALID"):
        if padding.upper() == "VALID":
            return ((0, 0), (0, 0))
        pads = []
        for size, k, s, d in zip(sizes, ksize, strides, dilations):
            # The span of ceil(size / s) windows less the size, summed in an order with no
            # intermediate of 0 or 1 (see _out_size); at least 0, a guard for a traced size.
            total = max(0, (size + s - 1) // s * s + ((k - 1) * d + 1 - s) - size)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if explicit and np.shape(padding) == (4, 2):
        pads = [tuple(operator.index(v) for v in pair) for pair in padding]
        if pads[0] == pads[3] == (0, 0) and min(min(pads[1]), min(pads[2])) >= 0:
            return (pads[1], pads[2])
    raise ValueError(f"{op}: padding must be 'SAME' or 'VALID'"
                     + (" or [[0, 0], [top, bottom], [left, right], [0, 0]]" if explicit else "")
                     + f", got {padding!r}")


def _windows(x, ksize, strides, dilations, padding, fill, op, explicit=False):
    """The patches of image x, after checking that each axis has at least one window."""
    if x.ndim != 4:
        raise shape_error(f"{op}: input must be NHWC images (rank 4), got {x.aval.short()}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: input must be float, got {x.aval.short()}")
    sizes = tuple(x.shape[1:3])
    pads = _pads(padding, sizes, ksize, strides, dilations, op, explicit)
    for size, k, d, pad in zip(sizes, ksize, dilations, pads):
        if size + pad[0] + pad[1] < (k - 1) * d + 1:
            raise shape_error(f"{op}: a window spans {(k - 1) * d + 1} elements, more than "
                              f"the padded input's {size + pad[0] + pad[1]!r}, for "
                              f"{x.aval.short()} and {padding!r} padding")
    return patches_p.bind(x, ksize=ksize, strides=strides, dilations=dilations, pads=pads,
                          fill=fill)


def _data_format(data_format, expected, op):
    if data_format not in (None, expected):
        raise ValueError(f"{op}: only data_format={expected!r} is supported, got "
                         f"{data_format!r}; transpose the input first")


# ----- convolutions -----


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """The 2-D cross-correlation of NHWC images with HWIO filters (tf.nn.conv2d):
    out[b, i, j, o] = sum over p, q, c of x[b, i*sh + p*dh, j*sw + q*dw, c] * f[p, q, c, o]
    on the padded input. `padding` is 'SAME' (ceil(size / stride) outputs), 'VALID' or
    explicit [[0, 0], [top, bottom], [left, right], [0, 0]]. Operands of two float dtypes
    promote as NumPy's (TensorFlow raises)."""
    op = "conv2d"
    _data_format(data_format, "NHWC", op)
    x, f = as_value(input, op), as_value(filters, op)
    if f.ndim != 4:
        raise shape_error(f"{op}: filters must be HWIO (rank 4), got {f.aval.short()}")
    if x.ndim == 4 and x.shape[3] != f.shape[2]:
        raise shape_error(f"{op}: the input has {x.shape[3]!r} channels but the filters "
                          f"take {f.shape[2]!r} (input {x.aval.short()}, filters "
                          f"{f.aval.short()})")
    if f.dtype.kind != "f":
        raise TypeError(f"{op}: filters must be float, got {f.aval.short()}")
    if x.dtype != f.dtype and x.dtype.kind == "f":
        dtype = promote([x.aval, f.aval])[0]
        x, f = cast(x, dtype), cast(f, dtype)
    kh, kw, c, o = f.shape
    p = _windows(x, (kh, kw), _spatial(strides, "strides", op, 2),
                 _spatial(dilations, "dilations", op, 2, 1), padding, 0.0, op, explicit=True)
    n, oh, ow = p.shape[:3]
    out = matmul(reshape(p, (n * oh * ow, kh * kw * c)), reshape(f, (kh * kw * c, o)))
    return reshape(out, (n, oh, ow, o))


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):
    """The 1-D cross-correlation of NWC sequences with WIO filters (tf.nn.conv1d): conv2d
    over images one pixel high, as TensorFlow computes it."""
    op = "conv1d"
    _data_format(data_format, "NWC", op)
    x, f = as_value(input, op), as_value(filters, op)
    if x.ndim != 3 or f.ndim != 3:
        raise shape_error(f"{op}: input must be NWC (rank 3) and filters WIO (rank 3), got "
                          f"{x.aval.short()} and {f.aval.short()}")
    stride, dilation = _spatial(stride, "stride", op, 1), _spatial(dilations, "dilations",
                                                                   op, 1, 1)
    out = conv2d(reshape(x, (x.shape[0], 1) + tuple(x.shape[1:])),
                 reshape(f, (1,) + tuple(f.shape)), (1,) + stride, padding,
                 dilations=(1,) + dilation)
    return squeeze(out, 1)


# ----- pooling -----
#
# A pooling over one or three spatial axes is made of 2-D ones: a 1-D one pools images
# one pixel high; a 3-D one pools each depth slice's planes, then across the slices, as
# max and the mean of a box's elements (SAME's padding left out) are separable.


def _max_pool(x, ksize, strides, padding, op):
    p = _windows(x, ksize, strides, (1, 1), padding, -np.inf, op)
    return reduce_max(p, axis=(3, 4))


def _avg_pool(x, ksize, strides, padding, op):
    if isinstance(padding, str) and padding.upper() == "VALID":
        # A window longer than an axis fits nowhere on it: no windows there, an empty
        # result as TensorFlow's avg_pool gives (its max_pool aborts; srcxform's raises).
        fits = [size >= k for size, k in zip(x.shape[1:3], ksize)]
        if not all(fits):
            out = [(size - k) // s + 1 if f else 0
                   for size, k, s, f in zip(x.shape[1:3], ksize, strides, fits)]
            none = getitem(x, (slice(None), slice(0, 0)))  # x's, so its gradient is zeros
            return reshape(none, (x.shape[0], *out, x.shape[3]))
        return reduce_mean(_windows(x, ksize, strides, (1, 1), padding, 0.0, op), axis=(3, 4))
    window = (ksize, strides, (1, 1), padding)
    p = _windows(x, *window, 0.0, op)
    # Each window's count of elements inside the image: the windows of an image of ones.
    ones = ones_like(x[:1, :, :, :1])
    counts = reduce_sum(_windows(ones, *window, 0.0, op), axis=(3, 4))
    return reduce_sum(p, axis=(3, 4)) / counts


def _pool(pool2d, input, ksize, strides, padding, data_format, op, n):
    """A pooling over the n spatial axes of input (channels last) by pool2d."""
    _data_format(data_format, _LAYOUTS[n], op)
    x = as_value(input, op)
    if x.ndim != n + 2:
        raise shape_error(f"{op}: input must be {_LAYOUTS[n]} {_NOUNS[n]} (rank {n + 2}), "
                          f"got {x.aval.short()}")
    ksize, strides = _spatial(ksize, "ksize", op, n), _spatial(strides, "strides", op, n)
    if n == 1:
        return squeeze(pool2d(expand_dims(x, 1), (1,) + ksize, (1,) + strides, padding, op), 1)
    if n == 2:
        return pool2d(x, ksize, strides, padding, op)
    b, d, h, w, c = x.shape
    planes = pool2d(reshape(x, (b * d, h, w, c)), ksize[1:], strides[1:], padding, op)
    oh, ow = planes.shape[1:3]
    across = pool2d(reshape(planes, (b, d, oh * ow, c)), (ksize[0], 1), (strides[0], 1),
                    padding, op)
    return reshape(across, (b, across.shape[1], oh, ow, c))


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The largest value of each ksize window of NHWC images (tf.nn.max_pool2d); padding
    'SAME' or 'VALID', SAME's padding never chosen. Ties share the gradient equally (as
    reduce_max's), where TensorFlow's MaxPoolGrad gives it all to the first of them."""
    return _pool(_max_pool, input, ksize, strides, padding, data_format, "max_pool2d", 2)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """The mean of each ksize window of NHWC images (tf.nn.avg_pool2d); with 'SAME'
    padding, the mean of the window's elements inside the image, as TensorFlow's."""
    return _pool(_avg_pool, input, ksize, strides, padding, data_format, "avg_pool2d", 2)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """max_pool2d over NWC sequences (tf.nn.max_pool1d)."""
    return _pool(_max_pool, input, ksize, strides, padding, data_format, "max_pool1d", 1)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """avg_pool2d over NWC sequences (tf.nn.avg_pool1d)."""
    return _pool(_avg_pool, input, ksize, strides, padding, data_format, "avg_pool1d", 1)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """max_pool2d over NDHWC volumes (tf.nn.max_pool3d). Ties share the gradient as two
    2-D poolings share it (over each plane's, then across the planes' ties)."""
    return _pool(_max_pool, input, ksize, strides, padding, data_format, "max_pool3d", 3)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """avg_pool2d over NDHWC volumes (tf.nn.avg_pool3d)."""
    return _pool(_avg_pool, input, ksize, strides, padding, data_format, "avg_pool3d", 3)


def _by_rank(pools, input, op):
    """The one of pools (1-D, 2-D, 3-D) for input's rank: 3, 4 or 5 (tf.nn.max_pool's)."""
    rank = as_value(input, op).ndim
    if rank not in (3, 4, 5):
        raise shape_error(f"{op}: input must have rank 3, 4 or 5 (NWC, NHWC or NDHWC), got "
                          f"{as_value(input, op).aval.short()}")
    return pools[rank - 3]


def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """max_pool1d, max_pool2d or max_pool3d by input's rank (tf.nn.max_pool); ksize and
    strides are an int or 1, N or N + 2 ints for N spatial axes."""
    pool = _by_rank((max_pool1d, max_pool2d, max_pool3d), input, "max_pool")
    return pool(input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """avg_pool1d, avg_pool2d or avg_pool3d by input's rank (tf.nn.avg_pool)."""
    pool = _by_rank((avg_pool1d, avg_pool2d, avg_pool3d), input, "avg_pool")
    return pool(input, ksize, strides, padding, data_format)
