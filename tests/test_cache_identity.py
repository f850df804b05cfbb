"""Cache identity: a kernel is reused, in this process or from the on-disk index in another,
only for a function that computes the same thing. Functions sharing a name (lambdas, the
wrappers jacobian, hessian and check_grads make) are told apart by what they close over;
a function that may read a global the digest cannot see is not indexed."""

import os
import subprocess
import sys
import textwrap

import numpy as np

import srcxform as tf
from srcxform.jit import index
from srcxform.testing import check_grads

SCALE = 2.0


def power(k):
    """Functions with one name, one qualname and one code, differing in a cell."""
    return lambda x: x ** k


def scaled(k):
    return lambda x: k * x * x


def test_jacobian_and_hessian_tell_functions_of_one_name_apart():
    assert tf.jacobian(lambda x: x ** 2)(3.0) == 6.0
    assert tf.jacobian(lambda x: x ** 3)(3.0) == 27.0
    assert tf.hessian(lambda x: x ** 3)(3.0) == 18.0


def test_check_grads_wrappers_of_functions_of_one_name_differ():
    check_grads(lambda x: x * x, [np.float64(2.0)])
    check_grads(lambda x: x * x * x, [np.float64(2.0)])  # compiled 4.0 (x * x's) before


def test_lambdas_made_in_a_loop_keep_their_own_constants():
    grads = [tf.grad(f)(1.0) for f in [scaled(k) for k in (2.0, 3.0)]]
    assert grads == [4.0, 6.0]
    defaults = [lambda x, k=k: k * x * x for k in (2.0, 3.0)]
    assert [tf.grad(f)(1.0) for f in defaults] == [4.0, 6.0]


def test_library_closures_are_described_by_their_cells():
    digest = index.function_digest
    first = digest(tf.jacobian(power(2)))
    assert first is not None and first == digest(tf.jacobian(power(2)))  # indexable
    assert digest(tf.jacobian(power(2))) != digest(tf.jacobian(power(3)))
    assert digest(tf.hessian(power(2))) != digest(tf.hessian(power(3)))
    assert digest(tf.grad(power(2))) != digest(tf.grad(power(3)))
    assert digest(tf.value_and_grad(power(2))) != digest(tf.value_and_grad(power(3)))
    hessians = [tf.hessian(lambda x, y: x * y * y, wrt=w) for w in (0, 1)]
    assert digest(hessians[0]) != digest(hessians[1])
    # A library function defined at import time is its name (tf.zeros's default dtype is
    # an object the digest could not describe).
    assert digest(lambda x: tf.zeros(3) + x) is not None


def test_one_function_met_twice_is_not_confused_with_another_of_its_name():
    two, three = scaled(2.0), scaled(3.0)

    def calls(a, b, c):
        return lambda x: a(x) + b(x) + c(x)

    assert index.function_digest(calls(two, three, two)) != \
        index.function_digest(calls(two, three, three))


def reads_globals(x):
    return globals()["SCALE"] * x


def evaluates(x):
    return eval("SCALE") * x


def reads_a_functions_globals(x):
    return reads_globals.__globals__["SCALE"] * x


def reads_them_by_getattr(x):
    return getattr(reads_globals, "__globals__")["SCALE"] * x  # noqa: B009 (the point)


def reads_a_computed_attribute(x, name="SCALE"):
    return getattr(tf, name) * x


def imports_a_module_of_its_own(x):
    from tests import helpers

    return helpers.SCALE * x


def test_functions_that_may_read_unseen_globals_are_not_indexed():
    for fn in (reads_globals, evaluates, reads_a_functions_globals, reads_them_by_getattr,
               reads_a_computed_attribute, imports_a_module_of_its_own):
        assert index.function_digest(fn) is None, fn.__name__

    def imports_a_library(x):
        import numpy

        return numpy.float64(SCALE) * x

    assert index.function_digest(imports_a_library) is not None


def test_a_functions_attributes_are_in_its_digest():
    def f(x):
        return f.scale * x

    f.scale = 2.0
    before = index.function_digest(f)
    f.scale = 3.0
    assert before is not None and index.function_digest(f) != before


SCRIPT = """
    import sys
    import srcxform as tf

    SCALE = float(sys.argv[1])

    def scaled(x):
        return globals()["SCALE"] * x * x

    def power(k):
        return lambda x: x ** k

    f = tf.differentiable(scaled)
    print(f.grad(1.0), f.cache_info().loaded)
    for k in map(int, sys.argv[2].split(",")):
        jac = tf.jacobian(power(k))
        print(jac(3.0), jac.cache_info().loaded)
"""


def test_processes_sharing_an_index_reuse_only_what_computes_the_same(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent(SCRIPT))
    # The same srcxform as this process's, and one cache folder for both processes.
    root = os.path.dirname(os.path.dirname(tf.__file__))
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))

    def run(*args):
        done = subprocess.run([sys.executable, str(script), *args], env=env, check=False,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return [tuple(map(float, line.split())) for line in done.stdout.splitlines()]

    # (value, kernels loaded from the index) per line: scaled's gradient, then each jacobian.
    assert run("2.0", "2") == [(4.0, 0), (6.0, 0)]
    # scaled reads SCALE through globals(): never indexed. power(3)'s jacobian shares its
    # name and code with power(2)'s, not its cell; power(2)'s is found.
    assert run("3.0", "3,2") == [(6.0, 0), (27.0, 0), (6.0, 1)]
