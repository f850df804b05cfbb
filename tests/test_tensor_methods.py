"""Tensor, Variable and Tracer methods: formatting, the dtype creation ops report and
store, copies at the NumPy boundary, NumPy's array methods, and the tracer's errors."""

import numpy as np
import pytest

import srcxform as tf

# ----- formatting: TensorFlow formats the NumPy value -----


def test_format_without_spec_is_the_numpy_value():
    assert f"{tf.constant(9.0)}" == "9.0"
    assert f"{tf.constant(3)}" == "3"
    assert f"{tf.constant(True)}" == "True"
    assert f"{tf.add(2.0, 3.0)}" == "5.0"  # a weak value formats at the dtype it reports
    assert f"{tf.Variable(3.0) * tf.Variable(3.0)}" == "9.0"
    # An array with no spec is str(array), as NumPy's own formatting of it.
    assert f"{tf.constant([[1.0, 2.0], [3.0, 4.0]])}" == "[[1. 2.]\n [3. 4.]]"


def test_format_spec_of_an_array_raises_numpys_type_error():
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{tf.constant([1.0, 2.0]):.2f}"


# ----- creation ops: the dtype reported is the dtype stored -----


@pytest.mark.parametrize("make, dtype", [
    (lambda: tf.fill((2, 3), 3.0), tf.float32),
    (lambda: tf.fill([2], 7), tf.int32),
    (lambda: tf.fill([2], True), tf.bool),
    (lambda: tf.fill([2], np.float64(0.5)), tf.float64),
    (lambda: tf.ones_like(tf.constant([1.0, 2.0])), tf.float32),
    (lambda: tf.zeros_like(tf.constant([1, 2])), tf.int32),
    (lambda: tf.range(3), tf.int32),
    (lambda: tf.range(0.0, 1.0, 0.5), tf.float32),
    (lambda: tf.linspace(0.0, 1.0, 3), tf.float32),
    (lambda: tf.eye(2), tf.float32),
    (lambda: tf.ones(2), tf.float32),
    (lambda: tf.constant([1.0, 2.0], shape=(2, 1)), tf.float32),
    (lambda: tf.constant(tf.add(2.0, 3.0)), tf.float32),
])
def test_creation_ops_store_the_dtype_they_report(make, dtype):
    t = make()
    assert t.dtype == dtype and t.numpy().dtype == dtype
    assert tf.Variable(t).dtype == dtype


def test_variable_of_a_weak_value_takes_its_reported_dtype():
    assert tf.Variable(tf.add(2.0, 3.0)).dtype == tf.float32
    assert tf.Variable(tf.fill((2, 3), 3.0)).dtype == tf.float32


# ----- copies at the NumPy boundary -----


