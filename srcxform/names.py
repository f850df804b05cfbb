"""Deterministic, readable names for IR values and generated code.

User names where known (arguments, and the target of the user's assignment line),
`b<name>` for the cotangent of a named value, `t<k>` for other temporaries; counters
run in program order, so the same program always prints the same text.
"""

import ast
import keyword
import linecache
import re

# Names that generated code uses for its own purposes.
_RESERVED = re.compile(r"^([tin]\d+|np|math|range|prange|min|max|out|acc)$")


class Namer:
    """Names the values of one program; call it with a Var."""

    def __init__(self, program):
        self._names = {}
        self._taken = set()
        self._temps = 0
        for var in program.ins:
            self._assign(var, program.hints.get(var))
        for eqn in program.eqns:
            hint = program.hints.get(eqn.out)
            primal = program.adjoint_of.get(eqn.out)
            if hint is None and primal is not None and primal in program.hints:
                hint = "b" + self._names.get(primal, program.hints[primal])
            self._assign(eqn.out, hint)

    def __call__(self, var):
        return self._names[var]

    def fresh(self, base):
        """A name for generated code's own use (`base`, else base1, base2 …), taken by no
        value, no value's loop form (`<name>_i`) and no earlier fresh name."""
        name, k = base, 1
        while name in self._taken or name.endswith("_i") and name[:-2] in self._taken:
            name, k = f"{base}{k}", k + 1
        self._taken.add(name)
        return name

    def _assign(self, var, hint):
        if var in self._names:
            return
        if hint is None:
            name = f"t{self._temps}"
            self._temps += 1
        else:
            name = identifier(hint)
            base, k = name, 1
            while name in self._taken:
                name = f"{base}_{k}"
                k += 1
        self._taken.add(name)
        self._names[var] = name


def identifier(hint):
    name = re.sub(r"\W", "_", hint).strip("_") or "v"
    if name[0].isdigit() or keyword.iskeyword(name) or _RESERVED.match(name):
        name = name + "_"
    return name


def assigned_name(origin):
    """The variable a user's line assigns (`s = tf.reduce_sum(b)` gives 's'), or None."""
    if origin is None:
        return None
    line = linecache.getline(*origin).strip()
    try:
        stmt = ast.parse(line).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target = stmt.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None
