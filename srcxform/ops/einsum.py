"""einsum and tensordot, as compositions of existing ops: no primitive of their own.

An equation is rewritten, operand by operand: a label repeated within one operand takes
its diagonal; a label no other operand nor the output has is summed; then operands are
contracted left to right, each pair by one matrix product: both transposed and reshaped
to (batch, free, contracted) and (batch, contracted, free), the labels they share and keep
as the batch. So a product with no batch label is BLAS's gemm, every gradient is the
gradients of transpose, reshape, matmul and reduce_sum, and compiled code is theirs.
"""


import numpy as np

from srcxform.core.aval import axis_index, normalize_axis, size
from srcxform.core.errors import shape_error
from srcxform.ops.creation import eye
from srcxform.ops.elementwise import where
from srcxform.ops.linalg import numpy_matmul
from srcxform.ops.reduce import reduce_sum
from srcxform.ops.shape import broadcast_to, reshape, transpose
from srcxform.core.tensor import as_value

# The labels an ellipsis stands for, one per axis counted from the right (so that the
# axes of operands of different ranks line up, as broadcasting does).
_ELLIPSIS_BASE = 0x2460


def _ellipsis_labels(count):
    return [chr(_ELLIPSIS_BASE + k) for k in reversed(range(count))]


def _labels(subscripts, ndim, equation):
    """An operand's subscripts as a list of labels, its ellipsis expanded to ndim's."""
    if "..." in subscripts:
        before, _, after = subscripts.partition("...")
        count = ndim - len(before) - len(after)
        if "." in before + after or count < 0:
            raise ValueError(f"einsum: bad subscripts {subscripts!r} for rank {ndim} in "
                             f"{equation!r}")
        labels = list(before) + _ellipsis_labels(count) + list(after)
    else:
        labels = list(subscripts)
    if len(labels) != ndim or not all(c.isalpha() for c in subscripts.replace("...", "")):
        raise ValueError(f"einsum: subscripts {subscripts!r} do not fit an operand of rank "
                         f"{ndim} in {equation!r}")
    return labels


def _parse(equation, operands):
    """Each operand's labels and the output's."""
    text = equation.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    parts = inputs.split(",")
    if len(parts) != len(operands):
        raise ValueError(f"einsum: {equation!r} names {len(parts)} operand(s), got "
                         f"{len(operands)}")
    labels = [_labels(p, x.ndim, equation) for p, x in zip(parts, operands)]
    ellipsis = max((sum(c >= chr(_ELLIPSIS_BASE) for c in ls) for ls in labels), default=0)
    if arrow:
        out = _labels(output, len(output.replace("...", "")) + ellipsis * ("..." in output),
                      equation)
    else:  # NumPy's implicit output: the ellipsis, then the labels used once, sorted
        counts = {}
        for c in (c for ls in labels for c in ls):
            counts[c] = counts.get(c, 0) + 1
        out = _ellipsis_labels(ellipsis) + sorted(
            c for c, n in counts.items() if n == 1 and c < chr(_ELLIPSIS_BASE))
    every = {c for ls in labels for c in ls}
    missing = [c for c in out if c not in every and c < chr(_ELLIPSIS_BASE)]
    if missing or len(set(out)) != len(out):
        raise ValueError(f"einsum: the output of {equation!r} must name each label of the "
                         f"inputs at most once")
    return labels, out


def _sizes(operands, labels, equation):
    """Each label's size: equal wherever it appears, or 1 (which broadcasts) where it
    appears in another operand (a diagonal's two axes must be equal, as NumPy's)."""
    sizes = {}
    for x, ls in zip(operands, labels):
        own = {}  # the sizes in this operand, where a repeated label may not broadcast
        for c, d in zip(ls, x.shape):
            known = sizes.get(c, 1)
            if d != own.setdefault(c, d) or d != 1 and known != 1 and d != known:
                shown = "..." if c >= chr(_ELLIPSIS_BASE) else c
                other = own[c] if d != own[c] else known
                raise shape_error(f"einsum {equation!r}: label {shown!r} has sizes {other} "
                                  f"and {d}")
            sizes[c] = d if known == 1 else known
    return sizes


