"""A fixed-seed slice of the differential test against TensorFlow (tests/tf_differential.py),
TensorFlow's recorded outcomes for 200 programs replayed, and the comparator's own rules.

The slice is skipped where TensorFlow is not installed (CI); the recorded programs run
everywhere. The full campaign is `python -m tests.tf_differential --programs 2000 --seed N`;
the record is remade with `python -m tests.tf_differential --record --programs 200
--seed 30`.
"""

import numpy as np
import pytest
from tf_differential import Outcome, _decoded, _encoded, compare, differs, generate, same_kind


def _t(values, dtype="float32"):
    return (dtype, np.array(values, dtype=dtype))


def test_differs_checks_none_dtype_shape_and_values():
    assert differs([_t([1.0, np.nan]), None], [_t([1.0, np.nan]), None]) is None
    assert differs([None], [_t([0.0])]) == ("none-vs-tensor", "out[0]")
    assert differs(_t([1.0]), _t([1.0], "float64")) == ("dtype", "out")
    assert differs(_t([1.0]), _t([[1.0]])) == ("shape", "out")
    assert differs(_t([1.0]), _t([1.00001])) is None  # float32 tolerance
    assert differs(_t([1.0], "float64"), _t([1.00001], "float64")) == ("value", "out")
    assert differs(_t([np.inf]), _t([-np.inf])) == ("value", "out")
    assert differs(_t([3], "int32"), _t([4], "int32")) == ("value", "out")
    assert differs([_t([1.0])], [_t([1.0]), None]) == ("structure", "out")


class InvalidArgumentError(Exception):
    """Stands for TensorFlow's class: only the name counts."""


def test_exception_kinds():
    assert same_kind(InvalidArgumentError("x"), ValueError())
    assert same_kind(InvalidArgumentError("x"), IndexError())
    assert not same_kind(InvalidArgumentError("x"), RuntimeError())
    assert same_kind(TypeError(), TypeError())
    assert not same_kind(TypeError(), ValueError())


def test_only_documented_differences_are_allowed():
    mixed = InvalidArgumentError("cannot compute AddV2 as input #1(zero-based) was expected "
                                 "to be a float tensor but is a double tensor [Op:AddV2]")
    computed = Outcome([_t([1.0], "float64")])
    assert compare(Outcome([], mixed), computed) is None
    # The values before the point where TensorFlow stopped still have to agree.
    assert compare(Outcome([_t([1.0])], mixed), Outcome([_t([2.0]), _t([1.0])])) is not None
    division = InvalidArgumentError("Integer division by zero [Op:FloorDiv]")
    assert compare(Outcome([], division), Outcome([], ZeroDivisionError())) is None
    assert compare(Outcome([], division), Outcome([_t([0], "int32")])) == \
        ("tensorflow-raises", "after 0 outputs")
    other = InvalidArgumentError("Incompatible shapes: [2] vs. [3] [Op:AddV2]")
    assert compare(Outcome([], other), computed) == ("tensorflow-raises", "after 0 outputs")


def test_programs_are_reproducible_and_compile():
    texts = [generate(np.random.default_rng(7)) for _ in range(2)]
    assert texts[0] == texts[1]
    for seed in range(50):
        compile(generate(np.random.default_rng(seed)), "<program>", "exec")


def test_a_slice_agrees_with_tensorflow():
    tensorflow = pytest.importorskip("tensorflow")
    from tf_differential import campaign

    import srcxform

    mismatches = campaign(150, seed=18, tf_module=tensorflow, sx_module=srcxform)
    assert not mismatches, "\n".join(m.report() for m in mismatches[:5])


def test_recorded_values_round_trip():
    values = [_t([1.5, np.nan, -np.inf]), _t([[3]], "int32"), _t([0.1], "float64"),
              _t([True, False], "bool"), ("python str", np.array("second order")), None]
    assert differs(values, _decoded(_encoded(values))) is None
    assert _decoded(_encoded(_t([0.3])))[1].tobytes() == np.float32([0.3]).tobytes()


def test_recorded_programs_agree_with_tensorflow():
    """TensorFlow 2.21's outcomes (tests/tf_recorded.json): Variable updates, conversions
    with dtype=, integer reductions, packed lists and the names issue 30 added among
    them, checked without TensorFlow."""
    import srcxform
    from tf_differential import replay

    mismatches = replay(srcxform)
    assert not mismatches, "\n".join(m.report() for m in mismatches[:5])
