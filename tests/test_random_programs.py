"""Random straight-line programs over the registry's elementwise, reduction and structural
primitives: the eager tape, the compiled kernel and central differences must agree.

A program is a list of steps; each applies one primitive to earlier values (the inputs
or earlier results). Inputs to ops with a restricted domain are squashed first
(tanh for a bounded value, 1 + sigmoid for a positive one), so every program is smooth
and its values stay small. Every example compiles one new kernel (about 0.3 s), hence
few examples.
"""

import numpy as np
import pytest
from corpus import assert_trees_close, eager_value_and_grad
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import srcxform as tf
from srcxform.core.primitive import REGISTRY
from srcxform.testing import check_grads

# Domains: what an op's inputs are squashed into before the op.
RAW, BOUNDED, POSITIVE = "raw", "bounded", "positive"
HALF, ABOVE_ONE = "half", "above_one"  # inside (-1, 1) and above 1, away from the edges

# Elementwise ops whose inputs need more than a bounded value, by input position.
DOMAINS = {
    "log": (POSITIVE,), "sqrt": (POSITIVE,), "log1p": (POSITIVE,),
    "divide": (BOUNDED, POSITIVE), "pow": (POSITIVE, BOUNDED),
    "asin": (HALF,), "acos": (HALF,), "atanh": (HALF,), "acosh": (ABOVE_ONE,),
    "rsqrt": (POSITIVE,), "rsqrt_grad": (POSITIVE, BOUNDED), "lgamma": (POSITIVE,), "xlogy": (BOUNDED, POSITIVE),
    "atan2": (BOUNDED, POSITIVE),
}
# Ops that keep values small whatever their inputs: no squashing needed.
LINEAR = {"add", "subtract", "negative"}
# Differentiable elementwise primitives left out, and why.
EXCLUDED = {
    "mod": "jumps at every multiple of the divisor: finite differences straddle them",
    "broadcast_to": "takes a shape param; exercised by the broadcasting of binary ops",
    "polygamma": "takes an order param; tests/samples.py and corpus.py cover it",
    "leaky_relu": "takes an alpha param; tests/samples.py and corpus.py cover it",
    "leaky_relu_grad": "takes an alpha param; tests/samples.py covers it",
}

INPUT_SHAPES = [(), (3,), (2, 3), (2, 1), (1, 3), "float"]


def _elementwise_ops():
    ops = []
    for name, prim in REGISTRY.items():
        if prim.kind != "elementwise" or prim.nondiff or name in EXCLUDED:
            continue
        if name == "cast":
            ops.append((name, 1))
        elif not prim.param_names and "c" not in prim.arg_names:
            ops.append((name, len(prim.arg_names)))
    return ops


ELEMENTWISE = _elementwise_ops()
REDUCTIONS = [name for name, prim in REGISTRY.items()
              if prim.kind == "reduction" and not prim.nondiff]
STRUCTURAL = [name for name in ("reshape", "transpose", "getitem", "concat")
              if name in REGISTRY and REGISTRY[name].kind == "structural"]
SPECIAL = ["where"] if "where" in REGISTRY else []


def _squash(value, domain):
    if domain == BOUNDED:
        return tf.tanh(value)
    if domain == POSITIVE:
        return 1.0 + tf.sigmoid(value)
    if domain == HALF:
        return 0.5 * tf.tanh(value)
    if domain == ABOVE_ONE:
        return 1.5 + tf.sigmoid(value)
    return value


def _index(kind):
    return {"tail": (slice(1, None),), "last": (Ellipsis, 0), "newaxis": (slice(None), None),
            "first": (0,)}[kind]


def apply_step(step, values):
    """Runs one step on Tensors or Tracers; the same code for every path."""
    name, operands, domains, params = step
    xs = [_squash(values[i], d) for i, d in zip(operands, domains)]
    if name == "cast":
        return tf.cast(xs[0], tf.float64)
    if name == "where":
        cond = tf.greater(xs[0], xs[1])
        return tf.where(cond, xs[2], xs[3])
    if name in ELEMENTWISE_NAMES:
        return REGISTRY[name].bind(*xs)
    if name in REDUCTIONS:
        return REGISTRY[name].bind(xs[0], axis=params["axis"], keepdims=params["keepdims"])
    if name == "reshape":
        return tf.reshape(xs[0], params["shape"])
    if name == "transpose":
        return tf.transpose(xs[0])
    if name == "getitem":
        return xs[0][_index(params["kind"])]
    if name == "concat":
        return tf.concat(xs, axis=0)
    raise AssertionError(name)


ELEMENTWISE_NAMES = {name for name, _ in ELEMENTWISE}


def make_program(steps, n_inputs):
    """The program as a plain function of the inputs. Its output sums every step's result
    that no later step reads (so no step is dead code), the last one included."""
    read = {i for _, operands, _, _ in steps for i in operands}
    outputs = [n_inputs + k for k in range(len(steps)) if n_inputs + k not in read]

    def random_program(*inputs):
        values = list(inputs)
        for step in steps:
            values.append(apply_step(step, values))
        total = tf.reduce_sum(values[outputs[-1]])
        for i in outputs[:-1]:
            total = total + 0.5 * tf.reduce_sum(values[i])
        return total

    return random_program


