"""check_grads: the eager tape, the compiler and central finite differences must agree.

Everything runs in float64. A failure is an AssertionError whose message is a table of
the worst mismatches, one row per gradient element. This module differentiates nothing
itself: gradients come from GradientTape and `srcxform.differentiable`.
"""

import itertools

import numpy as np

from srcxform import autograph
from srcxform.api import _as_tensor, differentiable
from srcxform.ad.trace import eager_kind
from srcxform.ops import multiply, reduce_sum
from srcxform.ad.tape import GradientTape
from srcxform.core.tensor import Value
from srcxform.core.tree import tree_flatten, tree_unflatten

_SHOWN = 10  # rows in the mismatch table


def check_grads(f, args, order=1, rtol=1e-5, atol=1e-6, eps=1e-6, compiled=None, seed=0,
                wrt=None):
    """Checks the gradients of `f` at `args` against central finite differences.

    Float arguments (arrays, Tensors, Variables, Python floats) become float64 arrays and
    are differentiated; integer and bool arguments are passed through untouched. An
    argument may be a structure (tuples, lists and dicts, nested, as `differentiable`
    takes them): each of its float leaves is differentiated, and the rest passed through.
    A non-scalar output (or a list of outputs) is contracted with a fixed random weight.
    Order 1 compares the eager tape's gradient, the compiled gradient (when `compiled`)
    and central differences of `f`, pairwise. Order 2 also compares the eager second
    order (nested tapes: a Hessian-vector product along a random direction) with central
    differences of the eager gradient.

    Args:
        f: a function of the args returning a Tensor (or a list of them).
        args: the arguments, a tuple (or list): (x,) for one.
        order: 1, or 2 to check second derivatives too.
        rtol, atol: a pair (a, b) agrees when |a - b| <= atol + rtol * max(|a|, |b|).
        eps: the finite-difference step.
        compiled: also check `srcxform.differentiable(f).grad` (the default; None is
            True).
        seed: seeds the output weight and the second-order direction.
        wrt: the positions of the arguments to differentiate, an int or a tuple (as
            `srcxform.differentiable` takes it); None means every argument.

    Raises:
        AssertionError: with a table of the worst mismatches.

    Example:
        >>> import numpy as np, srcxform
        >>> from srcxform.testing import check_grads
        >>> check_grads(lambda x: srcxform.tanh(x) * x, [np.linspace(-1.0, 1.0, 5)], order=2)
    """
    __tracebackhide__ = True  # pytest shows the table, not this module's frames
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"check_grads: args is the tuple of f's arguments, (x,) for one, "
                        f"not a {type(args).__name__}")
    if compiled is None:
        compiled = True
    flat = _Flat(args, wrt)
    if not flat.wrt:
        raise ValueError("check_grads: no float argument to differentiate")
    leaves, wrt = flat.leaves, flat.wrt
    rng = np.random.default_rng(seed)
    outs = _outputs(f(*flat.args(flat.tensors(leaves))))
    # A lone scalar output is checked as is; anything else is weighted at random.
    weights = [np.float64(1.0) if len(outs) == 1 and not np.shape(y)
               else rng.standard_normal(np.shape(y)) for y in outs]
    loss = _Loss(f, flat, weights)

    eager = loss.gradient(leaves)
    columns = {"eager": eager, "numeric": _numeric_gradient(loss, leaves, wrt, eps)}
    if compiled:
        columns["compiled"] = loss.compiled_gradient(leaves)
    _compare(f"{_name(f)}: gradients", flat.labels(), columns, rtol, atol)

    if order >= 2:
        direction = [rng.standard_normal(np.shape(leaves[k])) for k in wrt]
        hvp = loss.hessian_vector_product(leaves, direction)
        plus = loss.gradient(_moved(leaves, wrt, direction, eps))
        minus = loss.gradient(_moved(leaves, wrt, direction, -eps))
        numeric = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
        _compare(f"{_name(f)}: second order (Hessian times a random direction)",
                 flat.labels(), {"eager": hvp, "numeric": numeric}, rtol, atol)


