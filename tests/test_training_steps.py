"""A compiled training step behaves as the same step run eagerly (issue 17): what it
returns, what it captured from outside, the Variables it may create, what it may return.

Each test runs the same Python function eagerly and compiled, on Variables and optimizers
of their own, and compares them step by step.
"""

import numpy as np
import pytest

import srcxform as tf

# ----- 1. the plain call returns what the eager function returns -----


def _mixed(x):
    return {"tensor": tf.reduce_sum(x * x), "numpy": x * 2.0, "numpy_scalar": np.sum(x),
            "itself": x, "tag": "loss", "nothing": None, "count": 3,
            "pair": (tf.tanh(x), x[0])}


def _on_a_float(x):
    return x * x + 1.0, tf.square(x), np.exp(x), x > 1.0


def _same(got, want):
    """got is what want is: the same types, nested alike, dtypes and values equal."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _same(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, (tf.Tensor, np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        if isinstance(want, tf.Tensor):
            assert got._weak == want._weak
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)
    else:
        assert got == want


@pytest.mark.parametrize("fn, arg", [
    (_mixed, np.arange(1.0, 4.0)),
    (_mixed, np.arange(1.0, 4.0, dtype=np.float32)),
    (_on_a_float, 1.5),
    (_on_a_float, np.float64(1.5)),
    (_mixed, tf.constant(np.arange(1.0, 4.0))),
], ids=["float64 array", "float32 array", "python float", "numpy float", "tensor"])
def test_the_plain_call_returns_what_the_eager_function_returns(fn, arg):
    f = tf.differentiable(fn)
    for _ in range(2):  # the slow path, then the generated entry
        _same(f(arg), fn(arg))
    if fn is _mixed:
        assert f(arg)["itself"] is arg  # the argument itself, as eagerly


def test_the_gradient_forms_keep_returning_numpy_values():
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    x = np.arange(3.0)
    for _ in range(2):
        value, grad = f.value_and_grad(x)
        assert type(value) is float and value == 5.0
        assert type(grad) is np.ndarray and type(f.grad(x)) is np.ndarray
        assert isinstance(f(x), tf.Tensor)


def test_a_step_returns_a_tensor_loss_as_eagerly():
    def make():
        w = tf.Variable(np.float64(2.0))

        def step(x):
            with tf.GradientTape() as tape:
                loss = w * x
            w.assign_sub(0.5 * tape.gradient(loss, w))
            return loss

        return step

    eager, compiled = make(), tf.differentiable(make())
    for x in (1.0, 2.0, 3.0):
        want, got = eager(x), compiled(x)
        assert isinstance(got, tf.Tensor) and got.dtype == want.dtype == np.float64
        assert f"loss {got.numpy():.4f}" == f"loss {want.numpy():.4f}"


# ----- 2. nothing captured goes stale -----

W = tf.Variable(np.ones(3))
OPT = tf.optimizers.SGD(0.1)
SCALE = 2.0


def _global_step(X):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(X @ W) * SCALE
    OPT.apply_gradients([(tape.gradient(loss, W), W)])
    return loss


def test_rebinding_a_global_variable_or_number_traces_again():
    global W, SCALE, OPT
    step = tf.differentiable(_global_step)
    X = np.ones((2, 3))
    saved, runs = (W, SCALE, OPT), []
    try:
        for compiled in (False, True):
            W, SCALE, OPT = tf.Variable(np.ones(3)), 2.0, tf.optimizers.SGD(0.1)
            run = step if compiled else _global_step
            losses = [float(run(X))]
            W = tf.Variable(np.full(3, 5.0))
            losses.append(float(run(X)))
            SCALE = 0.5
            losses.append(float(run(X)))
            SCALE = 0.5  # an equal number: the same kernel
            losses.append(float(run(X)))
            runs.append((losses, W.numpy()))
    finally:
        W, SCALE, OPT = saved
    (eager_losses, eager_w), (losses, w) = runs
    assert eager_losses[:2] == [12.0, 60.0]
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-14)
    np.testing.assert_allclose(w, eager_w, rtol=1e-14)
    info = step.cache_info()  # traced three times, the stale kernels dropped
    assert (info.misses, info.kernels) == (3, 1)


_GAIN = 1.0


def _next_gain():
    global _GAIN
    _GAIN = 2.0


def _gained(x):
    y = tf.reduce_sum(tf.sin(x)) * _GAIN
    _next_gain()  # rebinds the global this call read, for the next call
    return y


def test_a_global_the_function_rebinds_while_traced_is_read_anew_at_the_next_call():
    """Helper 134: the probes were taken after the trace, so the first call's kernel (1.0
    baked in) passed the next call's test of _GAIN == 2.0 and was kept for good. A kernel
    whose captured objects moved while traced serves its own call alone."""
    global _GAIN
    x = np.array([0.5, 1.5])
    compiled = tf.differentiable(_gained)
    want = float(np.sum(np.sin(x)))
    try:
        for form, run in (("eager", _gained), ("value", compiled), ("grad", compiled.grad)):
            _GAIN = 1.0
            got = [run(x) for _ in range(3)]
            if form == "grad":
                np.testing.assert_allclose(got[0], np.cos(x), rtol=1e-15)
                for later in got[1:]:
                    np.testing.assert_allclose(later, 2 * np.cos(x), rtol=1e-15)
            else:
                np.testing.assert_allclose([float(v) for v in got],
                                           [want, 2 * want, 2 * want], rtol=1e-15)
    finally:
        _GAIN = 1.0


class _Scaled:
    """A callable model whose attribute its methods read: rebinding it must retrace."""

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return tf.reduce_sum(x * self.k)

    def loss(self, x):
        return tf.reduce_sum(x * self.k)


def test_a_global_zero_rebound_to_minus_zero_traces_again():
    """A captured float is compared by its repr, as a static one is keyed by its bits:
    -0.0 == 0.0, but 1 / -0.0 is -inf (helper 66: 0.0's kernel ran)."""
    global _ZERO
    divided = tf.function(lambda x: x / _ZERO)
    x = np.array([1.0, -1.0])
    with np.errstate(divide="ignore"):
        for zero in (0.0, -0.0, 0.0, -0.0):
            _ZERO = zero
            np.testing.assert_array_equal(divided(x), x / zero)


_ZERO = 0.0


def test_an_attribute_read_through_a_callable_or_a_called_method_traces_again():
    """A callable instance, and a method a closure calls on an object, read obj.k: both
    are probed at each call, as a bound method's self is (an adversarial find: these
    kept k's first value)."""
    model, x = _Scaled(2.0), np.array([1.0, 2.0])
    forms = [tf.grad(model), tf.grad(lambda x: model.loss(x) ** 2), tf.grad(model.loss)]
    before = [f(x) for f in forms]
    model.k = 5.0
    after = [f(x) for f in forms]
    for got, want in zip(before + after, [[2.0, 2.0], [24.0, 24.0], [2.0, 2.0],
                                          [5.0, 5.0], [150.0, 150.0], [5.0, 5.0]]):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def _lr_step(w, opt):
    def step(x):
        with tf.GradientTape() as tape:
            loss = w * x
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss
    return step


def test_switching_the_learning_rate_between_numbers_and_schedules_traces_again():
    results = []
    for compiled in (False, True):
        w, opt = tf.Variable(np.float64(0.0)), tf.optimizers.SGD(learning_rate=1.0)
        step = _lr_step(w, opt)
        step = tf.differentiable(step) if compiled else step
        seen = []
        step(1.0)
        opt.learning_rate = lambda it: 10.0 * tf.cast(it, tf.float64)
        step(1.0)
        seen.append(w.numpy())
        opt.learning_rate = 1000.0
        step(1.0)
        seen.append(w.numpy())
        opt.learning_rate = 2000.0  # the same rate Variable, assigned: the same kernel
        step(1.0)
        seen.append(w.numpy())
        opt.learning_rate = lambda it: 3.0 * tf.cast(it, tf.float64)
        step(1.0)
        seen.append(w.numpy())
        results.append(seen)
    assert results[0] == [-11.0, -1011.0, -3011.0, -3023.0]
    assert results[1] == results[0]


def test_changing_a_hyperparameter_traces_again():
    results = []
    for compiled in (False, True):
        w, opt = tf.Variable(np.float64(0.0)), tf.optimizers.SGD(1.0, momentum=0.5)
        step = _lr_step(w, opt)
        step = tf.differentiable(step) if compiled else step
        step(1.0)
        opt.momentum = 0.0
        step(1.0)
        results.append(w.numpy())
    assert results == [-2.0, -2.0]


# ----- 3. Variables created inside a step -----


def test_a_variable_created_at_each_call_raises_naming_its_line():
    opt = tf.optimizers.SGD(0.1)

    def step(x):
        v = tf.Variable(1.0)
        with tf.GradientTape() as tape:
            loss = v * x  # the line named
        opt.apply_gradients([(tape.gradient(loss, v), v)])
        return loss

    assert [float(step(1.0)) for _ in range(3)] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"(?s)creates a new Variable.*'v'.*"
                       r"test_training_steps.py:\d+: loss = v \* x.*outside.*once"):
        tf.differentiable(step)(1.0)


