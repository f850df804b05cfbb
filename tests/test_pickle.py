"""Compiled functions and their forms pickle, with pickle (by reference where the function
is importable by name, else by value through cloudpickle) and with cloudpickle, and run in
another process with the right results; a process that receives one compiles it once."""

import copy
import http
import importlib.util
import multiprocessing
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

import srcxform as tf

cloudpickle = pytest.importorskip("cloudpickle")

X = np.array([-0.5, 0.25, 1.5])


@tf.differentiable
def tanh_loss(x):
    """Importable by name: pickles by reference."""
    return tf.reduce_sum(tf.tanh(x) * x)


def cubic(x):
    return tf.reduce_sum(x ** 3)


def _scaled(scale):
    """A closure: pickles by value."""
    return tf.differentiable(lambda x: scale * tf.reduce_sum(x * x))


def _two_args(w, b):
    return tf.reduce_sum(w * w * b)


def _with_aux(x):
    return tf.reduce_sum(x * x), tf.reduce_max(x)


def _d_tanh_loss(x):
    return np.tanh(x) + x * (1 - np.tanh(x) ** 2)


_lambda = tf.differentiable(lambda x: tf.reduce_sum(tf.tanh(x) * x))


def _assigning():
    """A step updating a Variable made after others: its pickled id was past the
    receiving process's, which took it for one made while tracing (helper 74)."""
    _made_before = [tf.Variable(0.0) for _ in range(50)]
    v = tf.Variable(np.zeros(3))
    return tf.differentiable(lambda x: tf.reduce_sum(v.assign_add(x)))

# name: (the form, its arguments, the expected result)
FORMS = {
    "decorated": (tanh_loss, (X,), np.sum(np.tanh(X) * X)),
    "decorated.grad": (tanh_loss.grad, (X,), _d_tanh_loss(X)),
    "lambda.grad": (_lambda.grad, (X,), _d_tanh_loss(X)),
    "lambda.value_and_grad": (_lambda.value_and_grad, (X,),
                              (np.sum(np.tanh(X) * X), _d_tanh_loss(X))),
    "closure.grad": (_scaled(3.0).grad, (X,), 6.0 * X),
    "tf.grad": (tf.grad(cubic), (X,), 3 * X ** 2),
    "tf.value_and_grad": (tf.value_and_grad(cubic), (X,), (np.sum(X ** 3), 3 * X ** 2)),
    "tf.jacobian": (tf.jacobian(lambda x: tf.tanh(x)), (X,), np.diag(1 - np.tanh(X) ** 2)),
    "tf.hessian": (tf.hessian(cubic), (X,), np.diag(6 * X)),
    "wrt tuple": (tf.differentiable(_two_args, wrt=(0, 1)).grad, (X, 2.0),
                  (4.0 * X, np.sum(X * X))),
    "has_aux": (tf.differentiable(_with_aux, has_aux=True).value_and_grad, (X,),
                ((np.sum(X * X), X.max()), 2 * X)),
    "tf.function": (tf.function(cubic), (X,), np.sum(X ** 3)),
    "assigning a Variable": (_assigning(), (X,), np.sum(X)),
}


def _assert_tree_close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), got
        for g, w in zip(got, want):
            _assert_tree_close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def _call_pickled(payload, args):
    """In the child: the form unpickled and called (np.asarray: a Tensor's value)."""
    result = pickle.loads(payload)(*args)
    return _as_arrays(result)


def _as_arrays(tree):
    return tuple(map(_as_arrays, tree)) if isinstance(tree, tuple) else np.asarray(tree)


@pytest.fixture(scope="module")
def spawned():
    """One fresh interpreter (spawn) for every round trip: it imports what it unpickles."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        yield pool


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("name", list(FORMS))
def test_round_trip_runs_in_a_spawned_process(spawned, dumps, name):
    form, args, want = FORMS[name]
    _assert_tree_close(spawned.apply(_call_pickled, (dumps(form), args)), want)


def test_the_reproducer():
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.tanh(x) * x))
    g = pickle.loads(pickle.dumps(f.grad))
    assert g(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    h = cloudpickle.loads(cloudpickle.dumps(f.value_and_grad))
    assert float(h(np.zeros(3))[0]) == 0.0


def test_importable_function_pickles_by_reference():
    assert pickle.loads(pickle.dumps(tanh_loss)) is tanh_loss
    assert pickle.loads(pickle.dumps(tanh_loss.grad)).__self__ is tanh_loss
    assert b"tanh_loss" in pickle.dumps(tanh_loss) and len(pickle.dumps(tanh_loss)) < 100


def test_pickled_state_holds_no_kernel_lock_or_weakref():
    _lambda.grad(X)  # compiled: it holds a kernel, a lock and weak references
    pickle.dumps(_lambda.grad)
    payload = _lambda.__reduce__()[1][0]  # (beside it, the lines of this file)
    for absent in (b"RLock", b"weakref", b"Kernel", b"Dispatcher"):
        assert absent not in payload


def test_a_process_makes_one_function_of_equal_payloads():
    payload = cloudpickle.dumps(_scaled(2.0))
    first, second = pickle.loads(payload), pickle.loads(payload)
    assert first is second
    first.grad(X)
    second.grad(X)
    assert second.cache_info().misses == 1 and second.cache_info().hits == 1


def test_each_unpickling_of_a_step_holding_a_variable_has_its_own():
    """As pickle.loads makes them: the one function per payload carried a task's updates
    of its Variable into the next task's copy (helper 74)."""
    payload = pickle.dumps(_assigning())
    first, second = pickle.loads(payload), pickle.loads(payload)
    assert first is not second
    assert float(first(X)) == float(second(X)) == np.sum(X)