class _Flat:
    """The arguments as one list of leaves (float ones as float64 arrays, the rest as
    they are), the indices of the leaves differentiated, and the way back to arguments."""

    def __init__(self, args, wrt):
        self.trees, self.leaves, self.owner, self.kinds = [], [], [], []
        for position, arg in enumerate(args):
            leaves, tree = tree_flatten(arg)
            self.trees.append(tree)
            self.leaves += [_as_float64(leaf) for leaf in leaves]
            # A NumPy array's operators and indexing stay NumPy's (a Python float is taken
            # as a float64 array, a tensor: its eager weak arithmetic would be float32).
            self.kinds += ["numpy" if eager_kind(leaf) == "numpy" else "tensor"
                           for leaf in leaves]
            self.owner += [position] * len(leaves)
        chosen = range(len(args)) if wrt is None else (wrt,) if isinstance(wrt, int) else wrt
        self.wrt = [k for k, leaf in enumerate(self.leaves)
                    if self.owner[k] in chosen and _differentiable(leaf)]
        # The arguments holding them: what `differentiable(..., wrt=...)` is given.
        self.positions = tuple(sorted({self.owner[k] for k in self.wrt}))

    def args(self, leaves):
        """The arguments, with these leaves in the places of the originals."""
        rebuilt, start = [], 0
        for tree in self.trees:
            rebuilt.append(tree_unflatten(tree, leaves[start:start + tree.num_leaves]))
            start += tree.num_leaves
        return rebuilt

    def tensors(self, leaves):
        """The float leaves as tensors of the arguments' eager kinds, the rest as they
        are."""
        return [_as_tensor(a, kind) if _differentiable(a) else a
                for a, kind in zip(leaves, self.kinds)]

    def of(self, position):
        """The indices of the leaves of one argument."""
        return [k for k, owner in enumerate(self.owner) if owner == position]

    def labels(self):
        """Each differentiated leaf's name in the mismatch table: its argument's position,
        and the leaf's index within that argument when it is a structure."""
        return [str(self.owner[k]) if self.trees[self.owner[k]].kind is None
                else f"{self.owner[k]}.{self.of(self.owner[k]).index(k)}" for k in self.wrt]


class _Loss:
    """sum(weight * f(*args)): the scalar every check differentiates."""

    def __init__(self, f, flat, weights):
        self.f, self.flat, self.weights = f, flat, weights

    def __call__(self, tensors):
        return _weighted_sum(self.f(*self.flat.args(tensors)), self.weights)

    def value(self, leaves):
        return float(np.asarray(self(self.flat.tensors(leaves)), dtype=np.float64))

    def gradient(self, leaves):
        """The eager tape's gradient wrt the differentiated leaves, as float64 arrays."""
        tensors = self.flat.tensors(leaves)
        sources = [tensors[k] for k in self.flat.wrt]
        with GradientTape() as tape:
            tape.watch(sources)
            y = self(tensors)
        grads = tape.gradient(y, sources, unconnected_gradients="zero")
        return [np.asarray(g, dtype=np.float64) for g in grads]

    def hessian_vector_product(self, leaves, direction):
        """d/dx <gradient(x), direction>, with an outer tape around an inner one."""
        tensors = self.flat.tensors(leaves)
        sources = [tensors[k] for k in self.flat.wrt]
        with GradientTape() as outer:
            outer.watch(sources)
            with GradientTape() as inner:
                inner.watch(sources)
                y = self(tensors)
            grads = inner.gradient(y, sources, unconnected_gradients="zero")
            dot = sum(reduce_sum(g * v) for g, v in zip(grads, direction))
        hvp = outer.gradient(dot, sources, unconnected_gradients="zero")
        return [np.asarray(h, dtype=np.float64) for h in hvp]

    def compiled_gradient(self, leaves):
        """`srcxform.differentiable(...).grad` wrt the differentiated leaves' arguments,
        as float64 arrays, one a differentiated leaf."""
        # The closure holds f and the weights, not self: the on-disk kernel index tells
        # one check's wrapper from another's by its cells (it cannot describe a _Loss).
        f, weights = autograph.convert(self.f), tuple(self.weights)  # the closure is ours

        def weighted(*xs):
            return _weighted_sum(f(*xs), weights)

        # A readable, per-function name for the generated source and the compile cache.
        # (Not __qualname__: its "<locals>" tells the index, on Python 3.10, that weighted
        # is made at run time and described by its cells.)
        weighted.__name__ = f"{_name(self.f)}__weighted"
        positions = self.flat.positions
        # wait: the kernel itself is checked, not the eager tape a tiered first call runs.
        # A tensor argument passed as one, an array as an array: each as the call had it.
        grads = differentiable(weighted, wrt=positions, wait=True).grad(*self.flat.args([
            _as_tensor(a, kind) if kind == "tensor" and _differentiable(a) else a
            for a, kind in zip(leaves, self.flat.kinds)]))
        # Each argument's gradient has the argument's structure: leaf k's is its leaf.
        by_leaf = {}
        for position, grad in zip(positions, grads):
            by_leaf.update(zip(self.flat.of(position), tree_flatten(grad)[0]))
        return [np.asarray(by_leaf[k], dtype=np.float64) for k in self.flat.wrt]


