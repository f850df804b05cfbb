"""The tapes now recording, the traces now running (each thread's own), and what each
op tells them.

`bind` calls `record` after every differentiable op; `as_value` calls `variable_read`
when a Variable is used; backprop marks each step of a reverse sweep with `adjoint`,
which is how traced equations learn they belong to the adjoint and where it came from.
This module holds no gradient logic (that is backprop.py).
"""

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass

from srcxform.core import settings
from srcxform.core.errors import user_frame


class Context(threading.local):
    """What one thread is recording: a tape or trace opened in one thread is invisible to
    the others (JAX keeps its trace state per thread too). Each thread starts empty."""

    def __init__(self):
        self.tapes = []  # tapes whose context is open, innermost last
        self.accumulators = []  # forward accumulators whose context is open (forward.py)
        self.traces = []  # traces now running, innermost last (trace.py pushes them)
        self.open = []  # the tapes and traces now open, both (kept by `enter` and `leave`)
        # (record, cotangent) pairs of the reverse sweeps now running; (None, None) while
        # seeding.
        self.adjoint = []
        self.guards = None  # the guards of the innermost trace (dims.py), None outside one
        # While a check reruns the eager tape with rounding noise (crosscheck.py): what
        # moves each eager op's result, perturb(prim, arrays, params, result).
        self.perturb = None
        # debug_nans (ad/nan_checks.py), this thread's: how many VJPs now run with their
        # ops' errors held (Holding), the errors held, and whether explain's probe turned
        # the checks off here (the flag DEBUG_NANS stays as other threads see it).
        self.holding = 0
        self.held = {}
        self.nans_quiet = False
        # The user's (file, line) that ops belong to while srcxform replays one of theirs
        # (a JVP pushed through a record, a reverse sweep's VJP of one), else None: the
        # innermost frame outside srcxform is theirs.
        self.origin = None


CONTEXT = Context()

# The tapes and traces open in any thread. A warm entry tests `OPEN_ANYWHERE and
# CONTEXT.open` (it hands a call made under this thread's tape or trace to the slow path):
# reading a thread-local attribute costs about 40 ns, a tenth of a small warm call, and
# this list is empty while no thread records.
OPEN_ANYWHERE: list = []
# The `perturb`s set in any thread: an eager op reads CONTEXT.perturb only while one is.
PERTURBING: list = []
# Whether eager ops check their results for a NaN or inf they made (debug_nans.py sets
# it): a module global, so that an op pays one flag test while it is off.
DEBUG_NANS = settings.switch("SRCXFORM_DEBUG_NANS")
# The eager check, NAN_CHECK(prim, values, arrays, params, out): ad/nan_checks.py's.
NAN_CHECK: Callable | None = None


@dataclass(slots=True)
class Record:
    """One recorded op: `vjp(g, out, *inputs, **params)` gives the inputs' cotangents.

    An op of several outputs (a compiled loop's carries) has them in `outs`, `out` being
    the first (it names the adjoint's origin); its VJP takes a list of cotangents, None
    for an output that has none, and the outputs."""

    vjp: Callable
    inputs: tuple
    out: object
    params: dict
    outs: tuple | None = None
    op: object = None  # the primitive (or a name) that made it, for tape.explain
    origin: tuple | None = None  # the user's (file, line) that ran it


@dataclass(slots=True)
class Cut:
    """An op that took a watched value (or one made from a cut) and that the tape does not
    differentiate, kept with its line for tape.explain: `kind` says why (see explain.py);
    `out` is the id of what it made, None where srcxform cannot follow it (a NumPy array).
    A `through` cut is an op on a cut's output: it links that cut to what it reaches."""

    kind: str
    op: object
    inputs: tuple  # ids
    out: int | None
    origin: tuple | None
    detail: str = ""


def enter(stack, item):
    """A tape (stack CONTEXT.tapes) or a trace (stack CONTEXT.traces) opens."""
    stack.append(item)
    CONTEXT.open.append(item)
    OPEN_ANYWHERE.append(item)


def leave(stack, item):
    stack.remove(item)
    CONTEXT.open.remove(item)
    OPEN_ANYWHERE.remove(item)


def current_origin():
    """The user's (file, line) an op made now belongs to (Context.origin)."""
    return CONTEXT.origin or user_frame()


@contextlib.contextmanager
def replaying(at):
    """Ops made inside belong to the user's line `at` (a record's origin; None: as they
    would), as a JVP pushed through a record belongs to the op recorded."""
    saved = CONTEXT.origin
    CONTEXT.origin = at or saved
    try:
        yield
    finally:
        CONTEXT.origin = saved


