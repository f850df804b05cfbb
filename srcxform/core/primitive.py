"""The Primitive record, the registry, the declarators, and the one `bind`.

A primitive is declared once (name, NumPy impl, shape rule, VJP in srcxform ops, code
emitter); eager evaluation, tape recording and tracing all go through `bind`, which
knows no primitive by name.
"""

import ast
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from srcxform.core import recording, syntax
from srcxform.core import tensor as _tensor
from srcxform.core.aval import Aval, broadcast_shapes, normalize_axes
from srcxform.core.dims import Dim, localized
from srcxform.core.dtypes import out_of_range, promote
from srcxform.core.errors import (
    DtypeArgumentError, InvalidArgumentError, LinAlgArgumentError, ShapeArgumentError,
    user_line,
)
from srcxform.core.names import TEMPLATE_GLOBALS
from srcxform.core.tensor import SizeConstant, Tensor, as_value, check_active

REGISTRY: dict = {}


class _Zero:
    """What a VJP returns for an input whose cotangent is zero rather than none
    (TensorFlow's sign has a zero gradient): backprop makes the zeros, of the input's
    shape and dtype (zeros_like is an op above the elementwise ones that need it)."""

    def __repr__(self):
        return "ZERO"


ZERO = _Zero()


class _IdentityRows:
    """A batching rule's flag for an operand whose rows are the identity's, row i the unit
    vector e_i in the row's shape of one dim not 1 (a Jacobian's basis): truthy, as a
    flag of rows is; a product with it moves the other operand (passes/batching.py)."""

    def __bool__(self):
        return True

    def __repr__(self):
        return "IDENTITY_ROWS"


IDENTITY_ROWS = _IdentityRows()


@dataclass(frozen=True)
class Algebra:
    """What the passes may assume of a primitive's values beyond its impl: the simplifier
    (units, identities, broadcasts), placement and the NaN checks (ops that only move
    elements), crosscheck's rounding bound (sums). The defaults assume nothing."""

    # (literal, position) pairs where a literal operand leaves the other operand
    # unchanged (x * 1).
    units: tuple = ()
    # Whether an output with its input's aval is that input (a cast to the same dtype).
    same_aval_is_identity: bool = False
    is_broadcast: bool = False  # only broadcasts its input (broadcast_to)
    rearranges: bool = False  # only moves or selects its input's elements (reshape)
    embeds: bool = False  # zeros of params["shape"] with the input at params["index"]
    joins: bool = False  # its inputs laid end to end along params["axis"] (concat)
    selects: bool = False  # its input at params["index"] (a static index: getitem)
    # Each output element a sum of its inputs' elements or their products (reduce_sum,
    # matmul): linear in each input, so that the op applied to the inputs' magnitudes gives
    # the terms' magnitudes, and applied to ones their number (a check's rounding bound,
    # crosscheck.py).
    sums: bool = False

    @property
    def moves_only(self):
        """Whether the op only moves or copies its input's elements: it makes nothing."""
        return self.rearranges or self.selects or self.is_broadcast or self.embeds


@dataclass(frozen=True)
class Codegen:
    """What code generation needs to know of a primitive beyond its `emit` template. The
    defaults: `emit` fits every equation and every loop, is cheap to recompute, and
    raises nothing."""

    # emit_for(*in_avals, out_aval, **params): an emit template for that equation where
    # a simpler form than `emit` fits it (a reshape that only drops dims of 1 is an
    # index), or None for `emit`.
    emit_for: Callable | None = None
    # The template for loops LLVM vectorizes (srcxform.runtime.vecmath's polynomials),
    # where `emit` (libm's functions, faster in a loop that does not vectorize) serves
    # the others.
    vector_emit: str | None = None
    # A transcendental function, whose value a loop stores rather than another loop
    # recomputes it where it reads it.
    expensive: bool = False
    # Whether the emitted code checks its operands and raises an InvalidArgumentError as
    # eager does (an index out of bounds, an integer divisor of 0): True, or a function of
    # the equation as emit_for takes it. Code generation keeps such code out of a prange,
    # which would drop the exception.
    raises: bool | Callable = False
    # Whether rows a:b of a matrix output are the op applied to rows a:b of its first
    # operand (a matrix product): the one loop nest reading it may compute it a block of
    # rows at a time, each block read while it is in cache (codegen/placement.py).
    by_rows: bool = False
    # The operands whose memory an array result may share (a helper that adds into its
    # first operand in place returns it); None: any of them, as far as anyone knows.
    aliases: tuple | None = None


