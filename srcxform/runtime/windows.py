"""Sliding windows over the two spatial axes of NHWC images, for generated code:
`windows.patches` copies each window out (im2col: a convolution is then one BLAS
product, a pooling one reduction) and `windows.fold` adds patches back where they came
from (col2im, patches' transpose). The window geometry is ops/conv.py's: sizes of the
kernel, strides, dilations and the zero padding before and after each axis.
Scalar loops throughout: Numba compiles slice assignments several times more slowly.
Imported only by generated code.
"""

from srcxform.numba_adapter.jit import helper
from srcxform.runtime import arrays


@helper
def _out_size(size, k, stride, dilation, before, after):
    return (size + before + after - (k - 1) * dilation - 1 + stride) // stride


@helper
def patches(x, ksize, strides, dilations, pads, fill):
    """(n, oh, ow, kh, kw, c): each window of x, positions in the padding set to fill."""
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), (dh, dw) = ksize, strides, dilations
    (top, bottom), (left, right) = pads
    oh = _out_size(h, kh, sh, dh, top, bottom)
    ow = _out_size(w, kw, sw, dw, left, right)
    out = arrays.empty((n, oh, ow, kh, kw, c), x.dtype)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for p in range(kh):
                    row = i * sh + p * dh - top
                    for q in range(kw):
                        col = j * sw + q * dw - left
                        inside = 0 <= row < h and 0 <= col < w
                        for k in range(c):
                            out[b, i, j, p, q, k] = x[b, row, col, k] if inside else fill
    return out


@helper
def fold(g, size, strides, dilations, pads):
    """(n, h, w, c) zeros with each window's patch of g (n, oh, ow, kh, kw, c) added at
    its place; patch elements in the padding are dropped."""
    n, oh, ow, kh, kw, c = g.shape
    h, w = size
    (sh, sw), (dh, dw) = strides, dilations
    top, left = pads[0][0], pads[1][0]
    out = arrays.zeros((n, h, w, c), g.dtype)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for p in range(kh):
                    row = i * sh + p * dh - top
                    if 0 <= row < h:
                        for q in range(kw):
                            col = j * sw + q * dw - left
                            if 0 <= col < w:
                                for k in range(c):
                                    out[b, row, col, k] += g[b, i, j, p, q, k]
    return out