@st.composite
def programs(draw):
    """(steps, inputs). Hypothesis draws the sizes and a seed; the choices come from the
    seeded generator (diverse programs in few examples), tracking shapes so every step
    is valid."""
    n_inputs = draw(st.integers(1, 3))
    n_steps = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def pick(options):
        return options[rng.integers(len(options))]

    inputs, shapes = [], []
    for _ in range(n_inputs):
        shape = pick(INPUT_SHAPES)
        if shape == "float":
            inputs.append(float(rng.uniform(-1.5, 1.5)))
            shapes.append(())
        else:
            inputs.append(rng.uniform(-1.5, 1.5, shape))
            shapes.append(shape)
    steps = []
    for _ in range(n_steps):
        step = random_step(rng, shapes)
        steps.append(step)
        shapes.append(_shape_of(step, shapes))
    return steps, inputs


def random_step(rng, shapes, first=None, any_size=False):
    """One step on the values of the given shapes, drawn from rng: its first operand is
    values[first] (by default the latest value half the time: deeper chains). With
    any_size, only steps that are valid wherever the shapes' sizes change together (no
    reshape to a fixed shape)."""
    def pick(options):
        return options[rng.integers(len(options))]

    kind = pick(["elementwise"] * 4 + ["reduction"] * 2 + ["structural"] * 2 + ["where"])
    if first is None:
        first = len(shapes) - 1 if rng.random() < 0.5 else int(rng.integers(len(shapes)))
    shape = shapes[first]
    fits = [i for i, s in enumerate(shapes) if _broadcastable(s, shape)]
    if kind == "elementwise":
        name, arity = pick(ELEMENTWISE)
        operands = [first] + [pick(fits) for _ in range(arity - 1)]
        default = RAW if name in LINEAR else BOUNDED
        return (name, tuple(operands), DOMAINS.get(name, (default,) * arity), {})
    if kind == "where" and SPECIAL:
        operands = [first]
        for _ in range(3):  # each operand broadcasts with those before it
            so_far = np.broadcast_shapes(*[shapes[i] for i in operands])
            operands.append(pick([i for i, s in enumerate(shapes)
                                  if _broadcastable(s, so_far)]))
        return ("where", tuple(operands), (BOUNDED,) * 4, {})
    if kind == "reduction" or not shape:
        name = pick(REDUCTIONS)
        axes = tuple(a for a in range(len(shape)) if rng.random() < 0.5)
        axis = axes if axes else tuple(range(len(shape)))
        params = {"axis": axis, "keepdims": bool(rng.random() < 0.5)}
        return (name, (first,), (BOUNDED,), params)
    name = pick([o for o in ("reshape", "transpose", "getitem", "concat") if o in STRUCTURAL])
    params, operands = {}, (first,)
    if name == "reshape":
        fixed = [(3, 2)] if int(np.prod(shape)) == 6 and not any_size else []
        params["shape"] = pick([(-1,), (1, -1)] + fixed)
    elif name == "getitem":
        params["kind"] = pick(["last", "newaxis", "first"] + (["tail"] if shape[0] > 1 else []))
    elif name == "concat":
        same = [i for i, s in enumerate(shapes) if len(s) == len(shape) and s[1:] == shape[1:]]
        operands = (first, pick(same))
    return (name, operands, (RAW,) * len(operands), params)


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _shape_of(step, shapes):
    """The result shape of a step, by running it on NumPy zeros through the eager ops."""
    values = [tf.constant(np.zeros(s)) for s in shapes]
    return tuple(apply_step(step, values).shape)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_program_eager_compiled_and_numeric_agree(program):
    steps, inputs = program
    note(f"steps: {steps}")
    note(f"inputs: {inputs}")
    f = make_program(steps, len(inputs))
    wrt = tuple(range(len(inputs)))
    eager_value, eager_grads = eager_value_and_grad(f, inputs, wrt)
    value, grads = tf.differentiable(f, wrt=wrt).value_and_grad(*inputs)
    np.testing.assert_allclose(value, eager_value, rtol=1e-9, atol=1e-11)
    assert_trees_close(grads, eager_grads, rtol=1e-9, atol=1e-11, what="compiled vs eager")
    # Finite differences against eager, and so against compiled too, to within 1e-9.
    check_grads(f, inputs, wrt=wrt, rtol=1e-5, atol=1e-6, compiled=False)


def test_the_generator_covers_the_registry():
    """Every differentiable elementwise and reduction primitive is drawn or excluded."""
    drawn = ELEMENTWISE_NAMES | set(REDUCTIONS) | set(SPECIAL)
    for name, prim in REGISTRY.items():
        if prim.kind in ("elementwise", "reduction") and not prim.nondiff:
            assert name in drawn or name in EXCLUDED, name
    assert len(ELEMENTWISE) >= 15 and len(REDUCTIONS) >= 3 and len(STRUCTURAL) == 4
