"""srcxform.optimizers: Keras's update rules, eagerly and inside a compiled step.

The hand-computed references below are the formulas of the optimizers' docstrings,
written in NumPy. The test loss is sum(c * w) + 0.5 * sum(w * w), whose gradient
c + w the tape computes exactly, so eager and compiled updates can be compared with the
references to float rounding.
"""

import copy
import pickle
import re
import warnings

import numpy as np
import pytest
from helpers import quick_first

import srcxform as tf
from srcxform.optimizers import SGD, Adagrad, Adam, AdamW, Nadam, RMSprop

STEPS = 5


# ----- hand-computed references -----


def ref_sgd(lr, momentum=0.0, nesterov=False):
    def update(w, g, state, t):
        if momentum == 0:
            return w - g * lr
        v = state.get("v", np.zeros_like(w))
        v = v * momentum - g * lr
        state["v"] = v
        return w + (v * momentum - g * lr) if nesterov else w + v
    return update


def ref_adam(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    def update(w, g, state, t):
        dtype = w.dtype.type
        m = state.get("m", np.zeros_like(w))
        v = state.get("v", np.zeros_like(w))
        lr_t = dtype(lr) * np.sqrt(1 - dtype(beta_2) ** dtype(t)) / (1 - dtype(beta_1) ** dtype(t))
        m = m + (g - m) * dtype(1 - beta_1)
        v = v + (g * g - v) * dtype(1 - beta_2)
        state["m"], state["v"] = m, v
        if amsgrad:
            v = np.maximum(state.get("vhat", np.zeros_like(w)), v)
            state["vhat"] = v
        return w - m * lr_t / (np.sqrt(v) + dtype(epsilon))
    return update


def ref_rmsprop(lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    def update(w, g, state, t):
        dtype = w.dtype.type
        ms = dtype(rho) * state.get("ms", np.zeros_like(w)) + dtype(1 - rho) * g * g
        state["ms"] = ms
        if centered:
            mg = dtype(rho) * state.get("mg", np.zeros_like(w)) + dtype(1 - rho) * g
            state["mg"] = mg
            denominator = ms - mg * mg + dtype(epsilon)
        else:
            denominator = ms + dtype(epsilon)
        increment = dtype(lr) * g / np.sqrt(denominator)
        if momentum > 0:
            mom = dtype(momentum) * state.get("mom", np.zeros_like(w)) + increment
            state["mom"] = mom
            return w - mom
        return w - increment
    return update


CASES = {
    "sgd": (lambda: SGD(0.1), ref_sgd(0.1)),
    "momentum": (lambda: SGD(0.1, momentum=0.9), ref_sgd(0.1, 0.9)),
    "nesterov": (lambda: SGD(0.1, momentum=0.9, nesterov=True), ref_sgd(0.1, 0.9, True)),
    "adam": (lambda: Adam(0.1), ref_adam(0.1)),
    "adam_betas": (lambda: Adam(0.05, beta_1=0.8, beta_2=0.99, epsilon=1e-3),
                   ref_adam(0.05, 0.8, 0.99, 1e-3)),
    "amsgrad": (lambda: Adam(0.1, amsgrad=True), ref_adam(0.1, amsgrad=True)),
    "rmsprop": (lambda: RMSprop(0.1), ref_rmsprop(0.1)),
    "rmsprop_momentum": (lambda: RMSprop(0.1, momentum=0.5), ref_rmsprop(0.1, momentum=0.5)),
    "rmsprop_centered": (lambda: RMSprop(0.1, rho=0.8, centered=True),
                         ref_rmsprop(0.1, rho=0.8, centered=True)),
}

TOL = {np.float64: {"rtol": 1e-12, "atol": 1e-14}, np.float32: {"rtol": 2e-5, "atol": 1e-6}}


def _problem(dtype):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(2, 3)).astype(dtype)
    b0 = dtype(0.5)
    cw = rng.normal(size=(2, 3)).astype(dtype)
    cb = dtype(-1.5)
    return w0, b0, cw, cb


def _step_fn(opt, w, b, cw, cb):
    def step():
        with tf.GradientTape() as tape:
            loss = (tf.reduce_sum(cw * w) + cb * b
                    + 0.5 * (tf.reduce_sum(w * w) + b * b))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss
    return step


def _reference(update, w0, b0, cw, cb, steps):
    w, b = w0.copy(), np.asarray(b0)
    sw, sb, out = {}, {}, []
    for t in range(1, steps + 1):
        gw, gb = cw + w, cb + b
        w, b = update(w, gw, sw, t), update(b, gb, sb, t)
        out.append((w.copy(), np.asarray(b).copy()))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
# Compiled: a kernel per optimizer and dtype (test_compiled_step_equals_eager_after_50_steps
# compiles each optimizer in the quick tier).
@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["eager", "compiled"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_update_equals_hand_computed(case, compiled, dtype):
    make, update = CASES[case]
    w0, b0, cw, cb = _problem(dtype)
    w, b = tf.Variable(w0), tf.Variable(b0)
    opt = make()
    step = _step_fn(opt, w, b, cw, cb)
    if compiled:
        step = tf.differentiable(step)
    expected = _reference(update, w0, b0, cw, cb, STEPS)
    for t, (ew, eb) in enumerate(expected, start=1):
        step()
        assert w.dtype == dtype and b.dtype == dtype
        np.testing.assert_allclose(w.numpy(), ew, **TOL[dtype], err_msg=f"w, step {t}")
        np.testing.assert_allclose(b.numpy(), eb, **TOL[dtype], err_msg=f"b, step {t}")
        assert int(opt.iterations.numpy()) == t
    if compiled:
        assert step.cache_info().misses == 1


# ----- the compiled training step equals the eager one -----


def _logistic_data(n=96, d=5):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(np.float64)
    return X, y


def _train_step(opt, params):
    def step(X, y):
        with tf.GradientTape() as tape:
            logits = tf.reduce_sum(X * params["w"], axis=1) + params["b"]
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y,
                                                                          logits=logits))
        grads = tape.gradient(loss, params)
        opt.apply_gradients((grads[k], params[k]) for k in params)
        return loss
    return step


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_step_equals_eager_after_50_steps(case):
    make = CASES[case][0]
    X, y = _logistic_data()
    runs = []
    for compiled in (False, True):
        params = {"w": tf.Variable(np.zeros(X.shape[1])), "b": tf.Variable(np.float64(0.0))}
        opt = make()
        step = _train_step(opt, params)
        if compiled:
            step = tf.differentiable(step)
        losses = [float(step(X, y)) for _ in range(50)]
        runs.append((params, opt, losses, step))
    (pe, oe, le, _), (pc, oc, lc, compiled_step) = runs
    # Reductions sum in a different order (NumPy's pairwise sum, the kernel's loop), and
    # 50 steps amplify that rounding a little.
    tol = {"rtol": 1e-9, "atol": 1e-12}
    for k in pe:
        np.testing.assert_allclose(pc[k].numpy(), pe[k].numpy(), **tol)
    np.testing.assert_allclose(lc, le, **tol)
    assert int(oe.iterations.numpy()) == int(oc.iterations.numpy()) == 50
    for se, sc in zip(oe.variables, oc.variables):
        np.testing.assert_allclose(sc.numpy(), se.numpy(), **tol)
    assert compiled_step.cache_info()[:3] == (49, 1, 1)
    assert le[-1] < le[0]