class _LazyModel:
    """Keras's build pattern: its Variable is made at the first call."""

    w = None

    def __call__(self, x):
        if self.w is None:
            self.w = tf.Variable(np.ones(X.shape))
        return tf.reduce_sum(self.w * x)


class _SlottedLazyModel:
    __slots__ = ("w",)
    __call__ = _LazyModel.__call__

    def __init__(self):
        self.w = None


def _lazy_step(model):
    def step(x):
        with tf.GradientTape() as tape:
            loss = model(x)
        model.w.assign_sub(tape.gradient(loss, model.w))
        return loss
    return tf.differentiable(step)


def test_each_unpickling_of_a_step_holding_a_model_not_yet_built_has_its_own():
    """Helpers 107, 110: a step whose model makes its Variables at its first call held none
    when pickled (a model with __slots__ too), so equal payloads gave one function: each
    task trained the last one's. A closure over NumPy's ufunc or a stdlib enum holds no
    state of its own: one function a process still."""
    for model in (_LazyModel(), _SlottedLazyModel()):
        payload = pickle.dumps(_lazy_step(model))
        first, second = pickle.loads(payload), pickle.loads(payload)
        assert first is not second
        assert float(first(X)) == float(second(X)) == np.sum(X)
    status = http.HTTPStatus.OK
    payload = pickle.dumps(tf.differentiable(lambda x: tf.reduce_sum(np.tanh(x)) * status))
    assert pickle.loads(payload) is pickle.loads(payload)