def _weighted_sum(y, weights):
    terms = [reduce_sum(multiply(out, w)) for out, w in zip(_outputs(y), weights)]
    return sum(terms[1:], terms[0])


def _numeric_gradient(loss, leaves, wrt, eps):
    """Central differences of the loss, one element of one leaf at a time."""
    grads = []
    for i in wrt:
        grad = np.zeros(np.shape(leaves[i]))
        for k in range(grad.size):
            step = np.zeros(grad.shape)
            step.flat[k] = eps
            up = loss.value(_moved(leaves, (i,), [step], 1.0))
            down = loss.value(_moved(leaves, (i,), [step], -1.0))
            grad.flat[k] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def _compare(title, labels, columns, rtol, atol):
    """Compares every pair of columns elementwise; raises with the worst rows (labelled by
    argument: `labels`, one a differentiated leaf)."""
    __tracebackhide__ = True
    names = list(columns)
    rows = []
    for j, i in enumerate(labels):
        values = {name: columns[name][j] for name in names}
        shape = np.shape(values["numeric"])
        for name in names:
            if np.shape(values[name]) != shape:
                raise AssertionError(f"check_grads {title}: the {name} gradient of arg {i} "
                                     f"has shape {np.shape(values[name])}, not {shape}")
        for k in range(int(np.prod(shape))):
            at = {name: float(np.reshape(values[name], -1)[k]) for name in names}
            errors = [_mismatch(at[a], at[b], rtol, atol)
                      for a, b in itertools.combinations(names, 2)]
            errors = [e for e in errors if e is not None]
            if errors:
                err, rel = max(errors)
                rows.append((err, i, k, at, rel))
    if rows:
        rows.sort(key=lambda row: -row[0])
        raise AssertionError(_table(title, rows, names, rtol, atol))


def _mismatch(a, b, rtol, atol):
    """(abs err, rel err) of a pair that disagrees, else None; NaN matches only NaN."""
    if a == b or (np.isnan(a) and np.isnan(b)):
        return None
    err, scale = abs(a - b), max(abs(a), abs(b))
    if np.isfinite(err) and err <= atol + rtol * scale:
        return None
    err = err if np.isfinite(err) else np.inf
    return err, err / scale if scale else np.inf


def _table(title, rows, names, rtol, atol):
    """The worst rows, one per element: arg, flat index, each column's value, errors."""
    header = ["arg", "index"] + [n for n in ("eager", "compiled", "numeric") if n in names]
    header += ["abs err", "rel err"]
    lines = [(f"check_grads: {title} disagree (rtol={rtol:g}, atol={atol:g}); "
              f"worst {min(len(rows), _SHOWN)} of {len(rows)} mismatches:")]
    cells = [header] + [[i, str(k)] + [f"{at[n]:.8g}" for n in header[2:-2]]
                        + [f"{err:.3g}", f"{rel:.3g}"] for err, i, k, at, rel in rows[:_SHOWN]]
    widths = [max(len(row[c]) for row in cells) for c in range(len(header))]
    lines += ["  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


# ----- arguments -----


def _differentiable(a):
    return isinstance(a, np.ndarray) and a.dtype == np.float64


def _as_float64(a):
    """Float values (arrays, Tensors, Variables, Python floats) as float64 arrays; anything
    else (ints, bools, strings, None) untouched."""
    if isinstance(a, (Value, float, np.floating, np.ndarray)):
        array = np.asarray(a)
        if array.dtype.kind == "f":
            return array.astype(np.float64)
    return a


def _moved(leaves, wrt, steps, scale):
    moved = list(leaves)
    for i, step in zip(wrt, steps):
        moved[i] = np.asarray(leaves[i] + scale * step)
    return moved


def _outputs(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _name(f):
    return getattr(f, "__name__", type(f).__name__)