class _Dense:
    """Keras's build pattern: the weight is created at the first call only."""

    def __init__(self):
        self.w = None

    def __call__(self, x):
        if self.w is None:
            self.w = tf.Variable(np.full(x.shape[-1], 0.5))
        return tf.reduce_sum(x * self.w)


def _layer_step(layer, opt):
    def step(x):
        with tf.GradientTape() as tape:
            loss = layer(x)
        opt.apply_gradients([(tape.gradient(loss, layer.w), layer.w)])
        return loss

    return step


def test_a_variable_created_once_is_kept_as_eagerly():
    losses = []
    for compiled in (False, True):
        step = _layer_step(_Dense(), tf.optimizers.Adam(0.1))
        step = tf.differentiable(step) if compiled else step
        losses.append([float(step(np.arange(3.0))) for _ in range(3)])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-14)


# ----- 4. what a compiled function may return -----


def test_returning_an_object_raises_a_type_error_naming_it():
    f = tf.differentiable(lambda x: (tf.reduce_sum(x), {1, 2}))
    with pytest.raises(TypeError, match=r"returns \{1, 2\} \(of type set\)"):
        f(np.ones(2))


def test_a_string_and_none_beside_the_loss_are_returned_as_given():
    f = tf.differentiable(lambda x: (tf.reduce_sum(x), "epoch", None))
    for _ in range(2):
        loss, tag, nothing = f(np.ones(2))
        assert float(loss) == 2.0 and tag == "epoch" and nothing is None


