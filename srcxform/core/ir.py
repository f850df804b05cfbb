"""The IR: typed values, one-output equations in A-normal form, programs; the printed
form (`f.ir()`) and the verifier.

Nothing here knows a primitive by name: equations carry the Primitive record.
"""

from dataclasses import dataclass, field

import numpy as np

from srcxform.core.aval import Aval
from srcxform.core.dims import Dim, concrete, printed_value, symbol_text
from srcxform.core.errors import SrcxformError


@dataclass(frozen=True, slots=True, eq=False)
class Var:
    """A value computed once; compared by identity."""

    aval: Aval


@dataclass(frozen=True, slots=True)
class Lit:
    """A scalar constant (a Python number, or a Dim computed from the input sizes)."""

    value: object
    aval: Aval

    def __hash__(self):  # a Dim's own hash would guard the kernel to its size
        return hash((self.value.value if isinstance(self.value, Dim) else self.value, self.aval))


@dataclass(frozen=True, slots=True, eq=False)
class Eqn:
    """out = prim(*ins, **params), traced from `origin` (filename, line); in an adjoint,
    `of` is the name of the forward op it is (part of) the gradient of, for messages."""

    out: Var
    prim: object
    ins: tuple
    params: tuple  # sorted (name, value) pairs: hashable, ordered
    origin: tuple | None = None
    adjoint: bool = False
    of: str | None = None

    @property
    def kwargs(self):
        return dict(self.params)

    def with_ins(self, ins):
        return Eqn(self.out, self.prim, tuple(ins), self.params, self.origin, self.adjoint,
                   self.of)


@dataclass(eq=False)
class Program:
    """A traced function: inputs (user leaves, then constants), equations, outputs.

    `sizes` says where each size symbol is read from: (input index, axis).
    `hints` holds user-given names and `adjoint_of` ties a cotangent to its primal, for
    naming (codegen/names.py).
    """

    name: str
    ins: list
    eqns: list
    outs: list
    consts: list = field(default_factory=list)  # (Var, ndarray) pairs, also in ins
    sizes: list = field(default_factory=list)
    hints: dict = field(default_factory=dict)
    adjoint_of: dict = field(default_factory=dict)

    def replace(self, **changes):
        fields = dict(self.__dict__)
        fields.update(changes)
        return Program(**fields)

    def __str__(self):
        from srcxform.core.names import Namer

        return format_program(self, Namer(self))

    def check(self):
        """Verifies SSA, definition before use and each equation's aval against its
        primitive's shape rule; raises SrcxformError naming the first fault."""
        defined = set(self.ins)
        for eqn in self.eqns:
            for atom in eqn.ins:
                if isinstance(atom, Var) and atom not in defined:
                    raise SrcxformError(f"IR: {eqn.prim.name} uses a value before it is defined")
            if eqn.out in defined:
                raise SrcxformError(f"IR: {eqn.prim.name} redefines a value (not SSA)")
            expected = eqn.prim.shape(*[a.aval for a in eqn.ins], **eqn.kwargs)
            if (tuple(map(concrete, expected.shape)), expected.dtype) != \
                    (tuple(map(concrete, eqn.out.aval.shape)), eqn.out.aval.dtype):
                raise SrcxformError(f"IR: {eqn.prim.name} gives {expected.short()}, but its "
                                    f"output is typed {eqn.out.aval.short()}")
            defined.add(eqn.out)
        for atom in self.outs:
            if isinstance(atom, Var) and atom not in defined:
                raise SrcxformError("IR: an output is never defined")
        return self

    def copied_outputs(self, filled=()):
        """The positions of the outputs a kernel returns as copies: an input of rank 1 or
        more (a captured array, an argument, a Variable's value) or what may be a view of
        one (a transpose, a reshape, a slice, a broadcast, what a loop or a cond gives
        back: structural and structured ops), or a value returned again
        (y and y * 1.0, one value once simplified). Eagerly each is made anew, and a caller
        changing one result must not change an argument, a Variable, another result or
        the next call's. `filled`: positions written into the caller's own buffers, never
        copied."""
        shared = {v for v in self.ins if v.aval.shape} | {self.outs[p] for p in filled}
        for eqn in self.eqns:  # (a loop's or cond's results may be what it was given)
            may_view = eqn.prim.kind == "structural" or eqn.prim.algebra.is_broadcast or \
                getattr(eqn.prim, "structured", False)
            if may_view and any(a in shared for a in eqn.ins):
                shared.add(eqn.out)
        copied = set()
        for p, atom in enumerate(self.outs):
            if p not in filled and isinstance(atom, Var):
                if atom in shared and atom.aval.shape:
                    copied.add(p)
                shared.add(atom)
        return copied


def equations(program):
    """Every equation of program, its regions' (a loop's body, a branch) too, depth first."""
    for eqn in program.eqns:
        yield eqn
        for _, value in eqn.params:
            if isinstance(value, Program):
                yield from equations(value)


def may_raise(program):
    """Whether a program's code, its regions' too, may raise (Codegen.raises): a runtime
    check of an index, an integer divisor or a matrix."""
    return any(not getattr(e.prim, "structured", False) and
               e.prim.may_raise([a.aval for a in e.ins], e.out.aval, e.kwargs)
               for e in equations(program))


def format_atom(atom, namer):
    if not isinstance(atom, Lit):
        return namer(atom)
    if not isinstance(atom.value, Dim):
        return repr(atom.value)
    value = printed_value(atom.value)
    if value is None:
        return symbol_text(atom.value)
    # Valued (dims.printing(sizes)), in the Lit's dtype: as a constant folded from it prints.
    return repr(float(value)) if atom.aval.dtype.kind == "f" else str(value)


def format_param(value):
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, tuple):
        inner = ", ".join(format_param(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return symbol_text(value)


def format_program(program, namer, width=100):
    """The printed form: a typed, one-equation-a-line function that reads like Python,
    each run of equations from one user line headed by that line (cut to `width`)."""
    from srcxform.core.errors import cut, user_line

    args = [f"{namer(v)}: {v.aval.short(symbolic=True)}" for v in program.ins]
    outs = ", ".join(a.aval.short(symbolic=True) for a in program.outs)
    head = f"def {program.name}({', '.join(args)}) -> ({outs}):"
    if len(head) > width:  # one parameter a line
        head = f"def {program.name}(\n" + "".join(f"    {a},\n" for a in args) + \
            f") -> ({outs}):"
    lines, in_adjoint, last_origin = [head], False, None
    for eqn in program.eqns:
        if getattr(eqn.prim, "is_result", False):  # shown by its structured equation
            continue
        if eqn.adjoint and not in_adjoint:
            lines.append("    # ---- adjoint ----")
            in_adjoint = True
        if eqn.origin and (eqn.origin, eqn.adjoint) != last_origin:
            comment = ("grad of " if eqn.adjoint else "") + user_line(eqn.origin)
            lines.append(cut(f"    # {comment}", width))
            last_origin = (eqn.origin, eqn.adjoint)
        if hasattr(eqn.prim, "format_lines"):  # a loop or branch, with its regions
            lines += eqn.prim.format_lines(eqn, program, namer, width)
            continue
        ins = [format_atom(a, namer) for a in eqn.ins]
        ins += [f"{k}={format_param(v)}" for k, v in eqn.params]
        typed = f"{namer(eqn.out)}: {eqn.out.aval.short(symbolic=True)}"
        lines.append(f"    {typed} = {eqn.prim.name}({', '.join(ins)})")
    lines.append("    return " + ", ".join(format_atom(a, namer) for a in program.outs))
    return "\n".join(lines)