@dataclass(eq=False)
class Primitive:
    """One operation, declared once.

    kind: `elementwise` (emit is a scalar expression over the input names), `reduction`
    (emit combines an accumulator `acc` with an element `x`, from `init`), or
    `structural`/`opaque` (emit is an array expression over the input names and params).

    vjp(g, out, *inputs, **params) returns one cotangent per input: a value, None (no
    gradient), ZERO, or a function of no arguments that makes the cotangent, which the
    reverse walk calls only where that input needs one (pow's exponent, mostly a constant,
    costs a log and two selects).

    What the passes may assume of its values is its `algebra`; what code generation needs
    beyond `emit`, its `codegen` (see Algebra and Codegen).
    """

    name: str
    kind: str
    impl: Callable
    shape: Callable
    vjp: Callable | None
    emit: str
    arg_names: tuple
    nondiff: bool = False
    init: float | None = None
    variadic: bool = False
    # A nondiff op is still recorded, with no VJP, so ops on its output are recorded too
    # (TensorFlow's floor, whose gradient is None); `unrecorded` ones are not
    # (TensorFlow's NotDifferentiable ops: stop_gradient).
    unrecorded: bool = False
    numpy: tuple = ()  # NumPy ufuncs that compute this op: NumPy dispatch binds it for them
    # batch(flags, avals, **params): for operands of which those flagged carry a leading
    # axis of rows (avals: a row's), a function of them giving the output's rows, or None
    # (passes/batching.py; elementwise ops and reductions have theirs by kind).
    batch: Callable | None = None
    algebra: Algebra = Algebra()
    codegen: Codegen = Codegen()
    param_names: tuple = field(init=False)
    template: ast.AST = field(init=False, repr=False)
    vector_template: ast.AST | None = field(init=False, repr=False)

    def __post_init__(self):
        if self.name in REGISTRY:
            raise ValueError(f"primitive {self.name!r} is declared twice")
        if self.vjp is None and not self.nondiff:
            raise ValueError(f"primitive {self.name!r} has no vjp and is not marked nondiff")
        self.param_names = tuple(
            p.name for p in inspect.signature(self.shape).parameters.values()
            if p.kind is p.KEYWORD_ONLY)
        self.template = _parse_template(self.name, self.emit,
                                        self.arg_names + self.param_names)
        self.vector_template = self.codegen.vector_emit and _parse_template(
            self.name, self.codegen.vector_emit, self.arg_names + self.param_names)
        REGISTRY[self.name] = self

    def __repr__(self):
        return f"<primitive {self.name}>"

    def template_for(self, in_avals, out_aval, params):
        """The parsed emit template for one equation (see Codegen.emit_for). An opaque op's
        expression gives an array (a runtime helper's result); where the output has rank
        0 it is taken as its one element, `[()]`: generated code keeps rank-0 values as
        scalars, and an elementwise op on the result (a conditional expression) needs one.
        An emit_for form of rank 0 gives its scalar itself (argmax's)."""
        emit_for = self.codegen.emit_for
        emit = emit_for and emit_for(*in_avals, out_aval, **params)
        if emit:
            return _parse_template(self.name, emit, self.arg_names + self.param_names)
        if self.kind == "opaque" and not out_aval.shape and "\n" not in self.emit:
            return _parse_template(self.name, f"({self.emit})[()]",
                                   self.arg_names + self.param_names)
        return self.template

    def may_raise(self, in_avals, out_aval, params):
        """Whether one equation's emitted code may raise (see Codegen.raises)."""
        raises = self.codegen.raises
        return bool(raises(*in_avals, out_aval, **params)) if callable(raises) else raises

    def bind(self, *args, **params):
        """Applies the primitive: traced if any input is a Tracer, else computed eagerly;
        then recorded on every tape that watches an input."""
        values = [as_value(a, self.name) for a in args]
        context = recording.CONTEXT
        if context.traces:  # a size kept from another trace is a constant here
            params = localized(params)
        out_aval = self.abstract_eval(values, params)
        values = checked_python_ints(self, values)
        trace = next((v._trace for v in values if v._trace is not None), None)
        if trace is not None:  # not one kept past its trace (an eager op tests nothing)
            check_active(trace, self.name)
        if trace is None and context.traces and _mentions_size(values, params):
            trace = context.traces[-1]  # a traced size must be computed, not folded
        elif trace is not None and context.traces and context.traces[-1].encloses(trace):
            trace = context.traces[-1]  # a loop body or branch reading an outer value
        if trace is not None:
            folder = getattr(trace, "folder", None)
            if folder is not None:  # a sum of a chain of adds may be read another way
                values = folder.reading(values)
            out = trace.add_eqn(self, values, params, out_aval)
        else:
            out = self.eager(values, params, out_aval)
        if context.tapes or context.accumulators:
            if self.unrecorded:  # kept for tape.explain, not differentiated
                recording.cut_by("stop_gradient", self, values, out)
            else:
                recording.record(self.vjp, values, out, params, self)
        return out

    def abstract_eval(self, values, params):
        """Runs the shape rule, turning a mismatch into an error naming op, operands, line."""
        try:
            return self.shape(*[v.aval for v in values], **params)
        except (ValueError, TypeError) as err:
            raise argument_error(self.name, values, err) from None

    def eager(self, values, params, out_aval):
        arrays = [v._array for v in values]
        if self.kind == "elementwise":
            # Operands meet in their common dtype; a condition ("c") stays bool.
            names = self.arg_names
            common = promote([v.aval for n, v in zip(names, values) if n != "c"])[0]
            arrays = [a if n == "c" or a.dtype == common else a.astype(common)
                      for n, a in zip(names, arrays)]
        try:
            with np.errstate(all="ignore"):
                result = np.asarray(self.impl(*arrays, **params))
        except np.linalg.LinAlgError as err:
            # TensorFlow's InvalidArgumentError, as the compiled code's (runtime/lapack.py).
            operands = ", ".join(v.aval.short() for v in values)
            raise LinAlgArgumentError(f"{self.name}({operands}): {err}\n  at {user_line()}"
                                      ) from None
        except InvalidArgumentError as err:  # an impl's check (an index, a divisor of 0)
            if "\n  at " in str(err):
                raise
            raise type(err)(f"{err}\n  at {user_line()}") from None
        if result.dtype != out_aval.dtype:
            result = result.astype(out_aval.dtype)
        if recording.PERTURBING and recording.CONTEXT.perturb is not None:
            result = recording.CONTEXT.perturb(self, arrays, params, result)
        out = Tensor._new(result, out_aval.weak)
        if recording.DEBUG_NANS:  # ad/nan_checks.py's rule
            recording.NAN_CHECK(self, values, arrays, params, out)
        return out