def test_new_batch_size_reuses_the_kernel():
    X, y = _logistic_data(n=100)
    params = {"w": tf.Variable(np.zeros(X.shape[1])), "b": tf.Variable(np.float64(0.0))}
    step = tf.differentiable(_train_step(Adam(0.01), params))
    for start in range(0, 100, 32):  # batches of 32, 32, 32 and 4
        step(X[start:start + 32], y[start:start + 32])
    assert step.cache_info().misses == 1


def test_compiled_update_is_in_the_same_kernel():
    X, y = _logistic_data()
    params = {"w": tf.Variable(np.zeros(X.shape[1])), "b": tf.Variable(np.float64(0.0))}
    step = tf.differentiable(_train_step(Adam(0.01), params))
    source = step.source(X, y)
    assert len(re.findall(r"\ndef \w+__value_and_grad\(", source)) == 1  # one kernel
    assert "# ---- adjoint ----" in source and "np.sqrt" in source
    assert "Adam_iterations" in source


# ----- state -----


def test_slots_are_variables_created_lazily():
    w = tf.Variable(np.ones(3))
    opt = Adam(0.1)
    assert opt.variables == [opt.iterations, opt.learning_rate]
    assert opt.get_slot_names() == []
    opt.apply_gradients([(np.ones(3), w)])
    assert isinstance(opt.iterations, tf.Variable) and opt.iterations.dtype == np.int64
    m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
    assert isinstance(m, tf.Variable) and not m.trainable and m.shape == (3,)
    np.testing.assert_allclose(m.numpy(), 0.1 * np.ones(3))
    np.testing.assert_allclose(v.numpy(), 0.001 * np.ones(3))
    assert len(opt.variables) == 4
    opt.apply_gradients([(np.ones(3), w)])
    assert len(opt.variables) == 4 and int(opt.iterations.numpy()) == 2