def test_a_tape_sees_the_array_a_constant_was_made_from_not_its_later_changes():
    a = np.array([1.0, 2.0, 3.0])
    c = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(c)
        y = c * c
    a[:] = 10.0
    np.testing.assert_array_equal(tape.gradient(y, c).numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("convert", [
    tf.constant, tf.convert_to_tensor, tf.Variable,
    lambda a: tf.constant(a, dtype=tf.float32), lambda a: tf.Variable(a, dtype=tf.float32),
])
def test_conversions_copy_a_numpy_array(convert):
    a = np.array([1.0, 2.0])
    t = convert(a)
    a[0] = 9.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_a_variable_made_from_a_tensor_keeps_its_value_when_assigned():
    t = tf.constant([1.0, 2.0])
    v = tf.Variable(t)
    v.assign([5.0, 6.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])


@pytest.mark.parametrize("make", [lambda: tf.constant([1.0, 2.0]),
                                  lambda: tf.Variable([1.0, 2.0])])
def test_numpy_returns_a_copy_and_asarray_a_readonly_view(make):
    t = make()
    array = t.numpy()
    array[0] = 9.0
    shared = np.asarray(t)
    assert not shared.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        shared[0] = 9.0
    copied = np.array(t)  # np.array copies: a writeable array of one's own
    copied[0] = 9.0
    assert np.asarray(t, dtype=np.float64).flags.writeable
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_asarray_of_a_weak_value_has_its_reported_dtype():
    assert np.asarray(tf.add(2.0, 3.0)).dtype == np.float32
    assert tf.add(2.0, 3.0).numpy().dtype == np.float32


# ----- NumPy's array methods -----

MATRIX = np.array([[1.0, -2.0, 3.0], [4.0, 0.5, -6.0]])

METHOD_CALLS = {
    "sum": lambda a: a.sum(),
    "sum axis keepdims": lambda a: a.sum(axis=0, keepdims=True),
    "sum dtype": lambda a: a.sum(1, np.float32),
    "mean": lambda a: a.mean(axis=1),
    "max": lambda a: a.max(),
    "max axis keepdims": lambda a: a.max(axis=1, keepdims=True),
    "min": lambda a: a.min(0),
    "prod": lambda a: a.prod(axis=(0, 1)),
    "reshape tuple": lambda a: a.reshape((3, 2)),
    "reshape args": lambda a: a.reshape(3, -1),
    "reshape int": lambda a: a.reshape(6),
    "transpose": lambda a: a.transpose(),
    "transpose args": lambda a: a.transpose(1, 0),
    "transpose tuple": lambda a: a.transpose((1, 0)),
    "astype": lambda a: a.astype(np.float32),
    "astype int": lambda a: a.astype(np.int32),
    "dot": lambda a: a.dot(np.arange(3.0)),
    "flatten": lambda a: a.flatten(),
    "ravel": lambda a: a.ravel(),
    "squeeze": lambda a: a.reshape(1, 6, 1).squeeze(),
    "squeeze axis": lambda a: a.reshape(1, 6, 1).squeeze(axis=0),
    "clip": lambda a: a.clip(-1.0, 2.0),
    "clip max keyword": lambda a: a.clip(max=2.0),
}


@pytest.mark.parametrize("call", METHOD_CALLS.values(), ids=METHOD_CALLS.keys())
@pytest.mark.parametrize("make", [tf.constant, tf.Variable], ids=["Tensor", "Variable"])
def test_methods_give_numpys_values_and_dtypes(call, make):
    expected = call(MATRIX)
    got = call(make(MATRIX))
    assert isinstance(got, tf.Tensor)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


def test_methods_follow_numpys_dtypes_for_integers():
    ints = np.array([[1, 2], [3, 4]], dtype=np.int32)
    t = tf.constant(ints)
    assert t.sum().dtype == ints.sum().dtype == np.int64
    assert t.mean().dtype == np.float64 and t.mean().numpy() == 2.5
    assert t.max().dtype == np.int32


def test_item_gives_a_python_scalar():
    t = tf.constant([[1.5, 2.5]])
    assert t[0, 1].item() == 2.5 and type(t[0, 1].item()) is float
    assert t.item(1) == 2.5
    assert tf.Variable(3).item() == 3 and type(tf.Variable(3).item()) is int
    with pytest.raises(ValueError, match="size 1"):
        t.item()


def test_unsupported_method_arguments_raise():
    with pytest.raises(TypeError, match="out"):
        tf.constant(MATRIX).sum(out=np.empty(3))
    with pytest.raises(TypeError, match="order"):
        tf.constant(MATRIX).flatten(order="F")


def numpy_style_loss(w, x):
    """A loss written for NumPy arrays, with every method that has a gradient."""
    h = x.dot(w).reshape(-1, 2).transpose()
    s = h.clip(-2.0, 2.0).sum(axis=1, keepdims=True)
    m = h.mean(0).max() + h.min() + h.prod(axis=0).sum()
    f = h.astype(np.float64).flatten().ravel()
    q = w.reshape(1, 3).squeeze().transpose((0,))
    return s.sum() * 0.5 + m + (f * f).mean() + q.dot(q)


@pytest.mark.slow  # one program of every method, compiled
def test_methods_are_differentiable_eagerly_and_compiled():
    from srcxform.testing import check_grads

    rng = np.random.default_rng(0)
    w, x = rng.standard_normal(3), rng.standard_normal((4, 3))
    expected = numpy_style_loss(w, x)  # plain NumPy arrays: the same code
    np.testing.assert_allclose(numpy_style_loss(tf.constant(w), tf.constant(x)).numpy(),
                               expected, rtol=1e-14)
    np.testing.assert_allclose(tf.differentiable(numpy_style_loss)(w, x), expected, rtol=1e-14)
    check_grads(numpy_style_loss, [w, x], compiled=True)


def test_a_variables_methods_are_watched_by_the_tape():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = v.reshape(4).dot(tf.constant([1.0, 2.0, 3.0, 4.0])) + v.T.sum()
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[2.0, 3.0], [4.0, 5.0]])


