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


class Context(threading.local):
    """What one thread is recording: a tape or trace opened in one thread is invisible to
    the others (JAX keeps its trace state per thread too). Each thread starts empty."""

    def __init__(self):
        self.tapes = []  # tapes whose context is open, innermost last
        self.traces = []  # traces now running, innermost last (trace.py pushes them)
        self.open = []  # the tapes and traces now open, both (kept by `enter` and `leave`)
        # (record, cotangent) pairs of the reverse sweeps now running; (None, None) while
        # seeding.
        self.adjoint = []
        self.guards = None  # the guards of the innermost trace (dims.py), None outside one
        # While a check reruns the eager tape with rounding noise (crosscheck.py): what
        # moves each eager op's result, perturb(prim, arrays, params, result).
        self.perturb = None


CONTEXT = Context()

# The tapes and traces open in any thread. A warm entry tests `OPEN_ANYWHERE and
# CONTEXT.open` (it hands a call made under this thread's tape or trace to the slow path):
# reading a thread-local attribute costs about 40 ns, a tenth of a small warm call, and
# this list is empty while no thread records.
OPEN_ANYWHERE: list = []
# The `perturb`s set in any thread: an eager op reads CONTEXT.perturb only while one is.
PERTURBING: list = []


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


def enter(stack, item):
    """A tape (stack CONTEXT.tapes) or a trace (stack CONTEXT.traces) opens."""
    stack.append(item)
    CONTEXT.open.append(item)
    OPEN_ANYWHERE.append(item)


def leave(stack, item):
    stack.remove(item)
    CONTEXT.open.remove(item)
    OPEN_ANYWHERE.remove(item)


def record(vjp, inputs, out, params):
    """Appends the op to every recording tape that watches one of its inputs."""
    if out.dtype.kind != "f":
        return
    for tape in CONTEXT.tapes:
        if tape._recording and any(v._id in tape._watched for v in inputs):
            tape._records.append(Record(vjp, tuple(inputs), out, params))
            tape._watched.add(out._id)


def record_outputs(vjp, inputs, outs, params):
    """`record` for an op of several outputs (see Record.outs)."""
    if not any(out.dtype.kind == "f" for out in outs):
        return
    for tape in CONTEXT.tapes:
        if tape._recording and any(v._id in tape._watched for v in inputs):
            tape._records.append(Record(vjp, tuple(inputs), outs[0], params, tuple(outs)))
            tape._watched.update(out._id for out in outs)


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
    """Marks ops run inside as the adjoint of `rec` (whose output's cotangent is given)."""
    context = CONTEXT
    context.adjoint.append((rec, cotangent))
    if context.traces and rec is not None:
        context.traces[-1].on_backward(rec, cotangent)
    try:
        yield
    finally:
        context.adjoint.pop()