def _compiled_linear_step(w, opt):
    """A compiled step of the loss sum(w * x), updating w with opt."""

    @tf.differentiable
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    return step


def test_slots_created_while_tracing():
    w = tf.Variable(np.ones(3))
    opt = SGD(0.1, momentum=0.9)
    step = _compiled_linear_step(w, opt)

    step(np.ones(3))
    step(np.ones(3))
    velocity = opt.get_slot(w, "momentum")
    np.testing.assert_allclose(velocity.numpy(), np.full(3, -0.1 * 0.9 - 0.1))
    np.testing.assert_allclose(w.numpy(), np.full(3, 1 - 0.1 - 0.19))
    assert int(opt.iterations.numpy()) == 2


def test_learning_rate_change_does_not_recompile():
    w = tf.Variable(np.zeros(2))
    opt = SGD(0.1)
    step = _compiled_linear_step(w, opt)

    step(np.ones(2))
    opt.learning_rate = 0.5
    step(np.ones(2))
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.6], rtol=1e-15)
    assert step.cache_info().misses == 1
    assert opt.get_config()["learning_rate"] == 0.5


def test_learning_rate_schedule():
    def schedule(step):  # 0.1 / (1 + step), with srcxform ops so that it traces
        return np.float64(0.1) / (1.0 + tf.cast(step, tf.float64))

    for compiled in (False, True):
        w = tf.Variable(np.zeros(1))
        opt = SGD(schedule)

        def step(x, opt=opt, w=w):
            opt.apply_gradients([(x, w)])
            return tf.reduce_sum(w)

        if compiled:
            step = tf.differentiable(step)
        for _ in range(3):
            step(np.ones(1))
        np.testing.assert_allclose(w.numpy(), [-(0.1 + 0.05 + 0.1 / 3)], rtol=1e-14)


def test_minimize():
    w = tf.Variable(np.float64(3.0))
    opt = SGD(0.25)
    opt.minimize(lambda: w * w, [w])
    assert w.numpy() == pytest.approx(1.5)
    with tf.GradientTape() as tape:
        loss = w * w
    opt.minimize(loss, [w], tape=tape)
    assert w.numpy() == pytest.approx(0.75)
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(w * w, [w])


# ----- nested structures -----


def _mlp_params(rng):
    return {"dense": [rng.normal(size=(3, 4)), np.zeros(4)], "out": {"w": rng.normal(size=4)}}


