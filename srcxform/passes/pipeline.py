"""The ordered pass list, run to a fixed point on the passes' `changed` flags.

`SRCXFORM_DUMP=passes` prints the program after each pass that changed it.
"""

import os

from srcxform.core.dims import check_sized
from srcxform.passes import carries, cse, dce, simplify

PASSES = (simplify, cse, dce, carries)


def optimize(program, check=False, keep_gradient_stops=False):
    """Runs the passes until none changes the program; `check` verifies after each.
    keep_gradient_stops: simplify keeps stop_gradient (see simplify.run)."""
    dump = "passes" in os.environ.get("SRCXFORM_DUMP", "")
    changed = True
    while changed:
        changed = False
        for p in PASSES:
            if p is simplify:
                program, did = p.run(program, keep_gradient_stops)
            else:
                program, did = p.run(program)
            if did:
                changed = True
                if check:
                    program.check()
                if dump:
                    print(f"# after {p.__name__.rsplit('.', 1)[-1]}\n{program}\n")
    _check_sized(program)
    return program


def _check_sized(program):
    """Raises where an equation other than a compiled loop's own takes or makes an array
    shaped as a loop's stack, whose leading dim is known only once the loop has run: code
    generation would size it 0 and read past its end. Nothing is known to make one (a
    loop's tangents, which did, are a loop's now: structured.LoopRule); a guard."""
    for eqn in program.eqns:
        if getattr(eqn.prim, "structured", False):
            continue
        for var in (eqn.out, *eqn.ins):
            shape = getattr(getattr(var, "aval", None), "shape", ())
            check_sized(shape, eqn.prim.name, eqn.origin)