# ----- a traced value's errors name the user's line -----


def _line_of(text):
    """`test_tensor_methods.py:<n>` of the line in this file that contains `text`."""
    with open(__file__) as source:
        number = next(i for i, line in enumerate(source, 1)
                      if text in line and "_line_of" not in line)
    return f"test_tensor_methods.py:{number}:"


def _unknown_attribute(x):
    return x.frobnicate()


def _nonzero_method(x):  # NumPy's method, not srcxform's (its shape depends on the values)
    return x.nonzero()


def _item_assignment(x):
    x[0] = 1.0
    return x


def _item_of_traced(x):
    return x.sum().item()


def _variable_of_traced(x):
    return tf.Variable(x)


def _round_of_traced(x):
    return round(x.sum(), 2)


@pytest.mark.parametrize("fn, line, says", [
    (_unknown_attribute, "return x.frobnicate()", ".frobnicate of a traced value"),
    (_nonzero_method, "return x.nonzero()", ".nonzero of a traced value"),
    (_item_assignment, "x[0] = 1.0", "srcxform.where"),
    (_item_of_traced, "return x.sum().item()", ".item() of a traced value"),
    (_variable_of_traced, "return tf.Variable(x)", "a Variable's initial value"),
    (_round_of_traced, "return round(x.sum(), 2)", "round() of a traced value"),
])
def test_tracer_errors_name_the_users_line_and_the_alternative(fn, line, says):
    with pytest.raises(tf.TracingError) as info:
        tf.differentiable(fn)(np.ones(3))
    message = str(info.value)
    assert message.startswith(_line_of(line)) and line in message and says in message


def test_an_unknown_attribute_of_a_tracer_is_still_an_attribute_error():
    seen = []

    def probe(x):
        seen.append((hasattr(x, "frobnicate"), getattr(x, "numpy_only", None),
                     hasattr(x, "__array_interface__"), hasattr(x, "sum")))
        with pytest.raises(AttributeError, match="no attribute '_private'") as private:
            _ = x._private
        assert not isinstance(private.value, tf.TracingError)  # Python's own probe: a miss
        return x.sum()

    assert tf.differentiable(probe)(np.ones(3)) == 3.0
    assert seen[0] == (False, None, False, True)  # traced (SRCXFORM_CHECK runs it eagerly too)


def _numpy_methods(x):
    square = x.reshape(2, 2)
    return (x.var(), x.std(0), x.cumsum(), x.cumprod(), x.argmax(), x.argmin(), x.round(),
            x.copy(), x.repeat(2), x.take([0, 2]), x.any(), x.all(), x.size, square.trace(),
            square.diagonal())


def test_numpy_methods_that_are_its_functions_compile():
    """x.var(), x.cumsum(), x.size, ... raised AttributeError (helper 137; x.var() the
    tracer's `var` before helper 85): NumPy code calls them on arrays. Each is NumPy's
    function of the array, compiled as NumPy computes it; the gradient of var and std too
    (the check, SRCXFORM_CHECK, compares it with the tape's)."""
    x = np.array([1.5, -2.0, 3.25, 0.5])
    for got, want in zip(tf.differentiable(_numpy_methods, wrt=())(x), _numpy_methods(x)):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-15)
    mean = x.mean()
    np.testing.assert_allclose(tf.differentiable(lambda x: x.var()).grad(x),
                               2 * (x - mean) / x.size, rtol=1e-14)
    assert tf.constant([[1.0, 2.0]]).size == 2