# ----- 5. the kernel's signature -----


def test_the_kernel_signature_names_inputs_and_outputs_in_order():
    w = tf.Variable(np.ones(3), name="w")

    @tf.differentiable
    def step(x, scale):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(x * w) * scale
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    x = np.arange(3.0)
    signature = step.kernel_signature(x, 2.0)
    assert signature.inputs == ["x", "scale", "w"]
    assert signature.outputs == ["value", "grad x", "new w"]
    results = step.kernel(x, 2.0)(x, 2.0, w.numpy())
    assert len(results) == 3
    np.testing.assert_allclose(results[2], np.ones(3) - 0.1 * 2.0 * x)


# ----- 6. eager and compiled training loops, every optimizer -----

def _schedule_a(it):
    return 0.05 / (1.0 + tf.cast(it, tf.float64))


def _schedule_b(it):
    return 0.03 * tf.exp(-0.1 * tf.cast(it, tf.float64))


# What the learning rate is set to before step k (None: left as it is).
_RATES = {0: 0.1, 4: 0.05, 8: _schedule_a, 16: 0.02, 22: _schedule_b}
_BATCHES = (8, 5, 1, 12)


def _model(make):
    W = tf.Variable(np.linspace(-0.5, 0.5, 6).reshape(3, 2))
    b = tf.Variable(np.zeros(2))
    opt = make()

    def step(X, Y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(X @ W + b - Y))
        opt.apply_gradients(zip(tape.gradient(loss, [W, b]), [W, b]))
        return loss

    return step, opt, [W, b]


def _state(opt, params):
    slots = [opt.get_slot(p, name).numpy() for name in opt.get_slot_names() for p in params]
    return [p.numpy() for p in params] + slots + [opt.iterations.numpy()]


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    lambda: tf.optimizers.SGD(),
    lambda: tf.optimizers.SGD(momentum=0.9),
    lambda: tf.optimizers.SGD(momentum=0.9, nesterov=True),
    lambda: tf.optimizers.Adam(),
    lambda: tf.optimizers.Adam(amsgrad=True),
    lambda: tf.optimizers.RMSprop(momentum=0.5),
    lambda: tf.optimizers.RMSprop(centered=True),
], ids=["sgd", "momentum", "nesterov", "adam", "amsgrad", "rmsprop", "centered"])
def test_eager_and_compiled_training_loops_agree(make):
    rng = np.random.default_rng(1)
    eager, eager_opt, eager_params = _model(make)
    step, opt, params = _model(make)
    step = tf.differentiable(step)
    for k in range(30):
        if k in _RATES:
            eager_opt.learning_rate = opt.learning_rate = _RATES[k]
        n = _BATCHES[k % len(_BATCHES)]
        X, Y = rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
        want, got = eager(X, Y), step(X, Y)
        assert type(got) is type(want)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
        for g, w in zip(_state(opt, params), _state(eager_opt, eager_params), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-14, err_msg=f"step {k}")
