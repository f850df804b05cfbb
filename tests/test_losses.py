"""srcxform.keras.losses: Keras's loss functions, against TensorFlow 2.21's values, by
finite differences, and compiled as eagerly; and tf.clip_by_global_norm / clip_by_norm.

The expected values were printed by TF 2.21 with Keras 3 (keras.losses.<name> on the
inputs below, as float64 and float32 arrays).
"""

import numpy as np
import pytest

import srcxform as tf
from srcxform.keras import losses
from srcxform.testing import check_grads

REG_T = [[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]]
REG_P = [[0.3, 1.5, -0.5], [-1.2, 2.0, 3.1]]
BIN_T = [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
BIN_P = [[0.1, 0.8, 1.0], [0.6, 0.0, 0.3]]  # 1.0 and 0.0 are clipped
BIN_X = [[-2.0, 0.5, 30.0], [1.5, -40.0, 0.0]]
CAT_T = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
CAT_P = [[0.05, 0.95, 0.0], [0.2, 0.6, 0.4]]  # the second row sums to 1.2
CAT_X = [[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]]
SPARSE = [1, 2]
KL_T = [[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]]
KL_P = [[0.3, 0.6, 0.1], [0.0, 0.5, 0.5]]

L = losses
CASES = {
    "mse": lambda a: L.mean_squared_error(a(REG_T), a(REG_P)),
    "mae": lambda a: L.mean_absolute_error(a(REG_T), a(REG_P)),
    "huber": lambda a: L.huber(a(REG_T), a(REG_P)),
    "huber_0.7": lambda a: L.huber(a(REG_T), a(REG_P), delta=0.7),
    "bce": lambda a: L.binary_crossentropy(a(BIN_T), a(BIN_P)),
    "bce_smooth": lambda a: L.binary_crossentropy(a(BIN_T), a(BIN_P), label_smoothing=0.1),
    "bce_logits": lambda a: L.binary_crossentropy(a(BIN_T), a(BIN_X), from_logits=True),
    "bce_logits_smooth_axis0": lambda a: L.binary_crossentropy(
        a(BIN_T), a(BIN_X), from_logits=True, label_smoothing=0.2, axis=0),
    "cce": lambda a: L.categorical_crossentropy(a(CAT_T), a(CAT_P)),
    "cce_smooth": lambda a: L.categorical_crossentropy(a(CAT_T), a(CAT_P), label_smoothing=0.2),
    "cce_logits": lambda a: L.categorical_crossentropy(a(CAT_T), a(CAT_X), from_logits=True),
    "cce_logits_smooth": lambda a: L.categorical_crossentropy(
        a(CAT_T), a(CAT_X), from_logits=True, label_smoothing=0.2),
    "cce_axis0": lambda a: L.categorical_crossentropy(a(CAT_T), a(CAT_P), axis=0),
    "scce": lambda a: L.sparse_categorical_crossentropy(np.array(SPARSE), a(CAT_P)),
    "scce_logits": lambda a: L.sparse_categorical_crossentropy(np.array(SPARSE), a(CAT_X),
                                                               from_logits=True),
    "kld": lambda a: L.kl_divergence(a(KL_T), a(KL_P)),
}

TF_VALUES = {
    np.float64: {
        "mse": [2.1966666666666668, 0.7666666666666667],
        "mae": [1.0999999999999999, 0.6],
        "huber": [0.7233333333333333, 0.34166666666666673],
        "huber_0.7": [0.5583333333333333, 0.2766666666666666],
        "bce": [0.1095013889906803, 0.28916688923490935],
        "bce_smooth": [0.43786163048969295, 0.5786811978924709],
        "bce_logits": [0.20033499840772426, 0.29818681951423254],
        "bce_logits_smooth_axis0": [0.3391706445128624, 2.2620384920900536,
                                    1.8465735902800196],
        "cce": [0.05129329438755058, 1.0986122886681098],
        "cce_smooth": [1.3187093834366979, 1.1177910934982287],
        "cce_logits": [0.34901221676818633, 0.1064141042799557],
        "cce_logits_smooth": [0.615678883434853, 0.5064141042799557],
        "cce_axis0": [-0.0, 0.48954822531870573, 1.0000000494736474e-07],
        "scce": [0.05129339438754555, 1.0986122886681096],
        "scce_logits": [0.34901221676818633, 0.1064141042799557],
        "kld": [0.14905125478873618, 7.365900644919216],
    },
    np.float32: {
        "mse": [2.196666717529297, 0.7666666507720947],
        "mae": [1.100000023841858, 0.5999999642372131],
        "huber": [0.7233333587646484, 0.34166666865348816],
        "huber_0.7": [0.5583333373069763, 0.27666664123535156],
        "bce": [0.10950139909982681, 0.2891668975353241],
        "bce_smooth": [0.4349331855773926, 0.5786811709403992],
        "bce_logits": [0.20033498108386993, 0.2981868088245392],
        "bce_logits_smooth_axis0": [0.3391706347465515, 2.262038469314575, 1.8465726375579834],
        "cce": [0.051293306052684784, 1.0986123085021973],
        "cce_smooth": [1.3187094926834106, 1.1177911758422852],
        "cce_logits": [0.349012166261673, 0.10641411691904068],
        "cce_logits_smooth": [0.6156788468360901, 0.5064141154289246],
        "cce_axis0": [-0.0, 0.4895482063293457, 1.1920928955078125e-07],
        "scce": [0.05129344388842583, 1.0986123085021973],
        "scce_logits": [0.349012166261673, 0.10641411691904068],
        "kld": [0.14905120432376862, 7.36590051651001],
    },
}

TOL = {np.float64: {"rtol": 1e-13, "atol": 0}, np.float32: {"rtol": 1e-6, "atol": 0}}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", sorted(CASES))
def test_values_equal_tensorflow(case, dtype):
    got = CASES[case](lambda v: np.asarray(v, dtype=dtype))
    assert isinstance(got, tf.Tensor) and got.dtype == dtype
    np.testing.assert_allclose(got.numpy(), TF_VALUES[dtype][case], **TOL[dtype])


def test_keras_names():
    assert tf.keras.losses.mse is losses.mse is losses.mean_squared_error
    assert losses.mae is losses.mean_absolute_error
    assert losses.kld is losses.kullback_leibler_divergence is losses.kl_divergence
    assert tf.keras.optimizers.AdamW is tf.optimizers.AdamW


# ----- gradients and the compiled form -----


def _all_losses(reg_t, reg_p, bin_p, bin_x, cat_p, cat_x, labels, kl_p):
    """Every loss, with every option, at once: one kernel checks them all."""
    bin_t = tf.cast(tf.equal(labels[:, None] % 2, tf.range(3) % 2), reg_p.dtype)
    cat_t = tf.cast(tf.equal(labels[:, None], tf.range(3)), reg_p.dtype)
    return [
        L.mean_squared_error(reg_t, reg_p), L.mean_absolute_error(reg_t, reg_p),
        L.huber(reg_t, reg_p, delta=0.7),
        L.binary_crossentropy(bin_t, bin_p, label_smoothing=0.1),
        L.binary_crossentropy(bin_t, bin_x, from_logits=True, axis=0),
        L.categorical_crossentropy(cat_t, cat_p, label_smoothing=0.2),
        L.categorical_crossentropy(cat_t, cat_x, from_logits=True),
        L.categorical_crossentropy(cat_t, cat_p, axis=0),
        L.sparse_categorical_crossentropy(labels, cat_p),
        L.sparse_categorical_crossentropy(labels[:, None], cat_x, from_logits=True),
        L.kl_divergence(cat_p, kl_p),
    ]


def _inputs(n, seed):
    """Points away from the kinks: |error| far from 0 and delta, probabilities inside
    [0.05, 0.95] (clipping and abs are not differentiable at their corners)."""
    rng = np.random.default_rng(seed)
    reg_t = rng.normal(size=(n, 3))
    error = rng.choice([-1.0, 1.0], size=(n, 3)) * rng.uniform(0.1, 0.6, size=(n, 3))
    error[:, 0] *= 3.0  # beyond delta: Huber's linear branch
    probs = lambda: rng.uniform(0.05, 0.95, size=(n, 3))
    return [reg_t, reg_t + error, probs(), rng.normal(size=(n, 3)) * 3.0, probs(),
            rng.normal(size=(n, 3)) * 3.0, np.arange(n) % 3, probs()]


@pytest.mark.slow
def test_gradients_equal_finite_differences():
    """First order eager, compiled and numeric; second order eager and numeric (Huber's
    and the absolute error's kinks are away from these points)."""
    check_grads(_all_losses, _inputs(4, seed=0), order=2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_equals_eager_at_any_batch_size(jit, monkeypatch):
    """Numba's kernel, and the same code run as Python, at two batch sizes."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_all_losses)
    for n, seed in ((4, 1), (7, 2)):
        args = _inputs(n, seed)
        eager, got = _all_losses(*args), compiled(*args)
        assert len(got) == len(eager)
        for e, c in zip(eager, got):
            assert c.dtype == e.dtype and c.shape == e.shape
            np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-13, atol=1e-15)
    assert compiled.cache_info().misses == 1


# ----- numerical stability and Keras's shape rules -----


def test_saturated_inputs_give_finite_losses_and_gradients():
    logits = tf.constant(np.array([[1000.0, -1000.0, 0.0]]))
    probs = tf.constant(np.array([[1.0, 0.0, 0.0]]))
    labels = np.array([[0.0, 1.0, 0.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([logits, probs])
        out = {
            "bce_logits": L.binary_crossentropy(labels, logits, from_logits=True),
            "cce_logits": L.categorical_crossentropy(labels, logits, from_logits=True),
            "scce_logits": L.sparse_categorical_crossentropy([2], logits, from_logits=True),
            "bce": L.binary_crossentropy(labels, probs),
            "cce": L.categorical_crossentropy(labels, probs),
            "scce": L.sparse_categorical_crossentropy([1], probs),
        }
    # softplus(1000) - 0 + softplus(-1000) + 1000 + log 2, over 3; 2000; log(1 + e^-1000)
    np.testing.assert_allclose(out["bce_logits"].numpy(), [(2000 + np.log(2)) / 3])
    np.testing.assert_allclose(out["cce_logits"].numpy(), [2000.0])
    np.testing.assert_allclose(out["scce_logits"].numpy(), [1000.0])
    for name, loss in out.items():
        wrt = logits if "logits" in name else probs
        assert np.all(np.isfinite(loss.numpy())), name
        assert np.all(np.isfinite(tape.gradient(loss, wrt).numpy())), name
    # -log(epsilon) where the true class has probability 0
    np.testing.assert_allclose(out["cce"].numpy(), [-np.log(1e-7)], rtol=1e-12)


def test_sparse_labels_of_the_predictions_rank_are_squeezed():
    p = np.array([[0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])
    flat = L.sparse_categorical_crossentropy(np.array([1, 0]), p)
    column = L.sparse_categorical_crossentropy(np.array([[1.0], [0.0]]), p)  # float labels
    np.testing.assert_allclose(column.numpy(), flat.numpy(), rtol=1e-15)
    np.testing.assert_allclose(flat.numpy(), -np.log([0.7, 0.3]), rtol=1e-12)
    with pytest.raises(ValueError, match="axis=-1"):
        L.sparse_categorical_crossentropy(np.array([1, 0]), p, axis=0)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_sparse_label_out_of_range_gives_nan(compiled):
    f = L.sparse_categorical_crossentropy
    if compiled:
        f = tf.differentiable(f)
    loss = f(np.array([1, 3, -1]), np.ones((3, 3)) / 3)
    np.testing.assert_allclose(loss.numpy(), [np.log(3), np.nan, np.nan], rtol=1e-12)


def test_regression_losses_match_ranks_as_keras():
    y_true, y_pred = np.array([1.0, 2.0]), np.array([[1.5], [1.0]])
    # Keras gives y_true a last axis of 1: one error per sample.
    np.testing.assert_allclose(L.mean_squared_error(y_true, y_pred).numpy(), [0.25, 1.0])
    np.testing.assert_allclose(L.mean_absolute_error(y_pred, y_true).numpy(), [0.5, 1.0])
    labels = np.ones((2, 3, 1))
    assert L.huber(labels, np.zeros((2, 3))).shape == (2,)
    with pytest.raises(ValueError, match="same shape"):
        L.binary_crossentropy(np.ones((2, 3)), np.full((2, 1), 0.5))


# ----- clip_by_global_norm and clip_by_norm (values printed by TensorFlow 2.21) -----

A = np.array([[1.0, -2.0], [0.5, 3.0]])
B = np.array([2.0, -1.0, 0.25])
GLOBAL_NORM = 4.394598957811737


def test_clip_by_global_norm_equals_tensorflow():
    (a, none, b), norm = tf.clip_by_global_norm([A, None, B], 2.0)
    assert none is None
    np.testing.assert_allclose(norm.numpy(), GLOBAL_NORM, rtol=1e-15)
    np.testing.assert_allclose(a.numpy(), [[0.4551040991908594, -0.9102081983817188],
                                           [0.2275520495954297, 1.3653122975725782]],
                               rtol=1e-15)
    np.testing.assert_allclose(b.numpy(), [0.9102081983817188, -0.4551040991908594,
                                           0.11377602479771486], rtol=1e-15)
    (a, b), norm = tf.clip_by_global_norm((A, B), 10.0)  # within the norm: unchanged
    np.testing.assert_array_equal(a.numpy(), A)
    assert float(norm) == GLOBAL_NORM
    (a, b), norm = tf.clip_by_global_norm([A.astype(np.float32),
                                           np.array([np.inf], np.float32)], 1.0)
    assert a.dtype == np.float32 and np.isinf(norm.numpy())
    assert np.all(np.isnan(a.numpy())) and np.all(np.isnan(b.numpy()))
    with pytest.raises(TypeError, match="list or tuple"):
        tf.clip_by_global_norm(tf.constant(A), 1.0)


def test_clip_by_norm_equals_tensorflow():
    np.testing.assert_allclose(tf.clip_by_norm(A, 2.0).numpy(),
                               [[0.5298129428260175, -1.059625885652035],
                                [0.26490647141300877, 1.5894388284780525]], rtol=1e-15)
    np.testing.assert_allclose(tf.clip_by_norm(A, 1.5, axes=[1]).numpy(),
                               [[0.6708203932499369, -1.3416407864998738],
                                [0.24659848095803594, 1.4795908857482156]], rtol=1e-15)
    zero = tf.constant(np.zeros(2))
    with tf.GradientTape() as tape:
        tape.watch(zero)
        clipped = tf.clip_by_norm(zero, 1.0)
    np.testing.assert_array_equal(clipped.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(clipped, zero).numpy(), [1.0, 1.0])


def test_clipping_gradients_equal_finite_differences():
    def clipped(a, b):
        (ca, cb), norm = tf.clip_by_global_norm([a, b], 2.0)
        return [ca, cb, norm, tf.clip_by_norm(a, 1.5, axes=[1])]

    check_grads(clipped, [A, B], order=2, compiled=False)


def test_sigmoid_cross_entropy_is_exact_for_confident_logits():
    # Helper 125: softplus(x) - x * z cancelled for labels of 1 at large logits: float32
    # gave 0 for the loss at x = 17 (TensorFlow 2.21: 4.1399378e-08), 1.3% off in float64
    # at 30. The exact loss is log1p(exp(-x)), its gradient -sigmoid(-x); 0.5 - z at 0.
    x = np.array([0.0, 10.0, 17.0, 30.0, -30.0], np.float32)
    z = np.array([1.0, 1.0, 1.0, 1.0, 0.0], np.float32)
    exact = np.log1p(np.exp(-np.abs(x.astype(np.float64))))
    slope = np.array([-0.5, -np.exp(-10.0) / (1 + np.exp(-10.0)), -np.exp(-17.0),
                      -np.exp(-30.0), np.exp(-30.0)])
    for dtype in (np.float32, np.float64):
        logits = tf.constant(x.astype(dtype))
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z.astype(dtype),
                                                           logits=logits)
        np.testing.assert_allclose(loss.numpy(), exact, rtol=1e-6)
        np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), slope, rtol=1e-5)
    # Helper 126: the label's gradient is -x exactly (it cancelled near 0), and the
    # second derivative the label's none (a label of 0.5 halved it at 17).
    x = tf.constant([1e-6, 17.0], tf.float64)
    curvature = []
    for label in (0.0, 0.5, 1.0):
        z = tf.constant([label, label], tf.float64)
        with tf.GradientTape(persistent=True) as outer:
            outer.watch([x, z])
            with tf.GradientTape() as inner:
                inner.watch(x)
                loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
            slope = inner.gradient(loss, x)
        np.testing.assert_array_equal(outer.gradient(loss, z).numpy(), [-1e-6, -17.0])
        curvature.append(outer.gradient(slope, x).numpy())
    np.testing.assert_array_equal(curvature[0], curvature[1])
    np.testing.assert_array_equal(curvature[0], curvature[2])


def test_softsign_has_tensorflows_gradient_at_an_infinity():
    # Helper 125: x / (1 + |x|)'s own gradient there is inf / inf, NaN; TensorFlow's 0.
    x = tf.constant([np.inf, -np.inf, 0.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softsign(x)
    np.testing.assert_array_equal(y.numpy(), [np.nan, np.nan, 0.0, 0.75])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.0, 1.0, 0.0625])


def test_softsign_gradient_keeps_its_precision_at_large_inputs():
    # Helper 126: as the quotient's derivative, 1 / (1 + |x|) - x sign(x) / (1 + |x|) ** 2,
    # float32 gave 7.1e-15 for 1 / (1 + 1e7) ** 2 (TensorFlow 2.21: 9.999998e-15, as here).
    x = tf.constant([1e7, -1e7, 1e3], dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.nn.softsign(x)
        slope = tape.gradient(y, x)
    np.testing.assert_allclose(slope.numpy(), 1 / (1 + np.abs(x.numpy().astype(float))) ** 2,
                               rtol=1e-6)
    curvature = -2 * np.sign([1e7, -1e7, 1e3]) / (1 + np.array([1e7, 1e7, 1e3])) ** 3
    np.testing.assert_allclose(tape.gradient(slope, x).numpy(), curvature, rtol=1e-5)
    with pytest.raises(TypeError, match="softsign.*int32"):
        tf.nn.softsign(tf.constant([1, 2]))  # TensorFlow's takes floats only