def _mlp_loss(params, X):
    w1, b1 = params["dense"]
    h = tf.tanh(X @ w1 + b1)
    return tf.reduce_mean((tf.reduce_sum(h * params["out"]["w"], axis=1) - 1.0) ** 2)


@pytest.mark.parametrize("make", [lambda: SGD(0.1, momentum=0.9), lambda: Adam(0.01),
                                  lambda: RMSprop(0.01)], ids=["momentum", "adam", "rmsprop"])
def test_nested_variables(make):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(16, 3))
    init = _mlp_params(rng)
    results = []
    for compiled in (False, True):
        params = {"dense": [tf.Variable(a) for a in init["dense"]],
                  "out": {"w": tf.Variable(init["out"]["w"])}}
        opt = make()

        def step(X, params=params, opt=opt):
            with tf.GradientTape() as tape:
                loss = _mlp_loss(params, X)
            grads = tape.gradient(loss, params)
            assert isinstance(grads, dict) and isinstance(grads["dense"], list)
            opt.apply(grads, params)
            return loss

        if compiled:
            step = tf.differentiable(step)
        for _ in range(20):
            step(X)
        results.append(params)
    eager, comp = results
    for e, c in zip(_leaves(eager), _leaves(comp)):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


def _leaves(tree):
    from srcxform.core.tree import tree_flatten

    return tree_flatten(tree)[0]


@pytest.mark.parametrize("make", quick_first([lambda: Adam(0.01),
                                              lambda: SGD(0.1, momentum=0.9, nesterov=True),
                                              lambda: RMSprop(0.01, centered=True)]),
                         ids=["adam", "nesterov", "rmsprop"])
def test_array_parameters_passed_and_returned_whole(make):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(16, 3))
    init = _mlp_params(rng)
    results = []
    for compiled in (False, True):
        opt = make()

        def step(params, X, opt=opt):
            with tf.GradientTape() as tape:
                tape.watch(params)
                loss = _mlp_loss(params, X)
            grads = tape.gradient(loss, params)
            return opt.apply(grads, params), loss

        if compiled:
            step = tf.differentiable(step)
            params = init
        else:
            params = {"dense": [tf.constant(a) for a in init["dense"]],
                      "out": {"w": tf.constant(init["out"]["w"])}}
        losses = []
        for _ in range(20):
            params, loss = step(params, X)
            losses.append(float(loss))
        assert set(params) == {"dense", "out"} and isinstance(params["dense"], list)
        assert int(opt.iterations.numpy()) == 20
        results.append((params, losses))
        if compiled:  # the first call's arrays, then the Tensors it returns (as eagerly)
            assert step.cache_info().misses == 2
    (pe, le), (pc, lc) = results
    for e, c in zip(_leaves(pe), _leaves(pc)):
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lc, le, rtol=1e-10)
    assert le[-1] < le[0]


def test_apply_returns_the_structure():
    params = [tf.Variable(np.ones(2)), {"b": np.float64(1.0)}]
    new = SGD(0.5).apply([np.ones(2), {"b": np.float64(2.0)}], params)
    assert new[0] is params[0]
    np.testing.assert_allclose(params[0].numpy(), [0.5, 0.5])
    assert isinstance(new[1]["b"], tf.Tensor) and float(new[1]["b"]) == 0.0


class _Pair:
    def __init__(self, w, b):
        self.w, self.b = w, b


tf.register_pytree_node(_Pair, lambda p: ((p.w, p.b), None), lambda _, parts: _Pair(*parts))


