"""The registry against the test tables and the public namespace: every primitive has a
sample row that really binds it, every row's shape rule agrees with its impl, and every
public op a family module defines is exported. (What `Primitive.__post_init__` enforces,
a VJP or `nondiff`, a unique name, a parseable template, is not tested again here.)"""

import importlib
import inspect

import numpy as np
import pytest
from samples import COMPOSITES, SAMPLES, call

import srcxform
from srcxform.core.primitive import REGISTRY, Primitive

KINDS = ("elementwise", "reduction", "structural", "opaque")

# Public functions of the op families that are helpers, not ops users call by name.
INTERNAL = {
    # the gradients' own ops, for higher order
    "elementwise": {"sqrt_grad", "relu_grad", "reciprocal_grad",
                    "float_operands"},  # float-only composites' dtype check
    "mathfuncs": {"rsqrt_grad"},
    "nn": {"leaky_relu_grad"},
    "shape": {"shape_argument", "unchanged", "checked_indices", "check_indices",
              "embed", "getitem", "block", "check_window",  # indexing's own ops: x[i], its adjoint, a window
              "iota"},  # range's counting, and gather's batch offsets
    # TensorFlow's packing of nested lists, which conversions share
    "creation": {"pack", "fitted"},
    "layout": {"repeated"},  # tf.repeat's body, np.repeat's too
    "linalg": {"numpy_matmul", "tensordot_1d"},  # NumPy's matmul and dot rules
    # Tensor's NumPy protocols, the table of ufuncs they dispatch, the refusal of
    # options srcxform cannot honour (numpy_composites' too), and NumPy's in-place rule
    "numpy_dispatch": {"array_ufunc", "array_function", "ufuncs", "reject", "as_into",
                       "in_place_statement", "refuse_shared"},
}


def _failing(check):
    return [name for name, prim in REGISTRY.items() if not check(prim)]


def test_every_primitive_has_a_sample_row():
    assert _failing(lambda p: SAMPLES.get(p.name)) == [], "add rows to tests/samples.py"


def test_every_sample_row_names_a_primitive():
    assert [name for name in SAMPLES if name not in REGISTRY] == []
    assert [row.id for rows in SAMPLES.values() for row in rows
            if row.name not in REGISTRY] == []


def test_sample_ids_are_unique():
    ids = [row.id for rows in SAMPLES.values() for row in rows] + [r.id for r in COMPOSITES]
    assert len(ids) == len(set(ids))


def test_no_nondiff_primitive_has_a_vjp():
    assert _failing(lambda p: not (p.nondiff and p.vjp is not None)) == []


def test_every_primitive_has_a_known_kind():
    assert _failing(lambda p: p.kind in KINDS) == []


def test_rows_bind_their_primitive_and_shape_rules_agree_with_impls(monkeypatch):
    """Runs every sample in float32 and float64. Each row must bind the primitive it is
    named after (a row calling the wrong wrapper would test another op's gradient), and
    each bind's NumPy result must have the shape rule's shape and dtype (eager evaluation
    takes the result as the impl gives it, so a disagreement would hide)."""
    bound, wrong = [], []
    eager = Primitive.eager

    def checked(self, values, params, out_aval):
        out = eager(self, values, params, out_aval)
        bound.append(self.name)
        if out.shape != tuple(out_aval.shape) or out.dtype != out_aval.dtype:
            wrong.append(f"{self.name}: impl gives {out.aval.short()}, "
                         f"shape rule {out_aval.short()}")
        return out

    monkeypatch.setattr(Primitive, "eager", checked)
    rng = np.random.default_rng(0)
    unbound = []
    for rows in list(SAMPLES.values()) + [COMPOSITES]:
        for row in rows:
            for dtype in (np.float32, np.float64):
                bound.clear()
                call(row, *[srcxform.constant(a) for a in row.make(rng, dtype)])
                if row in COMPOSITES:
                    continue
                if row.name not in bound:
                    unbound.append(f"{row.id} ({dtype.__name__}) binds {bound}")
    assert wrong == []
    assert unbound == []


@pytest.mark.parametrize("family", ["elementwise", "mathfuncs", "cumulative", "shape", "reduce",
                                    "linalg", "lapack", "einsum", "nn", "layout", "control",
                                    "creation", "selection", "numpy_dispatch", "conv",
                                    "normalization"])
def test_every_public_op_is_exported(family):
    """An op defined in an ops/ family must be reachable under a TensorFlow namespace
    (srcxform, srcxform.math, srcxform.nn or srcxform.linalg), not only as
    srcxform.ops.<family>.<name>."""
    module = importlib.import_module(f"srcxform.ops.{family}")
    defined = [name for name, value in vars(module).items()
               if inspect.isfunction(value) and value.__module__ == module.__name__
               and not name.startswith("_") and name not in INTERNAL.get(family, ())]
    namespaces = (srcxform, srcxform.math, srcxform.nn, srcxform.linalg)
    assert [name for name in defined
            if all(getattr(space, name, None) is not vars(module)[name] for space in namespaces)
            ] == []


def test_internal_helpers_exist():
    """INTERNAL names only functions that exist, so it cannot hide a renamed op."""
    for family, names in INTERNAL.items():
        module = importlib.import_module(f"srcxform.ops.{family}")
        assert [name for name in names if not inspect.isfunction(getattr(module, name, None))
                ] == [], family