def record(vjp, inputs, out, params, op=None):
    """Appends the op to every recording tape that watches one of its inputs. An op whose
    output is not float carries no gradient: the tape keeps it as a Cut instead."""
    if out.dtype.kind != "f":
        if CONTEXT.tapes:
            kind = "no gradient" if getattr(op, "nondiff", False) else _dtype_kind(out.dtype)
            cut_by(kind, op, inputs, out, out.dtype.name)
        return
    for tape in CONTEXT.tapes:
        if tape._recording and any(v._id in tape._watched for v in inputs):
            tape._records.append(Record(vjp, tuple(inputs), out, params, None, op,
                                        current_origin()))
            tape._watched.add(out._id)
        elif tape._cut_ids and tape._recording:
            _through(tape, op, inputs, out._id)
    for accumulator in CONTEXT.accumulators:
        accumulator.observe(Record(vjp, tuple(inputs), out, params))


def record_outputs(vjp, inputs, outs, params, op=None):
    """`record` for an op of several outputs (see Record.outs)."""
    if not any(out.dtype.kind == "f" for out in outs):
        return
    for tape in CONTEXT.tapes:
        if tape._recording and any(v._id in tape._watched for v in inputs):
            tape._records.append(Record(vjp, tuple(inputs), outs[0], params, tuple(outs),
                                        op, current_origin()))
            tape._watched.update(out._id for out in outs)
    for accumulator in CONTEXT.accumulators:
        accumulator.observe(Record(vjp, tuple(inputs), outs[0], params, tuple(outs)))


def cut_by(kind, op, inputs, out, detail="", origin=None):
    """An op on `inputs` that no tape differentiates (see Cut): each recording tape that
    watches one of them, or holds a cut one came from, keeps it. `out`: a value, or None;
    `origin`: the user's (file, line) where the innermost frame outside srcxform is not
    (NumPy's own code converting a list). Returns whether a tape watched an input (a
    gradient is cut here)."""
    out_id = None if out is None else out._id
    kept = False
    for tape in CONTEXT.tapes:
        if not tape._recording:
            continue
        if any(v._id in tape._watched for v in inputs):
            tape._cuts.append(Cut(kind, op, tuple(v._id for v in inputs), out_id,
                                  origin or current_origin(), detail))
            kept = True
            if out_id is not None:
                tape._cut_ids.add(out_id)
        elif tape._cut_ids and out_id is not None:
            _through(tape, op, inputs, out_id)
    return kept


def _through(tape, op, inputs, out_id):
    """Follows a cut's output through an op the tape does not record (it is no longer
    watched), so that explain can tell which target the cut would have reached."""
    ids = tuple(v._id for v in inputs)
    if any(i in tape._cut_ids for i in ids):
        tape._cuts.append(Cut("through", op, ids, out_id, None))
        tape._cut_ids.add(out_id)


def _dtype_kind(dtype):
    return "bool dtype" if dtype.kind == "b" else "integer dtype"


def watching(inputs):
    """Whether some recording tape watches one of `inputs`: an op on them is recorded."""
    return any(tape._recording and any(v._id in tape._watched for v in inputs)
               for tape in CONTEXT.tapes)


def replayed():
    """Whether what is traced now is in a region (structured.SubTrace: a compiled loop's
    body, a cond's branch) that a tape outside it differentiates by evaluating the
    region's equations again. A region records the tapes recording where it runs."""
    trace = CONTEXT.traces[-1] if CONTEXT.traces else None
    while trace is not None:
        if getattr(trace, "tapes", None):
            return True
        trace = getattr(trace, "parent", None)
    return False


def tapes_watching(inputs):
    """How many recording tapes watch one of `inputs` (more than one: a higher order)."""
    return sum(tape._recording and any(v._id in tape._watched for v in inputs)
               for tape in CONTEXT.tapes)


def variable_read(variable, tapes=None):
    """A trainable Variable read inside a tape that watches accessed variables is watched.
    `tapes`: those recording where the read runs, when that is not here (a compiled loop
    body, traced with them paused)."""
    if tapes is None:
        tapes = [tape for tape in CONTEXT.tapes if tape._recording]
    for tape in tapes:
        if tape._watch_accessed and variable.trainable:
            tape._watch_variable(variable)


@contextlib.contextmanager
def paused():
    """No tape records inside this block (custom_gradient's forward pass)."""
    states = [(tape, tape._recording) for tape in CONTEXT.tapes]
    for tape, _ in states:
        tape._recording = False
    try:
        yield
    finally:
        for tape, state in states:
            tape._recording = state


@contextlib.contextmanager
def adjoint(rec=None, cotangent=None):
    """Marks ops run inside as the adjoint of `rec` (whose output's cotangent is given),
    made at its line (a tape recording them, for a higher order, records that line)."""
    context = CONTEXT
    context.adjoint.append((rec, cotangent))
    if context.traces and rec is not None:
        context.traces[-1].on_backward(rec, cotangent)
    try:
        with replaying(rec.origin if rec is not None else None):
            yield
    finally:
        context.adjoint.pop()