def test_apply_takes_tape_gradients_with_none_and_dicts_in_any_key_order():
    params = {"a": tf.Variable(np.ones(2)), "b": tf.Variable(np.ones(2)), "c": [tf.ones(1)]}
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(params["a"] ** 2)
    grads = tape.gradient(loss, params)  # None for b and c: the loss does not use them
    with pytest.warns(UserWarning, match="gradients do not exist"):
        new = SGD(0.25).apply(grads, params)
    assert params["a"].numpy().tolist() == [0.5, 0.5] and params["b"].numpy().tolist() == [1, 1]
    assert new["c"][0].numpy().tolist() == [1.0]
    SGD(0.5).apply({"c": [np.ones(1)], "b": np.ones(2), "a": np.zeros(2)}, params)  # by key
    assert params["a"].numpy().tolist() == [0.5, 0.5] and params["b"].numpy().tolist() == [.5, .5]
    registered = _Pair(tf.Variable(np.ones(2)), tf.Variable(np.ones(2)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(registered.w ** 2)
    with pytest.warns(UserWarning, match="gradients do not exist"):  # for b: None
        SGD(0.25).apply(tape.gradient(loss, registered), registered)
    assert registered.w.numpy().tolist() == [0.5, 0.5] and registered.b.numpy().tolist() == [1, 1]
    with pytest.raises(ValueError, match=r"parameters. at grads\[.c.\] \(2 gradients for 1 "
                                         r"parameters there\)"):
        SGD(0.5).apply({"a": np.ones(2), "b": np.ones(2), "c": (np.ones(1), np.ones(1))}, params)


# ----- bad input -----


def test_none_gradients():
    a, b = tf.Variable(np.ones(2)), tf.Variable(np.ones(2))
    opt = SGD(0.1)
    with pytest.warns(UserWarning, match="gradients do not exist"):
        opt.apply_gradients([(np.ones(2), a), (None, b)])
    np.testing.assert_allclose(b.numpy(), [1.0, 1.0])
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients([(None, a), (None, b)])


def test_bad_arguments():
    w = tf.Variable(np.ones(2))
    opt = Adam()
    with pytest.raises(TypeError, match=r"apply\(grads, params\)"):
        opt.apply_gradients([(np.ones(2), np.ones(2))])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([np.ones(2)])
    with pytest.raises(ValueError, match="shape"):
        opt.apply_gradients([(np.ones(3), w)])
    with pytest.raises(ValueError, match="structure"):
        opt.apply([np.ones(2)], {"w": w})
    with pytest.raises(TypeError, match="only float"):
        SGD().apply_gradients([(np.ones(2, np.int32), tf.Variable(np.ones(2, np.int32)))])
    with pytest.raises(ValueError, match="momentum"):
        SGD(momentum=1.5)
    with pytest.raises(KeyError, match="no slot"):
        opt.get_slot(w, "m")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.apply_gradients([(np.ones(2), w)])


def test_gradient_dtype_is_cast_to_the_variable():
    w = tf.Variable(np.ones(2, np.float32))
    SGD(0.5).apply_gradients([(np.ones(2, np.float64), w)])
    assert w.dtype == np.float32
    np.testing.assert_allclose(w.numpy(), [0.5, 0.5])


# ----- Keras 3's weight decay, clips, AdamW, Adagrad and Nadam, against TensorFlow -----

# The trajectories below were printed by TF 2.21 / Keras 3 for float32 variables w = W0
# and b = B0 and gradients CW + w and CB + b (the test loss's), three apply_gradients.
# (In float64, Keras's TensorFlow backend rounds some hyperparameters to float32 on the
# way, e.g. tf.cast(0.999, tf.float64); srcxform keeps them exact, so float64 is compared
# between eager and compiled instead.)
W0, B0, CW, CB = [0.5, -1.0, 2.0], 0.25, [3.0, -4.0, 1.0], 2.0

OPTION_CASES = {
    "sgd_momentum_decay": lambda: SGD(0.1, momentum=0.9, weight_decay=0.05),
    "adam_decay": lambda: Adam(0.1, weight_decay=0.1),
    "adamw": lambda: AdamW(0.1, weight_decay=0.2),
    "rmsprop_centered_decay": lambda: RMSprop(0.1, centered=True, weight_decay=0.1),
    "sgd_clipnorm": lambda: SGD(0.1, clipnorm=1.0),
    "adam_clipvalue": lambda: Adam(0.1, clipvalue=0.5),
    "rmsprop_global_clipnorm": lambda: RMSprop(0.1, momentum=0.5, global_clipnorm=2.0),
    "adagrad": lambda: Adagrad(0.1),
    "adagrad_options": lambda: Adagrad(0.1, initial_accumulator_value=0.5, epsilon=1e-3),
    "nadam": lambda: Nadam(0.1),
    "nadam_decay_clip": lambda: Nadam(0.05, beta_1=0.8, weight_decay=0.1, global_clipnorm=1.0),
}

TF_TRAJECTORIES = {  # w (3 values) and b after each step, float32
    "sgd_momentum_decay": [
        [0.147500008, -0.495000005, 1.69000006, 0.0237499923],
        [-0.482987523, 0.406975001, 1.14254999, -0.381243765],
        [-1.2990489, 1.57379258, 0.437482238, -0.905600667],
    ],
    "adam_decay": [
        [0.395000756, -0.890000761, 1.88000083, 0.147500813],
        [0.291142792, -0.781165957, 1.76132905, 0.046175532],
        [0.188476801, -0.673526704, 1.64406085, -0.053881593],
    ],
    "adamw": [
        [0.390000761, -0.88000077, 1.86000085, 0.145000815],
        [0.28229779, -0.76247251, 1.72295499, 0.0422549322],
        [0.176909417, -0.647412121, 1.58891034, -0.0581758395],
    ],
    "rmsprop_centered_decay": [
        [0.161666691, -0.656666636, 1.64666677, -0.0858333111],
        [-0.0821723044, -0.403987825, 1.39103425, -0.319377899],
        [-0.287468135, -0.187991366, 1.1759268, -0.510352194],
    ],
    "sgd_clipnorm": [
        [0.448534966, -0.926478565, 1.95588708, 0.150000006],
        [0.397069931, -0.852957129, 1.91177416, 0.0500000045],
        [0.345604897, -0.779435635, 1.86766124, -0.049999997],
    ],
    "adam_clipvalue": [
        [0.400001317, -0.900001287, 1.90000129, 0.150001317],
        [0.300002784, -0.800002754, 1.80000269, 0.0500027761],
        [0.20000352, -0.700003505, 1.70000339, -0.0499964878],
    ],
    "rmsprop_global_clipnorm": [
        [0.183772385, -0.683772326, 1.68377244, -0.0662273467],
        [-0.203047454, -0.293776929, 1.29878199, -0.446759582],
        [-0.586807191, 0.0983932614, 0.919988453, -0.813088834],
    ],
    "adagrad": [
        [0.400405675, -0.900199413, 1.90055096, 0.15097326],
        [0.330868691, -0.83027637, 1.83124065, 0.0822249949],
        [0.27457273, -0.773525536, 1.77520573, 0.0268216766],
    ],
    "adagrad_options": [
        [0.401984245, -0.900987208, 1.90267229, 0.154608756],
        [0.333006293, -0.831342161, 1.83411551, 0.0871646404],
        [0.277013838, -0.774742246, 1.77848971, 0.0324699953],
    ],
    "nadam": [
        [0.393721223, -0.893721223, 1.89372122, 0.143721223],
        [0.317406327, -0.817087889, 1.81758523, 0.0680082366],
        [0.247741669, -0.746972799, 1.74817443, -0.000799909234],
    ],
    "nadam_decay_clip": [
        [0.442243069, -0.939743102, 1.93474305, 0.193493083],
        [0.396661013, -0.891593277, 1.88179398, 0.149311781],
        [0.352922201, -0.845256925, 1.83079004, 0.107052818],
    ],
}


def _option_problems(dtype):
    """Each case's optimizer, w and b, and one step applying them all (one kernel)."""
    problems = {case: (make(), tf.Variable(np.array(W0, dtype)), tf.Variable(dtype(B0)))
                for case, make in OPTION_CASES.items()}

    def step(cw, cb):
        for opt, w, b in problems.values():
            with tf.GradientTape() as tape:
                loss = (tf.reduce_sum(cw * w) + cb * b
                        + 0.5 * (tf.reduce_sum(w * w) + b * b))
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))

    return problems, step


