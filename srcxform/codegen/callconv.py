"""The calling convention of one compiled signature, as one record built from its trace.

Everything that calls a kernel reads it from here: the general path and `f.kernel()`
(generated beside the kernel by codegen/callpath.py), the warm entry (codegen/entry.py) and
`f.kernel_signature()`. It says which argument leaves the kernel takes, which Variables it
reads and assigns, which outputs it fills into buffers its caller allocates, and how the
outputs come back as the structures the function's forms return.
"""

from dataclasses import dataclass

import numpy as np

from srcxform.core.tensor import Variable
from srcxform.core.tree import tree_unflatten

FORMS = ("value", "grad", "value_and_grad")
# Each form has a kernel of its own (api.py keys them apart). The gradient-only kernel
# returns no value, so what only the value needs (the loss's own sum, say) is dead code.

@dataclass(frozen=True)
class Convention:
    """How a kernel is called, as plain data (the on-disk index keeps it)."""

    form: str  # the form the kernel computes: "value", "grad" or "value_and_grad"
    traced: tuple  # indices of the argument leaves the kernel takes, in order
    # Variables read (their values passed after the leaves) and assigned (their new values
    # are the last outputs): each a leaf index (a Variable argument) or the captured
    # Variable itself.
    variables: tuple
    writes: tuple
    consts: int  # how many captured arrays the kernel takes after the Variables' values
    sizes: tuple  # (input index, axis) where each size symbol is read
    outs: tuple  # (shape as size expressions, dtype) of each output
    # Positions in outs of the outputs the kernel fills: arrays its caller allocates and
    # passes after the inputs. It returns the other outputs, in order.
    buffers: tuple
    # The value's treedef (an empty tuple's for a gradient-only kernel), then (gradient
    # forms) the gradients' tuple.
    out_trees: tuple
    # How each leaf of the results comes back (result_leaves reads it): ("out", j, eager,
    # weak) is output j, which the plain call returns as the eager run would have it
    # (eager "tensor": a Tensor, weak or not; "numpy": NumPy's array or scalar; "python":
    # the Python number), the gradient forms as NumPy values; ("arg", i) is argument leaf
    # i itself (the function returned it, or a Variable argument); ("const", value) a
    # value fixed by the trace (a string, None, a Python number, a captured Variable).
    returns: tuple
    guards: tuple  # (expr, op): conditions on the sizes the trace relied on
    single: bool  # the gradient is wrt one argument: its structure, not a tuple of them
    eager_value: bool  # the value form returns results as the eager function does
    # Names, for generated code and kernel_signature: each argument leaf (by its path:
    # params_w), each kernel input but the captured arrays (the traced leaves', then each
    # Variable's own), and each output (value, value[0]; grad params_w; new v).
    leaf_names: tuple
    in_names: tuple
    out_names: tuple
    # The gradient forms' function returns (output, aux): grad gives (gradient, aux), its
    # kernel returning the aux as its value.
    has_aux: bool = False
    # tf.function's rules (core/signature.py's TF_RULES): a Python float argument is
    # static, an array a tensor.
    tf_rules: bool = False
    # Where the trace's call passed Variables: which of those argument leaves were one
    # object, and which were Variables the kernel captured (variable_identities). A call
    # must have the same: the kernel reads and writes each object once, and the function
    # may have told them apart (`a is b`).
    identities: tuple = ()
    # Whether the kernel's code may raise an InvalidArgumentError (a runtime check: an
    # index, an integer divisor, a matrix), which names no line of the user's: the entry
    # sends such a call on to the slow path, which finds the line (Differentiable._slow).
    raises: bool = False

    def captured_variables(self):
        """The Variables the kernel captured (not argument leaves: read, assigned or
        returned), in order, once each."""
        returned = tuple(how[1] for how in self.returns
                         if how[0] == "const" and isinstance(how[1], Variable))
        return list({id(v): v for v in self.variables + self.writes + returned
                     if not isinstance(v, int)}.values())

    def admits_variables(self, leaves):
        """Whether a call's Variable argument leaves are alike to the kernel's trace."""
        return not self.identities or \
            variable_identities(leaves, self.captured_variables()) == self.identities

    @property
    def inputs(self):
        """How many arguments the kernel takes before its buffers."""
        return len(self.traced) + len(self.variables) + self.consts

    def plain(self):
        """Whether calls of this form return results as the eager function does (else as
        NumPy values, JAX's convention)."""
        return self.form == "value" and self.eager_value

    def result_leaves(self, make):
        """An object per leaf of the results, as `returns` says, made by `make` (values at
        tier 0, tiered.py; expressions in generated code, callpath.py): arg(i), const(k,
        value) and out(j) (as the kernel returns it: an array, for rank 0 a Python
        number); asarray(x, dtype), tensor(x, weak) and scalar(x, dtype) convert x."""
        plain, leaves = self.plain(), []
        for k, how in enumerate(self.returns):
            if how[0] != "out":
                leaves.append(make.arg(how[1]) if how[0] == "arg" else make.const(k, how[1]))
                continue
            _, j, eager, weak = how
            shape, dtype = self.outs[j]
            x = make.out(j)
            if plain and eager == "tensor":
                leaves.append(make.tensor(x if shape else make.asarray(x, dtype), weak))
            elif plain and eager == "python" or shape or not plain and dtype == np.float64:
                leaves.append(x)
            else:
                leaves.append(make.scalar(x, dtype))
        return leaves

    def results(self, leaves, build=None):
        """What a call of this form returns, from an object per leaf of the results
        (Convention.returns): values, or for generated code expressions, each container
        made by `build` (tree_unflatten's)."""
        value = tree_unflatten(self.out_trees[0], leaves, build)
        grads, start = [], self.out_trees[0].num_leaves
        for tree in self.out_trees[1].children if len(self.out_trees) > 1 else ():
            grads.append(tree_unflatten(tree, leaves[start:start + tree.num_leaves], build))
            start += tree.num_leaves
        return form_result(self.form, self.single, value, grads, self.has_aux)


def form_result(form, single, value, grads, has_aux=False):
    """What a form returns, given the value and one gradient per `wrt` argument: the
    value, the gradient (one argument's structure, or a tuple of them), or both. With
    has_aux, grad's `value` is the aux, which it returns after the gradient (JAX's forms)."""
    if form == "value":
        return value
    grad = grads[0] if single else tuple(grads)
    if form == "grad":
        return (grad, value) if has_aux else grad
    return value, grad


def variable_identities(leaves, captured):
    """For each Variable among the leaves, in order: the index of the first leaf that is
    the same object, or -1 - k where it is the k-th of `captured` (a kernel's own)."""
    first, found = {}, []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Variable):
            k = next((k for k, c in enumerate(captured) if c is leaf), None)
            found.append(first.setdefault(id(leaf), i) if k is None else -1 - k)
    return tuple(found)

