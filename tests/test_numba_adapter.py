"""numba_adapter: srcxform's uses of Numba's internals sit behind one gate, and with
SRCXFORM_NUMBA_INTERNALS=0 (or another Numba) it uses Numba's public API only, computing
the same results."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcxform as tf
from srcxform import numba_adapter
from srcxform.numba_adapter import jit as numba_jit


def matvec_loss(w, x):
    return tf.reduce_sum(tf.tanh(x @ w))


def _data():
    return np.linspace(-1.0, 1.0, 3), np.arange(12.0).reshape(4, 3) / 10


@pytest.mark.parametrize("off", ["env", "version"])
def test_the_gate_closes_for_the_switch_and_for_another_numba(monkeypatch, off):
    monkeypatch.delenv("SRCXFORM_NUMBA_INTERNALS", raising=False)
    assert numba_adapter.enabled()  # the Numba pyproject.toml allows
    if off == "env":
        monkeypatch.setenv("SRCXFORM_NUMBA_INTERNALS", "0")
    else:
        monkeypatch.setattr(numba_adapter, "VERSIONS", ("0.1",))
    assert not numba_adapter.enabled()


def test_switched_off_a_kernel_is_compiled_and_called_through_numbas_public_api(monkeypatch):
    from numba.core.caching import FunctionCache

    monkeypatch.setenv("SRCXFORM_NUMBA_INTERNALS", "0")
    dispatcher = numba_jit.kernel(matvec_loss)
    assert isinstance(dispatcher._cache, FunctionCache)  # cache=True
    assert "no_cfunc_wrapper" not in dispatcher.targetoptions
    assert numba_adapter.sole_reference_count() is None  # new output arrays each call
    monkeypatch.delenv("SRCXFORM_NUMBA_INTERNALS")
    assert "no_cfunc_wrapper" in numba_jit.kernel(matvec_loss).targetoptions
    assert numba_adapter.sole_reference_count() is not None


def test_entry_point_is_the_compiled_overloads_only_with_internals(monkeypatch):
    monkeypatch.delenv("SRCXFORM_NUMBA_INTERNALS", raising=False)
    f = numba_jit.function(lambda a: a.sum())
    a = np.ones(3)
    f(a)
    assert numba_jit.entry_point(f, [a]) is f.overloads[f.signatures[0]].entry_point
    assert numba_jit.entry_point(f, [a[::2]]) is None  # not C-contiguous: the dispatcher
    monkeypatch.setenv("SRCXFORM_NUMBA_INTERNALS", "0")
    assert numba_jit.entry_point(f, [a]) is None


_SWITCHED_OFF = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])  # the tests' module
    import srcxform as tf
    from srcxform.runtime import blas
    from test_numba_adapter import _data, matvec_loss

    f = tf.differentiable(matvec_loss)
    value, grad = f.value_and_grad(*_data())
    kernel = f._kernels[next(iter(f._kernels))][0]
    print(json.dumps({
        "value": float(value), "grad": grad.tolist(),
        "blas_core_unused": not blas._matvec.signatures and not blas._matvec_any.signatures,
        "numbas_cache": type(kernel.fn.dispatcher._cache).__name__ == "FunctionCache",
        "wrapper": "no_cfunc_wrapper" not in kernel.fn.dispatcher.targetoptions,
    }))
""")


def test_switched_off_srcxform_computes_the_same_through_public_api_only(tmp_path):
    """A process with the switch off: np.dot in place of Numba's BLAS helpers, the kernel
    in Numba's own cache and with its C wrapper; and the same results."""
    script = tmp_path / "switched_off.py"
    script.write_text(_SWITCHED_OFF)
    env = dict(os.environ, SRCXFORM_NUMBA_INTERNALS="0", SRCXFORM_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script), os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["blas_core_unused"] and got["numbas_cache"] and got["wrapper"]
    value, grad = tf.differentiable(matvec_loss).value_and_grad(*_data())
    np.testing.assert_allclose(got["value"], value, rtol=1e-14)
    np.testing.assert_allclose(got["grad"], grad, rtol=1e-14)


_UNOPTIMIZED = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import srcxform as tf

    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        value, grad = tf.differentiable(lambda a, b: tf.reduce_sum(tf.tanh(a @ b))
                                        ).value_and_grad(np.eye(3) / 2, np.ones((3, 2)))
    print(json.dumps({"value": float(value), "grad": np.asarray(grad).tolist(),
                      "warnings": [str(w.message) for w in caught]}))
""")


@pytest.mark.slow
def test_numba_unoptimized_compiles_what_it_cannot_cache_with_a_warning(tmp_path):
    """NUMBA_OPT=0 (a user debugging Numba) leaves function pointers in the compiled code
    as dynamic globals, which Numba cannot cache (kernels and helpers alike, so every
    process compiles them again): it says so and the call runs. (Numba's warning raised
    AttributeError before: srcxform's locator named no file for it.)"""
    script = tmp_path / "unoptimized.py"
    script.write_text(_UNOPTIMIZED)
    env = dict(os.environ, NUMBA_OPT="0", SRCXFORM_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert any("Cannot cache" in message for message in got["warnings"]), got["warnings"]
    a, b = np.eye(3) / 2, np.ones((3, 2))
    np.testing.assert_allclose(got["value"], np.tanh(a @ b).sum(), rtol=1e-14)
    np.testing.assert_allclose(got["grad"], (1 - np.tanh(a @ b) ** 2) @ b.T, rtol=1e-14)


@pytest.mark.skipif(not numba_adapter.enabled(), reason="srcxform's sealed Numba files")
def test_a_data_file_the_index_names_for_another_key_is_a_miss(tmp_path):
    # Helper 110: two processes saving overloads of one function at once could leave the
    # index naming, for signature B, the data file that holds signature A's code.
    cache = numba_jit._SealedFile(str(tmp_path), "f-1.py311", ("stamp", 1))
    cache.save("signature A", "code of A")
    index = cache._load_index()
    cache._save_index({"signature B": index["signature A"]})  # the other process's index
    assert cache.load("signature B") is None
    assert cache.load("signature A") is None  # (no longer indexed)
    cache.save("signature B", "code of B")
    assert cache.load("signature B") == "code of B"
