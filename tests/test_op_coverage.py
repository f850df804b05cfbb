"""Issue 16's ops against the tests that check them: every public name the issue lists
is exported, and is checked where this table says.

A sample row (tests/samples.py) gives an op its op-table columns: eager, compiled and
finite-difference gradients (test_grads.py::test_first_order), the generated code run as
Python (test_as_python_equals_eager), and second order where the row's order is 2. A
NumPy case (test_numpy_dispatch.py) checks the NumPy function that dispatches to the op:
values against NumPy's, gradients against the op's and finite differences, traced too
(SciPy's special functions are ufuncs, and dispatch alike). Ops without a row (no
gradient, randomness, losses, optimizers) name the tests that check them.
"""

import functools
import importlib
import inspect
from dataclasses import dataclass

import pytest
from samples import COMPOSITES, SAMPLES

import srcxform


@dataclass(frozen=True)
class Cover:
    rows: tuple = ()  # sample row ids that call the op
    numpy: tuple = ()  # test_numpy_dispatch case ids
    tests: tuple = ()  # "module::test" names that call the op


def rows(*ids, numpy=()):
    return Cover(rows=ids, numpy=(numpy,) if isinstance(numpy, str) else numpy)


def named(*names, numpy=()):
    return Cover(tests=names, numpy=(numpy,) if isinstance(numpy, str) else numpy)


MATH = {
    "math.erf": rows("erf", numpy="scipy.erf"), "math.erfc": rows("erfc", numpy="scipy.erfc"),
    "math.atan": rows("atan", numpy="arctan"),
    "math.atan2": rows("atan2-same", "atan2-col-row", numpy="arctan2"),
    "math.asin": rows("asin", numpy="arcsin"), "math.acos": rows("acos", numpy="arccos"),
    "math.sinh": rows("sinh", numpy="sinh"), "math.cosh": rows("cosh", numpy="cosh"),
    "math.asinh": rows("asinh", numpy="arcsinh"), "math.acosh": rows("acosh", numpy="arccosh"),
    "math.atanh": rows("atanh", numpy="arctanh"),
    "math.log10": rows("log2-log10-exp2", numpy="log10"),
    "math.log2": rows("log2-log10-exp2", numpy="log2"),
    "math.exp2": rows("log2-log10-exp2", numpy="exp2"),
    "math.reciprocal": rows("reciprocal-matrix", "reciprocal-scalar", numpy="reciprocal"),
    "math.rsqrt": rows("rsqrt"), "math.xlogy": rows("xlogy", numpy="scipy.xlogy"),
    "math.lgamma": rows("lgamma", "lgamma-negative", numpy="scipy.gammaln"),
    "math.digamma": rows("polygamma-digamma", "polygamma-digamma-negative",
                          numpy="scipy.psi"),
    "math.polygamma": rows("polygamma-trigamma"),
    "math.squared_difference": rows("squared_difference"),
    "math.reduce_std": rows("reduce_std", numpy=("std", "std-ddof")),
    "math.reduce_variance": rows("reduce_variance", numpy=("var", "var-ddof")),
    "math.reduce_euclidean_norm": rows("reduce_euclidean_norm", numpy="linalg.norm"),
    "math.cumsum": rows("cumsum", "cumsum-exclusive-reverse", numpy=("cumsum", "cumsum-axis")),
    "math.cumprod": rows("cumprod", "cumprod-exclusive", "cumprod-reverse", numpy="cumprod"),
    "identity": rows("identity", numpy="copy"),
}

SELECTION = {
    "one_hot": named("test_selection_ops::test_one_hot",
                     "test_selection_ops::test_index_valued_ops_have_no_gradient",
                     "test_selection_ops::test_compiled_as_eager_at_several_sizes"),
    "math.argmax": rows("argmax", "argmax-vector", numpy="argmax"),
    "math.argmin": rows("argmin", numpy="argmin"),
    "sort": rows("sort", numpy=("sort", "sort-flat")),
    "argsort": rows("argsort", numpy="argsort"),
    "math.top_k": rows("top_k"),
    "gather": rows("gather", "gather-axis1", "gather-batch_dims", numpy=("take-flat", "take-axis")),
    "gather_nd": rows("gather_nd", "gather_nd-batch_dims"),
    "tensor_scatter_nd_add": rows("tensor_scatter_nd_add"),
    "tensor_scatter_nd_update": rows("tensor_scatter_nd_update"),
    "math.segment_sum": rows("segment_sum"),
    "math.unsorted_segment_sum": rows("unsorted_segment_sum"),
    "boolean_mask": named("test_tf_dtypes_and_errors::test_boolean_mask_index_is_eager_and_differentiable",
                          "test_tf_dtypes_and_errors::test_boolean_mask_cannot_be_compiled"),
}