def op_name(op):
    """A record's op as a message names it: a primitive's name, or the name it was given."""
    return getattr(op, "name", op)


def checked_python_ints(prim, values):
    """values, where a Python int (a weak int operand) meets an integer dtype that may not
    hold it: DtypeArgumentError (a TypeError) for one that does not fit (casting would
    wrap it, as TensorFlow does; NumPy raises), and a traced one (a loop's Python int
    carry) checked when the kernel runs. Only operands that meet in one dtype (an
    elementwise op's, a concat's), not an index or a size."""
    operands = [v for n, v in zip(prim.arg_names, values) if n != "c"] \
        if prim.kind == "elementwise" else values if prim.algebra.joins else ()
    weak = [v for v in operands if v.aval.weak and v.aval.dtype.kind == "i"]
    dtype = weak and promote([v.aval for v in operands])[0]
    if not weak or dtype.kind not in "iu" or dtype == np.int64:
        return values
    for v in weak:
        bad = None if v._trace is not None else out_of_range(v._array, dtype)
        if bad is not None:
            before, after = python_int_misfit(prim.name, [v.aval for v in values], dtype,
                                              user_line())
            raise DtypeArgumentError(f"{before}{bad}{after}")
    traced = [v for v in weak if v._trace is not None]
    if not traced:
        return values
    before, after = python_int_misfit(prim.name, [v.aval for v in values], dtype,
                                      user_line(), symbolic=True)
    return [_tensor.FIT_PYTHON_INT(v, dtype, before, after) if any(v is t for t in traced)
            else v
            for v in values]


