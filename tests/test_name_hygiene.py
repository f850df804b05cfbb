"""Generated names never clash with the user's: any identifier works as a parameter name,
as a name the function's own lines assign, and as a dict key a leaf is named after, with
compiled values and gradients equal to the eager tape's.

Each group of names is one function, so one kernel, of many oddly named parameters.
"""

import linecache
import re

import numpy as np
import pytest
from corpus import assert_trees_close, eager_value_and_grad

import srcxform

# Names generated code or the entry that calls it uses itself, grouped a kernel each.
GROUPS = {
    # Values, their loop forms (`<name>_i`) and their gradients (`b<name>`).
    "loop_forms": ["x", "x_i", "bx", "bx_i", "a_i", "a", "t0", "t0_i", "bt0", "x_i_1"],
    # Counted names: loop indices, sizes, temporaries; chunking's temporaries.
    "counted": ["i0", "i1", "n0", "n1", "i", "t1", "c0", "lo", "hi", "chunks", "start",
                "stop", "edge", "x_c", "v", "x_1"],
    # The globals generated code reads, and the library's own name.
    "globals": ["np", "math", "range", "prange", "min", "max", "arrays", "blas", "vecmath",
                "srcxform", "tf"],
    # The entry's names, the template names code generation fills, the kernel's name.
    "entry": ["out", "acc", "a0", "x0", "s0", "last_s0", "k0", "o0", "r", "run", "spare0",
              "shape0", "hits", "fallback", "entry", "more", "kwargs", "NO", "OPEN",
              "direct", "checked", "empty", "getrefcount", "inner", "kernel",
              "f__value_and_grad", "out_shape", "out_dtype", "g", "indices"],
    "builtins": ["len", "abs", "sum", "int", "float", "type", "print", "object", "gather",
                 "α", "ﬁ_"],
}


def _function(params, filename):
    """def f(<params>): each parameter reassigned from itself and the next one (so values,
    their loop forms and their gradients take the parameters' names), an outer product
    (a BLAS call), and a sum. The source is kept in linecache, as a file's would be: the
    names its lines assign name values too."""
    n = len(params)
    lines = [f"def f({', '.join(params)}):"]
    lines += [f"    {p} = S_.tanh({p} * 0.5) * {params[(k + 1) % n]}" for k, p in enumerate(params)]
    lines.append(f"    {params[1]} = S_.matmul(S_.reshape({params[0]}, (-1, 1)), "
                 f"S_.reshape({params[2]}, (1, -1)))")
    lines.append("    return " + " + ".join(f"S_.reduce_sum({p})" for p in params))
    return _define("\n".join(lines) + "\n", filename)


def _define(source, filename):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"S_": srcxform}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (names under test)
    return namespace["f"]


def _arguments(n):
    """Arrays of 4 at even positions, Python floats at odd ones."""
    rng = np.random.default_rng(n)
    return [rng.uniform(-1, 1, 4) if k % 2 == 0 else float(rng.uniform(-1, 1))
            for k in range(n)]


def _check_against_eager(fn, args, wrt):
    expected = eager_value_and_grad(fn, args, wrt)
    compiled = srcxform.differentiable(fn, wrt=wrt)
    for call in range(2):  # the first call traces, the second goes through the entry
        value, grads = compiled.value_and_grad(*args)
        assert_trees_close(value, expected[0], what=f"value, call {call}")
        assert_trees_close(grads, expected[1], what=f"grads, call {call}")
    return compiled


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_parameter_names(group):
    params = GROUPS[group]
    fn = _function(params, f"<names {group}>")
    args = _arguments(len(params))
    compiled = _check_against_eager(fn, args, tuple(range(len(params))))
    if group == "globals":  # each global is read: the clash was really there
        source = compiled.source(*args)
        assert all(f"{m}." in source for m in ("np", "arrays", "blas", "vecmath"))