def _diagonals(x, labels):
    """x with each label repeated in it taken once, along the diagonal."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        first = labels.index(c)
        second = labels.index(c, first + 1)
        rest = [k for k in range(len(labels)) if k not in (first, second)]
        x = transpose(x, tuple(rest) + (first, second))
        n = x.shape[-1]
        x = reduce_sum(where(eye(n, dtype=np.bool_), x, 0), axis=-1)
        labels = [labels[k] for k in rest] + [c]
    return x, labels


def _sum_unused(x, labels, needed):
    """x summed over the labels `needed` does not hold."""
    axes = tuple(k for k, c in enumerate(labels) if c not in needed)
    if not axes:
        return x, labels
    return reduce_sum(x, axis=axes), [c for c in labels if c in needed]


def _arranged(x, labels, order, sizes):
    """x transposed into `order` (a list of groups of labels), broadcast to the labels'
    sizes and reshaped to one axis per group."""
    flat = [c for group in order for c in group]
    perm = tuple(labels.index(c) for c in flat)
    x = transpose(x, perm) if perm != tuple(range(len(perm))) else x
    full = tuple(sizes[c] for c in flat)
    if x.shape != full:
        x = broadcast_to(x, full)
    return reshape(x, tuple(size([sizes[c] for c in group]) for group in order))


def _contract(x, xl, y, yl, keep, sizes):
    """The product of two operands summed over the labels they share and `keep` lacks."""
    batch = [c for c in xl if c in yl and c in keep]
    inner = [c for c in xl if c in yl and c not in keep]
    x_free = [c for c in xl if c not in yl]
    y_free = [c for c in yl if c not in xl]
    a = _arranged(x, xl, [batch, x_free, inner], sizes)
    b = _arranged(y, yl, [batch, inner, y_free], sizes)
    if not batch:  # matrices: BLAS's product
        a, b = reshape(a, a.shape[1:]), reshape(b, b.shape[1:])
    out = numpy_matmul(a, b)
    labels = batch + x_free + y_free
    return reshape(out, tuple(sizes[c] for c in labels)), labels


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (tf.einsum and np.einsum): any number of operands, ellipses,
    repeated labels (diagonals), the implicit output; size-1 axes broadcast. Computed with
    transposes, reshapes, sums and matrix products (BLAS where there is no batch label),
    which give its gradients."""
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown or not isinstance(equation, str):
        raise TypeError("einsum: takes an equation string and operands (the interleaved "
                        f"form and the argument(s) {sorted(unknown)} are not supported)")
    if not inputs:
        raise ValueError("einsum: needs at least one operand")
    operands = [as_value(x, "einsum") for x in inputs]
    labels, out = _parse(equation, operands)
    sizes = _sizes(operands, labels, equation)
    pairs = [_diagonals(x, ls) for x, ls in zip(operands, labels)]
    x, xl = None, None
    for k, (y, yl) in enumerate(pairs):
        later = {c for _, ls in pairs[k + 1:] for c in ls} | set(out)
        y, yl = _sum_unused(y, yl, later | set(xl or ()))
        if x is None:
            x, xl = y, yl
        else:
            x, xl = _contract(x, xl, y, yl, later, sizes)
    x, xl = _sum_unused(x, xl, set(out))
    return _arranged(x, xl, [[c] for c in out], sizes) if xl != out else x


def _letters(count, start):
    return "".join(chr(ord("a") + start + k) for k in range(count))


def tensordot(a, b, axes, name=None):
    """The sum of products over a's axes `axes[0]` and b's `axes[1]` (tf.tensordot and
    np.tensordot); an int n means a's last n axes and b's first n. The result has a's
    other axes, then b's."""
    x, y = as_value(a, "tensordot"), as_value(b, "tensordot")
    if not isinstance(axes, (int, np.integer, tuple, list)):  # a tensor's or array's values
        axes = np.asarray(axes).tolist()
    if np.ndim(axes) == 0:
        n = axis_index(axes, axes, "tensordot")
        if not 0 <= n <= min(x.ndim, y.ndim):
            raise shape_error(f"tensordot: axes={n} is out of range for {x.aval.short()} "
                              f"and {y.aval.short()}")
        a_axes, b_axes = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair (a's axes, b's axes), "
                             f"got {axes!r}")
        a_axes, b_axes = (np.atleast_1d(np.asarray(v, dtype=object)).tolist() for v in axes)
        if len(a_axes) != len(b_axes):
            raise shape_error(f"tensordot: axes {axes!r} pair {len(a_axes)} axes of a with "
                              f"{len(b_axes)} of b")
        a_axes = [normalize_axis(k, x.ndim, "tensordot") for k in a_axes]
        b_axes = [normalize_axis(k, y.ndim, "tensordot") for k in b_axes]
        if len(set(a_axes)) != len(a_axes) or len(set(b_axes)) != len(b_axes):
            raise shape_error(f"tensordot: repeated axis in {axes!r}")
    x_labels = list(_letters(x.ndim, 0))
    y_labels = list(_letters(y.ndim, x.ndim))
    for i, j in zip(a_axes, b_axes):
        if x.shape[i] != y.shape[j]:
            raise shape_error(f"tensordot: axis {i} of {x.aval.short()} and axis {j} of "
                              f"{y.aval.short()} differ in size")
        y_labels[j] = x_labels[i]
    out = [c for c in x_labels if c not in y_labels] + \
        [c for c in y_labels if c not in x_labels]
    return einsum(f"{''.join(x_labels)},{''.join(y_labels)}->{''.join(out)}", x, y)