LINALG = {
    "linalg.matmul": rows("matmul-2d", "matmul-batched", "matmul-transposes",
                          numpy=("matmul", "matmul-batched")),
    "einsum": rows("einsum", "einsum-diagonals",
                   numpy=("einsum", "einsum-batched", "einsum-trace")),
    "tensordot": rows("tensordot", numpy=("tensordot", "tensordot-2")),
    "norm": rows("norm", "norm-axis",
                 numpy=("linalg.norm", "linalg.norm-spectral", "linalg.norm-p")),
    "linalg.det": rows("det", numpy="linalg.det"),
    "linalg.slogdet": rows("slogdet", numpy="linalg.slogdet"),
    "linalg.inv": rows("inv", numpy="linalg.inv"),
    "linalg.solve": rows("solve", "solve-adjoint-broadcast",
                         numpy=("linalg.solve", "linalg.solve-vector")),
    "linalg.cholesky": rows("cholesky", numpy=("linalg.cholesky", "linalg.cholesky-upper")),
    "linalg.triangular_solve": rows("triangular_solve", "triangular_solve-upper-adjoint"),
    "linalg.diag": rows("diagonals", numpy="diag-vector"),
    "linalg.diag_part": rows("diagonals", numpy=("diagonal", "diagonal-axes", "diag-matrix")),
    "linalg.trace": rows("diagonals", numpy=("trace", "trace-axes")),
    "linalg.eigh": rows("eigh", numpy=("linalg.eigvalsh", "linalg.eigh-upper")),
    "linalg.svd": rows("svd-wide", "svd-tall-batched", "svd-square",
                       numpy=("linalg.svd-values", "linalg.svd-vectors")),
}

NN = {
    **{f"nn.{name}": rows("activations") for name in (
        "gelu", "elu", "selu", "leaky_relu", "silu", "swish", "log_sigmoid", "softsign")},
    "nn.conv1d": rows("conv1d"),
    "nn.conv2d": rows("conv2d-same-stride2", "conv2d-valid-dilated"),
    "nn.max_pool2d": rows("max_pool2d"),
    "nn.avg_pool2d": rows("avg_pool2d"),
    "nn.dropout": named("test_random::test_compiled_dropout_draws_fresh_masks_that_a_seed_repeats",
                        "test_random::test_dropout_gradient_is_exactly_the_mask_times_the_scale"),
    "nn.l2_normalize": rows("normalization"),
    "nn.moments": rows("moments"),  # first order: see its row
    "nn.batch_normalization": rows("normalization"),
}

RANDOM = {
    "random.Generator": named(
        "test_random::test_a_seed_reproduces_the_stream_and_draws_continue_it",
        "test_random::test_compiled_draws_equal_eager_ones_for_two_batch_sizes"),
    **{f"random.{name}": named(
        "test_random::test_op_level_seeds_and_the_global_seed_repeat_sequences",
        "test_random::test_compiled_draws_equal_eager_ones_for_two_batch_sizes")
       for name in ("set_seed", "normal", "uniform", "shuffle", "truncated_normal")},
}

LOSSES = {f"keras.losses.{name}": named(
    "test_losses::test_values_equal_tensorflow",
    "test_losses::test_gradients_equal_finite_differences",
    "test_losses::test_compiled_equals_eager_at_any_batch_size") for name in (
        "mean_squared_error", "mean_absolute_error", "huber", "binary_crossentropy",
        "categorical_crossentropy", "sparse_categorical_crossentropy", "kl_divergence")}

OPTIMIZERS = {
    **{f"keras.optimizers.{name}": named(
        "test_optimizers::test_options_follow_tensorflow_eagerly",
        "test_optimizers::test_options_follow_tensorflow_in_one_compiled_step",
        "test_optimizers::test_options_compiled_equal_eager_in_float64")
       for name in ("Adam", "AdamW", "Adagrad", "Nadam")},
    "clip_by_global_norm": named("test_losses::test_clip_by_global_norm_equals_tensorflow",
                                 "test_losses::test_clipping_gradients_equal_finite_differences"),
}
# Keras's optimizer options, each set by one of test_optimizers' OPTION_CASES.
OPTIONS = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm")

COVERAGE = MATH | SELECTION | LINALG | NN | RANDOM | LOSSES | OPTIMIZERS
ROWS = {row.id: row for row in [*COMPOSITES, *(r for rs in SAMPLES.values() for r in rs)]}


def _public(name):
    return functools.reduce(getattr, name.split("."), srcxform)


def _calls(row, op, attribute):
    """Whether the row's op is `op`, or a lambda that names it."""
    lambda_ = getattr(row.op, "__name__", None) == "<lambda>"
    return row.op is op or lambda_ and attribute in row.op.__code__.co_names


@pytest.mark.parametrize("name", sorted(COVERAGE))
def test_each_issue_op_is_exported_and_checked(name):
    op, cover = _public(name), COVERAGE[name]
    assert callable(op)
    assert cover.rows or cover.tests, "no row and no test"
    attribute = name.rsplit(".", 1)[-1]
    for row_id in cover.rows:
        assert row_id in ROWS, f"no sample row {row_id!r}"
        assert _calls(ROWS[row_id], op, attribute), f"row {row_id!r} does not call {name}"
    for test in cover.tests:
        module_name, function = test.split("::")
        module = importlib.import_module(module_name)
        assert inspect.isfunction(getattr(module, function, None)), f"no test {test}"
        assert attribute in inspect.getsource(module), f"{module_name} never names {name}"
    dispatch = importlib.import_module("test_numpy_dispatch")
    cases = {param.id for param in dispatch.UFUNCS + dispatch.FUNCTIONS}
    assert [case for case in cover.numpy if case not in cases] == []


def test_rows_check_second_order_unless_they_say_why_not():
    """Only moments' row stops at first order (see its comment)."""
    covered = {row_id for cover in COVERAGE.values() for row_id in cover.rows}
    assert sorted(r for r in covered if ROWS[r].order < 2) == ["moments"]


@pytest.mark.parametrize("option", OPTIONS)
def test_each_optimizer_option_is_in_the_option_cases(option):
    from test_optimizers import OPTION_CASES

    assert any(make().get_config().get(option) for make in OPTION_CASES.values())