def test_interpreted_code_names(monkeypatch):
    """The generated code run as Python (SRCXFORM_JIT=0): its names are Python's too."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    params = GROUPS["loop_forms"] + GROUPS["counted"]
    fn = _function(params, "<names interpreted>")
    compiled = _check_against_eager(fn, _arguments(len(params)), tuple(range(len(params))))
    kernels = [k.fn for ks in compiled._kernels.values() for k in ks]
    assert kernels and not any(hasattr(k, "dispatcher") for k in kernels)


def test_a_parameter_named_as_another_ones_loop_form():
    """The reproducer: bx_i was both x_i's gradient and bx's loop temporary."""
    fn = _define("def f(x, x_i):\n    return S_.reduce_sum(S_.exp(x) * x_i)\n", "<names x_i>")
    x = np.array([0.0, 1.0, 2.0])
    compiled = srcxform.differentiable(fn, wrt=(0, 1))
    grads = compiled.grad(x, 10.0)
    np.testing.assert_allclose(grads[1], np.exp(x).sum(), rtol=1e-15)
    np.testing.assert_allclose(grads[0], 10.0 * np.exp(x), rtol=1e-15)
    # x keeps its name; x_i, which is x's loop form, and its gradient get a suffix.
    assert "__value_and_grad(x, x_i_1, bx):" in compiled.source(x, 10.0)


def test_gather_indices_named_as_the_helpers_parameters():
    """Gather indices named as the names gather's code and its adjoint use (`indices`,
    `out`, `g`, a loop index `i`) are passed under the user's names."""
    names = ["i", "i_1", "indices", "out", "g"]
    terms = " + ".join(f"S_.gather(p, {n}) * p[0]" for n in names)
    source = f"def f(p, {', '.join(names)}):\n    return S_.reduce_sum({terms})\n"
    fn = _define(source, "<names gather>")
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, 5)] + [rng.integers(0, 5, 3) for _ in names]
    compiled = _check_against_eager(fn, args, 0)
    scattered = re.findall(r"arrays\.scatter_add\(\w+, (\w+), n0\)", compiled.source(*args))
    assert sorted(scattered) == sorted(names)


def test_dict_keys_name_leaves():
    """Leaves are named `<param>_<key>`: keys that make a name another parameter has, a
    loop form, no identifier, or the same identifier after NFKC normalization."""
    fn = _define("def f(p, p_i, p_x):\n"
                 "    return S_.reduce_sum(S_.exp(p['x']) * p_i * p['i'] * p['a-b'] * "
                 "p['1st'] * p['ﬁ'] * p['fi'] * p_x)\n", "<names dict>")
    rng = np.random.default_rng(1)
    keys = ["x", "i", "a-b", "1st", "ﬁ", "fi"]
    args = [{k: rng.uniform(-1, 1, 3) for k in keys}, 0.5, rng.uniform(-1, 1, 3)]
    _check_against_eager(fn, args, (0, 1, 2))


def test_parallel_chunking_temporaries():
    """A slice's adjoint runs in chunks (parallel=True), with temporaries and views of its
    own: the user's names stay, the chunking's get a suffix."""
    params = ["x", "lo", "hi", "chunks", "c0", "start", "stop", "edge", "bx_c", "x_c"]
    source = (f"def f({', '.join(params)}):\n    y = {' * '.join(params)}\n"
              "    return S_.reduce_sum(y[1:] - y[:-1] ** 2)\n")
    fn = _define(source, "<names parallel>")
    rng = np.random.default_rng(2)
    args = [rng.uniform(-1, 1, 9) for _ in params]
    expected = eager_value_and_grad(fn, args, 0)
    compiled = srcxform.differentiable(fn, parallel=True)
    value, grad = compiled.value_and_grad(*args)
    assert_trees_close(value, expected[0], what="value")
    assert_trees_close(grad, expected[1], what="grad")
    text = compiled.source(*args)
    assert "for c0_1 in prange(chunks_1):" in text
    assert "for edge_1 in (range(lo_1), range(hi_1, n0)):" in text


@pytest.mark.parametrize("jit", ["1", "0"])
@pytest.mark.parametrize("name", ["f" * 300, "函数" * 60], ids=["long", "non_ascii"])
def test_a_function_named_past_file_name_limits(name, jit, monkeypatch):
    """The kernel's module and Numba's cache files are named after the function: a name of
    300 characters, or of 360 bytes in UTF-8, is hashed to fit a file name's 255 bytes."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    fn = _define(f"def {name}(x):\n    return S_.reduce_sum(S_.tanh(x) * x)\nf = {name}\n",
                 f"<names {len(name)}>")
    x = np.array([0.5, -1.0, 2.0])
    compiled = _check_against_eager(fn, [x], 0)
    assert compiled(x).numpy() == pytest.approx(np.sum(np.tanh(x) * x))