def _state(problem):
    return [*problem[1].numpy(), float(problem[2].numpy())]


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_options_follow_tensorflow_eagerly(case):
    problems, _ = _option_problems(np.float32)
    opt, w, b = problems[case]
    for t, expected in enumerate(TF_TRAJECTORIES[case], start=1):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(np.float32(CW) * w) + np.float32(CB) * b
            loss = loss + 0.5 * (tf.reduce_sum(w * w) + b * b)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        assert w.dtype == np.float32
        np.testing.assert_allclose(_state(problems[case]), expected, rtol=1e-6,
                                   err_msg=f"step {t}")


@pytest.mark.slow
def test_options_follow_tensorflow_in_one_compiled_step():
    problems, step = _option_problems(np.float32)
    step = tf.differentiable(step)
    for t in range(3):
        step(np.float32(CW), np.float32(CB))
        for case, problem in problems.items():
            np.testing.assert_allclose(_state(problem), TF_TRAJECTORIES[case][t], rtol=1e-6,
                                       err_msg=f"{case}, step {t + 1}")
    assert step.cache_info().misses == 1


@pytest.mark.parametrize("jit", ["1", "0"])
def test_options_compiled_equal_eager_in_float64(jit, monkeypatch):
    """The compiled step (Numba's, and its code run as Python) equals the eager one."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    runs = []
    for compiled in (False, True):
        problems, step = _option_problems(np.float64)
        if compiled:
            step = tf.differentiable(step)
        for _ in range(4):
            step(np.float64(CW), np.float64(CB))
        runs.append(problems)
    eager, comp = runs
    for case in OPTION_CASES:
        (oe, *pe), (oc, *pc) = eager[case], comp[case]
        for e, c in zip(pe + oe.variables, pc + oc.variables):
            assert c.dtype == e.dtype == (np.int64 if e is oe.iterations else np.float64)
            np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-13, err_msg=case)
    nadam = eager["nadam"][0]
    assert nadam.variables[-1].name.startswith("Nadam/u_product")


def test_weight_decay_in_the_functional_form():
    new = SGD(0.5, weight_decay=0.1).apply([np.array([2.0])], [np.array([4.0])])
    # 4 - 4 * 0.1 * 0.5, then - 0.5 * 2
    np.testing.assert_allclose(new[0].numpy(), [2.8], rtol=1e-15)


def test_changing_weight_decay_traces_again():
    w = tf.Variable(np.ones(2))
    opt = SGD(0.5, weight_decay=0.0)
    step = _compiled_linear_step(w, opt)
    step(np.zeros(2))
    opt.weight_decay = 0.2
    step(np.zeros(2))
    np.testing.assert_allclose(w.numpy(), [0.9, 0.9], rtol=1e-15)
    assert step.cache_info().misses == 2


def test_option_defaults_and_errors():
    assert AdamW().get_config()["weight_decay"] == 0.004
    assert Adam().get_config()["weight_decay"] is None
    assert Adagrad().get_config() == {
        "name": "Adagrad", "learning_rate": 0.001, "weight_decay": None, "clipnorm": None,
        "clipvalue": None, "global_clipnorm": None, "initial_accumulator_value": 0.1,
        "epsilon": 1e-7}
    w = tf.Variable(np.ones(2))
    opt = Adagrad()
    opt.apply_gradients([(np.zeros(2), w)])
    np.testing.assert_array_equal(opt.get_slot(w, "accumulator").numpy(), [0.1, 0.1])
    with pytest.raises(ValueError, match="weight_decay"):
        AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="only one of"):
        SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(TypeError, match="clipvalue"):
        Nadam(clipvalue="big")


# ----- behaviours the optimizers rely on -----


def test_variables_passed_as_arguments():
    opt = SGD(0.5)

    @tf.differentiable
    def step(params, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(params["w"] * x)
        grads = tape.gradient(loss, params)
        opt.apply(grads, params)
        return loss

    a = {"w": tf.Variable(np.ones(2))}
    b = {"w": tf.Variable(np.full(2, 5.0))}
    step(a, np.ones(2))
    assert float(step(b, np.ones(2))) == 10.0
    np.testing.assert_allclose(b["w"].numpy(), [4.5, 4.5])
    np.testing.assert_allclose(a["w"].numpy(), [0.5, 0.5])


def test_returning_variables():
    params = {"w": tf.Variable(np.ones(2))}
    opt = SGD(0.5)

    @tf.differentiable
    def step(x):
        opt.apply({"w": x}, params)
        return params

    step(np.ones(2))
    out = step(np.ones(2))
    np.testing.assert_allclose(np.asarray(out["w"]), [0.0, 0.0])


def test_gradient_dict_keeps_the_key_order():
    params = {"w": tf.Variable(np.ones(2)), "b": tf.Variable(np.float64(1.0))}
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(params["w"]) + params["b"]
    assert list(tape.gradient(loss, params)) == ["w", "b"]


@pytest.mark.parametrize("copied", [copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))],
                         ids=["deepcopy", "pickle"])
def test_a_copied_optimizer_keeps_its_slots_for_the_copied_parameters(copied):
    """A Variable's copy has an id of its own, which slots were keyed by: a copied Adam
    found no moments for the copied parameters and restarted them from zero, silently
    (helper 75). Copied with its parameters, it goes on as the original does."""
    w = tf.Variable(np.array([1.0, -2.0]))
    opt = tf.optimizers.Adam(0.1)

    def step(w, opt):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    for _ in range(2):
        step(w, opt)
    w2, opt2 = copied((w, opt))
    np.testing.assert_array_equal(opt2.get_slot(w2, "m").numpy(), opt.get_slot(w, "m").numpy())
    step(w, opt)
    step(w2, opt2)
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    assert opt2.iterations.numpy() == opt.iterations.numpy() == 3


def test_a_schedule_giving_a_python_float_moves_float64_parameters_by_it():
    """The schedule's 0.1 became a float32 tensor: w = 1 moved to 0.8999999985098839
    (helper 95); a fixed rate of 0.1 gave 0.9."""
    w = tf.Variable(1.0, dtype=tf.float64)
    tf.keras.optimizers.SGD(lambda iterations: 0.1).apply_gradients(
        [(tf.constant(1.0, tf.float64), w)])
    assert w.numpy().item() == 0.9


def test_a_variables_constraint_projects_each_update_eagerly_and_compiled():
    # Helper 128: Variable(constraint=..., shape=...) raised TypeError, so Keras's weight
    # constraints could not be written; assign(read_value=False) returned the Variable.
    def non_negative(w):
        return tf.maximum(w, 0.0)

    def stepping(w, opt):
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum((w - x) ** 2)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss

        return step

    for compiled in (False, True):
        w = tf.Variable([1.0, -2.0, 3.0], constraint=non_negative, shape=[3])
        step = stepping(w, tf.keras.optimizers.SGD(0.5))
        run = tf.differentiable(step, wrt=()) if compiled else step
        assert float(run(np.array([0.0, -5.0, 1.0]))) == 14.0
        assert w.numpy().tolist() == [0.0, 0.0, 1.0]  # [0, -5, 1] before the projection
    assert w.assign([1.0, 1.0, 1.0], read_value=False) is None
    assert w.assign_add([1.0, 1.0, 1.0]) is w and w.numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="initial value of shape .3,. for shape .2."):
        tf.Variable([1.0, 2.0, 3.0], shape=[2])
    with pytest.raises(ValueError, match="constraint must be callable"):
        tf.Variable([1.0], constraint=3)


def test_a_variables_shape_may_be_an_int():
    assert tf.Variable(np.zeros(3), shape=3).shape == (3,)  # helper 130: a raw TypeError