def python_int_misfit(op, avals, dtype, line, symbolic=False):
    """The DtypeArgumentError's text before and after a Python int that does not fit the
    integer dtype it meets (compiled code has the number only when it runs, and shows
    sizes `symbolic`ally: its kernel serves every size)."""
    shown = ", ".join(a.short(symbolic) for a in avals)
    after = (f" does not fit in {dtype.name}, the dtype it meets; make it a tensor of a "
             f"wider dtype (TensorFlow would wrap it)\n  at {line}")
    return f"{op}({shown}): the Python int ", after


def _mentions_size(values, params):
    """Whether an op's inputs or params hold a traced size (a Dim)."""
    def has(value):
        return isinstance(value, Dim) or isinstance(value, tuple) and any(map(has, value))

    return any(isinstance(v, SizeConstant) for v in values) or any(map(has, params.values()))


@functools.cache
def _parse_template(name, emit, names):
    """Parses an emit template, and checks the names it reads: once per text (at import for
    a primitive's `emit`, at code generation for an `emit_for` form).

    An expression template reads the inputs, params, `acc` (reductions) and np/math. A
    statement template (several lines) assigns `out` and may also read `out_shape` and
    `out_dtype`, which code generation provides, and the names it assigns itself.
    """
    statements = "\n" in emit
    tree = syntax.parse(emit, mode="exec" if statements else "eval")
    allowed = set(names) | set(TEMPLATE_GLOBALS) | {"acc"}
    if statements:
        allowed |= {"out", "out_shape", "out_dtype"} | {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in allowed:
            raise ValueError(f"primitive {name!r}: emit template {emit!r} uses {node.id!r}")
    return tree.body


def _arg_names(fn, skip):
    """The positional parameter names of fn after the first `skip`, and whether the last
    one is variadic (*xs)."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind is not p.KEYWORD_ONLY][skip:]
    return (tuple(p.name for p in params),
            bool(params) and params[-1].kind is inspect.Parameter.VAR_POSITIONAL)


# ----- declarators -----


_KIND_NAMES = {"f": "float", "fiu": "numeric", "iu": "integer", "b": "bool"}


def check_kinds(operands, dtype, kinds):
    """Raises TypeError unless the operands (avals of common dtype `dtype`) are of `kinds`
    (a key of _KIND_NAMES). A Python scalar beside a tensor counts with the dtype it takes
    (x_int32 + True is x_int32 + 1); Python scalars alone count as they are (True + 1
    raises)."""
    strong = [a.dtype for a in operands if not a.weak]
    counted = strong + [dtype] if strong else [a.dtype for a in operands]
    if any(d.kind not in kinds for d in counted):
        got = ", ".join(a.dtype.name for a in operands)
        raise TypeError(f"expects {_KIND_NAMES[kinds]} inputs, got {got}; cast first "
                        f"(srcxform.cast(x, srcxform.float32))" if kinds == "f" else
                        f"expects {_KIND_NAMES[kinds]} inputs, got {got}")


def argument_error(op, values, err):
    """The InvalidArgumentError for a shape or dtype rule's ValueError or TypeError `err`,
    naming the op, its operands and the user's line: raised eagerly, TensorFlow's
    InvalidArgumentError in both cases."""
    operands = ", ".join(v.aval.short() for v in values)
    kind = (DtypeArgumentError if type(err) is TypeError else type(err)
            if isinstance(err, TypeError) else ShapeArgumentError)
    return kind(f"{op}({operands}): {err}\n  at {user_line()}")


def elementwise(name, impl, emit, vjp=None, nondiff=False, out_dtype=None, kinds=None,
                args=None, units=(), same_aval_is_identity=False, unrecorded=False,
                expensive=False, vector_emit=None, numpy=(), emit_for=None, raises=False):
    """Declares an elementwise primitive: NumPy broadcasting, NEP 50 promotion.

    The inputs are named by the VJP's parameters after (g, out), or by `args`; an input
    named `c` is a bool condition and takes no part in promotion. `out_dtype` is "bool"
    or a function of the operands' common dtype; a result of another kind than the
    operands' (int / int is float64) is strong, as TensorFlow's, even from weak operands.
    `kinds` (a key of _KIND_NAMES) are the dtype kinds the operands may have, as
    TensorFlow's kernel for the op takes (None: any). `units` and
    `same_aval_is_identity`: see Algebra; `emit_for`, `vector_emit`, `expensive` and
    `raises`: see Codegen; `unrecorded` and `numpy`: see Primitive.
    """
    arg_names = tuple(args.split()) if args else _arg_names(vjp, 2)[0]

    def shape(*avals):
        cond = [a for n, a in zip(arg_names, avals) if n == "c"]
        operands = [a for n, a in zip(arg_names, avals) if n != "c"]
        dtype, weak = promote(operands)
        if kinds:
            check_kinds(operands, dtype, kinds)
        for c in cond:
            if c.dtype != np.bool_:
                raise TypeError(f"the condition must be bool, got {c.dtype.name}")
        out_shape = broadcast_shapes(*[a.shape for a in avals])
        if out_dtype == "bool":
            return Aval(out_shape, np.dtype(np.bool_))
        result = out_dtype(dtype) if out_dtype else dtype
        return Aval(out_shape, result, weak and result.kind == dtype.kind)

    return Primitive(name, "elementwise", impl, shape, vjp, emit, arg_names, nondiff,
                     unrecorded=unrecorded, numpy=numpy,
                     algebra=Algebra(units=units, same_aval_is_identity=same_aval_is_identity),
                     codegen=Codegen(emit_for=emit_for, vector_emit=vector_emit,
                                     expensive=expensive, raises=raises))


def reduction(name, impl, emit, init, vjp=None, nondiff=False, sums=False):
    """Declares a reduction over `axis` (a sorted tuple) with `keepdims`. `sums`: see
    Algebra."""

    def shape(x, *, axis, keepdims):
        if x.dtype == np.bool_:
            raise TypeError("cannot reduce a bool value; cast it first")
        if keepdims:
            out = tuple(1 if i in axis else d for i, d in enumerate(x.shape))
        else:
            out = tuple(d for i, d in enumerate(x.shape) if i not in axis)
        return Aval(out, x.dtype, x.weak)  # a Python number's stays one: float32 on its own

    return Primitive(name, "reduction", impl, shape, vjp, emit, ("x",), nondiff, init,
                     algebra=Algebra(sums=sums))


def primitive(name, kind, impl, shape, emit, vjp=None, nondiff=False,
              same_aval_is_identity=False, is_broadcast=False, rearranges=False,
              embeds=False, joins=False, selects=False, emit_for=None, raises=False, sums=False,
              batch=None, by_rows=False, aliases=None):
    """Declares a primitive with its own shape rule `shape(*avals, **params)`; the inputs
    are named by the shape rule's positional parameters. `emit_for` and `raises`: see
    Codegen (`by_rows`, `aliases` too); `batch`: see Primitive; the others after `nondiff`: see
    Algebra."""
    arg_names, variadic = _arg_names(shape, 0)
    algebra = Algebra(same_aval_is_identity=same_aval_is_identity, is_broadcast=is_broadcast,
                      rearranges=rearranges, embeds=embeds, joins=joins, selects=selects, sums=sums)
    return Primitive(name, kind, impl, shape, vjp, emit, arg_names, nondiff, variadic=variadic,
                     batch=batch, algebra=algebra,
                     codegen=Codegen(emit_for=emit_for, raises=raises, by_rows=by_rows,
                                     aliases=aliases))


def reduce_params(x, axis, keepdims, op):
    """Normalizes a reduction's axis argument against the operand's rank."""
    x = as_value(x, op)
    return x, {"axis": normalize_axes(axis, x.ndim, op), "keepdims": bool(keepdims)}
