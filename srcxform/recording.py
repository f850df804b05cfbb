"""The tapes now recording, the traces now running, and what each op tells them.

`bind` calls `record` after every differentiable op; `as_value` calls `variable_read`
when a Variable is used; backprop marks each step of a reverse sweep with `adjoint`,
which is how traced equations learn they belong to the adjoint and where it came from.
This module holds no gradient logic (that is backprop.py).
"""

import contextlib
from dataclasses import dataclass
from typing import Callable

# Tapes whose context is open, innermost last.
ACTIVE: list = []
# Traces now running, innermost last (trace.py pushes them).
TRACES: list = []
# The tapes and traces now open, both: the one list a warm entry tests (it hands the call
# to the slow path while any is open). Kept by `enter` and `leave`.
OPEN: list = []
# (record, cotangent) pairs of the reverse sweeps now running; (None, None) while seeding.
ADJOINT: list = []


@dataclass(slots=True)
class Record:
    """One recorded op: `vjp(g, out, *inputs, **params)` gives the inputs' cotangents."""

    vjp: Callable
    inputs: tuple
    out: object
    params: dict


def enter(stack, item):
    """A tape (stack ACTIVE) or a trace (stack TRACES) opens."""
    stack.append(item)
    OPEN.append(item)


def leave(stack, item):
    stack.remove(item)
    OPEN.remove(item)


def record(vjp, inputs, out, params):
    """Appends the op to every recording tape that watches one of its inputs."""
    if out.dtype.kind != "f":
        return
    for tape in ACTIVE:
        if tape._recording and any(v._id in tape._watched for v in inputs):
            tape._records.append(Record(vjp, tuple(inputs), out, params))
            tape._watched.add(out._id)


def variable_read(variable):
    """A trainable Variable read inside a tape that watches accessed variables is watched."""
    for tape in ACTIVE:
        if tape._recording and tape._watch_accessed and variable.trainable:
            tape._watch_variable(variable)


@contextlib.contextmanager
def paused():
    """No tape records inside this block (custom_gradient's forward pass)."""
    states = [(tape, tape._recording) for tape in ACTIVE]
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
    ADJOINT.append((rec, cotangent))
    if TRACES and rec is not None:
        TRACES[-1].on_backward(rec, cotangent)
    try:
        yield
    finally:
        ADJOINT.pop()
