"""TensorFlow's `tf.function`: a function compiled by srcxform (api.Differentiable), called
with TensorFlow's rules.

As in TensorFlow: a call returns what the function returns (Tensors where its ops make
them); its Python runs when it is traced, once per new signature; a Python bool, int,
float, string or None argument is a constant of the trace, traced again when it changes
(so `math.log(gamma)` of a float argument works), while arrays and tensors are traced
values; Variables are read and assigned, and a GradientTape and an optimizer work inside
(a training step). `input_signature` fixes the arguments' dtypes and shapes (None: any
size) and converts Python values to tensors of them.

Where it differs: one kernel serves every size of an array argument (TensorFlow traces
again for a new shape, unless reduce_retracing relaxes it: srcxform needs no relaxing);
`jit_compile` is accepted and ignored (the kernel is always compiled, by Numba, not XLA).
"""

import inspect
from collections.abc import Callable

import numpy as np

from srcxform import api
from srcxform.jit.kernel import method_recipe
from srcxform.core.dtypes import as_dtype, float32
from srcxform.ops import convert_to_tensor
from srcxform.core.tensor import Value


class TensorSpec:
    """The dtype and shape a tensor argument must have (TensorFlow's TensorSpec): `shape`
    None takes any rank, and a dim None any size."""

    def __init__(self, shape, dtype=float32, name: str | None = None):
        self.shape = None if shape is None else tuple(None if d is None else int(d)
                                                      for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype=tf.{self.dtype.name}, name={self.name!r})"

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and \
            (self.shape, self.dtype, self.name) == (other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def is_compatible_with(self, value) -> bool:
        """Whether a tensor (or array) has this spec's dtype and a shape it admits."""
        shape = tuple(np.shape(value))
        return np.dtype(value.dtype) == self.dtype and (
            self.shape is None or len(shape) == len(self.shape) and
            all(want is None or want == got for want, got in zip(self.shape, shape)))


class Function(api.Differentiable):
    """A function compiled by `function` (TensorFlow's tf.function): call it as the
    function itself. `python_function` is the function; f.source(*args), f.ir(*args) and
    f.cache_info() show what srcxform made of it."""

    def __init__(self, func, input_signature=None, autograph=True):
        super().__init__(func, wrt=(), autograph=autograph)
        self._tf_rules = True  # a Python float is a constant, an array a tensor
        self._recipe = (Function, (func, input_signature, autograph))  # for pickling
        self.python_function = func
        self.input_signature = None if input_signature is None else tuple(input_signature)
        self._parameters = inspect.signature(func) if input_signature is not None else None

    def __repr__(self):
        return f"<srcxform.function {getattr(self.fn, '__qualname__', self.fn)}>"

    def __get__(self, obj, objtype=None):
        """A method: each instance gets its own compiled function, as Differentiable's."""
        if obj is None:
            return self
        def make():
            bound = Function(self.fn.__get__(obj, objtype), self.input_signature,
                             self.autograph)
            bound._recipe = method_recipe(self, obj) or bound._recipe
            return bound

        return self._bound.get(obj, make)

    def __call__(self, *args, **kwargs):
        if self.input_signature is not None and not self._through_class(args):
            args, kwargs = self._conformed(args, kwargs)
        return self._warm["value"](*args, **kwargs)

    def experimental_get_tracing_count(self) -> int:
        """How many times the function has been traced in this process (its Python run:
        a kernel's first call at new shapes traces again to compare, as compiler.right_for
        says)."""
        return self._traces

    def _conformed(self, args, kwargs):
        """The positional arguments the input_signature covers (a default left out, and
        *args's elements, in order) as tensors of its specs (TypeError where one cannot
        be), bound as the function's parameters."""
        try:
            bound = self._parameters.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.fn.__qualname__}: {err}") from None
        given, n = len(bound.args), len(self.input_signature)
        bound.apply_defaults()
        values = list(bound.args)
        if not given <= n <= len(values):  # TensorFlow's: no positional argument unspecified
            raise TypeError(f"{self.fn.__qualname__} takes {n} positional arguments by its "
                            f"input_signature, got {given}")
        params = self._parameters.parameters.values()
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        varargs = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
        names += [f"{varargs}[{k}]" for k in range(len(values) - len(names))]
        values[:n] = [_conformed(self.fn.__qualname__, name, spec, value)
                      for name, spec, value in zip(names, self.input_signature, values)]
        return tuple(values), bound.kwargs


# Arguments a compiled function takes, none of them an instance a method is bound to.
def _conformed(function, name, spec, value):
    """value, a structure like spec's, with each part a TensorSpec covers a tensor or array
    of that spec (a Python value converted to one)."""
    if isinstance(spec, TensorSpec):
        # A Python or NumPy value is converted to the spec's dtype, as TensorFlow's is (a
        # float64 array for a float32 spec raised: helper 131); a tensor must match it.
        if not isinstance(value, Value) and getattr(value, "dtype", None) != spec.dtype:
            value = convert_to_tensor(value, dtype=spec.dtype)
        if not spec.is_compatible_with(value):
            raise TypeError(f"{function}: argument {name!r} of dtype "
                            f"{np.dtype(value.dtype).name} and shape {tuple(np.shape(value))} "
                            f"does not match its input_signature, {spec!r}")
        return value
    if isinstance(spec, dict) and isinstance(value, dict) and spec.keys() == value.keys():
        return {k: _conformed(function, name, spec[k], v) for k, v in value.items()}
    if isinstance(spec, (tuple, list)) and isinstance(value, (tuple, list)) and \
            len(spec) == len(value):
        items = [_conformed(function, name, s, v) for s, v in zip(spec, value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    raise TypeError(f"{function}: argument {name!r} does not have the structure of its "
                    f"input_signature, {spec!r}")


def function(func: Callable | None = None, input_signature=None, autograph: bool = True,
             jit_compile: bool | None = None, reduce_retracing: bool = False,
             **experimental) -> Function | Callable[[Callable], Function]:
    """Compiles func with TensorFlow's calling rules (tf.function); use as `@tf.function`,
    `@tf.function(input_signature=[...])` or `tf.function(f)`.

    A Python float, int, bool, string or None argument is a constant: a new value traces
    again. One kernel serves every size of an array argument, so `reduce_retracing` has
    nothing to relax; `jit_compile` is ignored (Numba always compiles the function).
    TensorFlow's `experimental_*` options are accepted and ignored.

    Example:
        >>> @srcxform.function
        ... def step(x):
        ...     with srcxform.GradientTape() as tape:
        ...         loss = srcxform.reduce_sum(w * x) ** 2
        ...     opt.apply_gradients([(tape.gradient(loss, w), w)])
        ...     return loss
    """
    unknown = [name for name in experimental if not name.startswith("experimental_")]
    if unknown:
        raise TypeError(f"function() got an unexpected keyword argument {unknown[0]!r}")
    if func is None:
        return lambda f: Function(f, input_signature, autograph)
    return Function(func, input_signature, autograph)


__all__ = ["Function", "TensorSpec", "function"]