def test_without_cloudpickle_a_lambda_is_refused_by_name(monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # its import raises ImportError
    with pytest.raises(pickle.PicklingError, match="install cloudpickle to pickle it by value"):
        pickle.dumps(tf.differentiable(lambda x: tf.reduce_sum(x)))
    assert pickle.loads(pickle.dumps(tf.grad(cubic)))(X).tolist() == (3 * X ** 2).tolist()


def test_options_survive_the_round_trip():
    f = tf.differentiable(_two_args, wrt=(0, 1), parallel=False, check=True, has_aux=False)
    g = pickle.loads(pickle.dumps(f))
    assert (g.wrt, g.check, g.has_aux) == ((0, 1), True, False)
    jac = pickle.loads(pickle.dumps(tf.jacobian(cubic)))
    assert isinstance(jac(X), np.ndarray)  # jacobian's arrays, not Tensors
    assert pickle.loads(pickle.dumps(tf.function(cubic)))._tf_rules


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_pool_map_of_grad(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    batches = [X, 2 * X, X[:2]]
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(_lambda.grad, batches)
    for got, x in zip(results, batches):
        np.testing.assert_allclose(got, _d_tanh_loss(x), rtol=1e-12)


_BRANCHING_SCRIPT = """
import multiprocessing
import numpy as np
import srcxform as tf


def sign_of(y):
    if tf.reduce_sum(y) > 0:
        z = y * 2.0
    else:
        z = -y
    return z


@tf.differentiable
def loss(x):
    t = tf.reduce_sum(x)
    if t > 0:
        t = t * t
    for i in tf.range(3):
        t = t + tf.reduce_sum(sign_of(x))
    return t


if __name__ == "__main__":
    x = np.array([1.0, 2.0])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(*(g.tolist() for g in pool.map(loss.grad, [x, -x])))
"""


def test_a_function_of_main_with_branches_runs_in_a_spawned_process(tmp_path):
    # Helper 110: cloudpickle names the code of a function of __main__ <dynamic-code>, so
    # in the worker autograph could not read it and an `if` on a traced value raised
    # TracingError; its file's lines now travel with it.
    script = tmp_path / "branching.py"
    script.write_text(_BRANCHING_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=False, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[12.0,", "12.0]", "[-2.0,", "-2.0]"]


_TOKEN = """
import srcxform as tf
from dask.base import tokenize
f = tf.differentiable(lambda x: tf.reduce_sum(x * x), wrt=0)
print(tokenize(f), tokenize(f.grad), tokenize(tf.differentiable(f.fn, wrt=(0,))))
"""


def test_dask_token_is_the_same_in_every_process(tmp_path):
    pytest.importorskip("dask")
    script = tmp_path / "print_tokens.py"  # not token.py: a standard module
    script.write_text(_TOKEN)
    runs = []
    for _ in range(2):
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             check=False)
        assert run.returncode == 0, run.stderr
        runs.append(run.stdout.split())
    assert runs[0] == runs[1]
    value, grad, other_options = runs[0]
    assert len({value, grad, other_options}) == 3


_FACTORY = """
import srcxform as tf


def make(scale):
    def loss(w, x):
        if tf.reduce_sum(x) > 0.0:
            y = tf.reduce_sum(tf.{op}(x * w)) * scale
        else:
            y = tf.reduce_sum(x * w)
        return y
    return tf.differentiable(loss)
"""


def test_two_files_functions_of_one_name_and_line_arrive_apart(tmp_path, monkeypatch):
    # Helper 122: the file of code arriving by value was keyed by its name, line and
    # bytecode, which these two share (tanh and sin are names): the second to arrive
    # took the first's file, so its `if` was not converted (TracingError).
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    w, x = np.array([0.5, 1.0]), np.array([1.0, 2.0])
    made = {}
    for op in ("tanh", "sin"):
        path = tmp_path / f"factory_{op}.py"
        path.write_text(_FACTORY.replace("{op}", op))
        spec = importlib.util.spec_from_file_location(f"factory_{op}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        made[op] = pickle.loads(pickle.dumps(module.make(2.0)))
    for op, f in made.items():
        value, grad = f.value_and_grad(w, x)
        assert value == pytest.approx(2.0 * np.sum(getattr(np, op)(x * w)))
        np.testing.assert_allclose(grad, 2.0 * x / np.cosh(x * w) ** 2 if op == "tanh"
                                   else 2.0 * x * np.cos(x * w))


class _Scaled:
    def __init__(self, k):
        self.k = k

    @tf.differentiable
    def loss(self, x):
        return self.k * tf.reduce_sum(x * x)

    @tf.function
    def doubled(self, x):
        return x * 2.0


def test_a_method_pickled_again_and_again_stays_one_method():
    # Helper 122: a bound method pickles as getattr(obj, name), which binds it anew, so
    # each round trip wrapped one more compiled function round the last (depth 2, 3, 4,
    # the payload 90 bytes longer each time).
    for method in (_Scaled(3.0).loss, _Scaled(3.0).doubled):
        sizes = []
        for _ in range(3):
            payload = pickle.dumps(method)
            sizes.append(len(payload))
            method = pickle.loads(payload)
            assert isinstance(method.fn, types.MethodType)  # the function itself, bound
        assert sizes[0] == sizes[1] == sizes[2]
    assert float(method(X)[0]) == -1.0 and method.fn.__self__.k == 3.0



class _Base:
    def __init__(self, s):
        self.s = s

    @tf.differentiable
    def f(self, x):
        return tf.reduce_sum(x * self.s)

    g = f


class _Sub(_Base):
    @tf.differentiable
    def f(self, x):
        return 10 * _Base.f(self, x)


def test_a_copy_of_a_method_is_the_same_classs_method():
    # Helper 126: a copy of super(Sub, s).f, or of an alias g = f in the base, was
    # rebound as getattr(s, "f"): the subclass's override (90 for 9).
    s, x = _Sub(3.0), np.array([1.0, 2.0])
    for method in (super(_Sub, s).f, s.g, s.f):
        want = float(method(x))
        for copied in (copy.deepcopy(method), pickle.loads(pickle.dumps(method))):
            assert float(copied(x)) == want
    assert float(s.f(x)) == 90.0 and float(s.g(x)) == 9.0



def test_code_differing_in_a_constant_equal_to_another_has_its_own_key():
    # Helper 126: 1 and 1.0 (and 0.0 and -0.0) are equal, so two files' functions that
    # differ only there still shared a key, and one took the other's file.
    from srcxform.autograph.rewrite import code_key

    def keyed(text):
        return code_key(compile(text, "<key>", "exec").co_consts[0])

    assert keyed("def f(x): return x * 1") != keyed("def f(x): return x * 1.0")
    assert keyed("def f(x): return x * 0.0") != keyed("def f(x): return x * -0.0")
    assert keyed("def f(x): return x * 2") == keyed("def f(x): return x * 2")
