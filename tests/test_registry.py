"""Every registered primitive is complete: a sample row, a VJP or nondiff, an emit
template, an impl and a shape rule that agrees with the impl."""

import numpy as np
from samples import COMPOSITES, SAMPLES, call

import srcxform
from srcxform.primitive import REGISTRY, Primitive

KINDS = ("elementwise", "reduction", "structural", "opaque")


def _failing(check):
    return [name for name, prim in REGISTRY.items() if not check(prim)]


def test_registry_is_not_empty():
    assert len(REGISTRY) > 40


def test_every_primitive_has_a_sample_row():
    assert _failing(lambda p: SAMPLES.get(p.name)) == [], "add rows to tests/samples.py"


def test_every_sample_row_names_a_primitive():
    assert [name for name in SAMPLES if name not in REGISTRY] == []
    assert [row.id for rows in SAMPLES.values() for row in rows
            if row.name not in REGISTRY] == []


def test_sample_ids_are_unique():
    ids = [row.id for rows in SAMPLES.values() for row in rows] + [r.id for r in COMPOSITES]
    assert len(ids) == len(set(ids))


def test_every_primitive_has_a_vjp_or_is_nondiff():
    assert _failing(lambda p: callable(p.vjp) or p.nondiff) == []


def test_no_nondiff_primitive_has_a_vjp():
    assert _failing(lambda p: not (p.nondiff and p.vjp is not None)) == []


def test_every_primitive_has_an_emit_template():
    def has_emit(p):
        template = getattr(p, "emit", None) or getattr(p, "template", None)
        return bool(template) or callable(getattr(p, "emit_stmt", None))

    assert _failing(has_emit) == []


def test_every_primitive_has_an_impl_and_a_shape_rule():
    assert _failing(lambda p: callable(p.impl) and callable(p.shape)) == []


def test_every_primitive_has_a_known_kind():
    assert _failing(lambda p: p.kind in KINDS) == []


def test_shape_rules_agree_with_impls(monkeypatch):
    """Runs every sample; each bind's NumPy result must have the shape rule's shape (eager
    evaluation takes the result as the impl gives it, so a disagreement would hide)."""
    seen, wrong = set(), []
    eager = Primitive.eager

    def checked(self, values, params, out_aval):
        out = eager(self, values, params, out_aval)
        seen.add(self.name)
        if out.shape != tuple(out_aval.shape) or out.dtype != out_aval.dtype:
            wrong.append(f"{self.name}: impl gives {out.aval.short()}, "
                         f"shape rule {out_aval.short()}")
        return out

    monkeypatch.setattr(Primitive, "eager", checked)
    rng = np.random.default_rng(0)
    for rows in list(SAMPLES.values()) + [COMPOSITES]:
        for row in rows:
            for dtype in (np.float32, np.float64):
                call(row, *[srcxform.constant(a) for a in row.make(rng, dtype)])
    assert wrong == []
    assert [name for name in REGISTRY if name not in seen] == []
