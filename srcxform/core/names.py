"""Deterministic, readable names for IR values and generated code.

User names where known (arguments, and the target of the user's assignment line),
`b<name>` for the cotangent of a named value, `t<k>` for other temporaries; counters
run in program order, so the same program always prints the same text.

Every name the Namer hands out is distinct from every other, from each one's loop form
(`<name>_i`, a value's element in a loop nest) and from the names generated code binds by
its own schemes: loop indices `i<p>` and sizes `n<k>`, and the globals it reads. So any
user name may be kept where it clashes with none of them, and otherwise gets a suffix.
"""

import ast
import hashlib
import keyword
import re
import unicodedata

from srcxform import runtime
from srcxform.core import syntax
from srcxform.core.errors import source_line

# What an emit template may call besides its operands: NumPy, math, a few builtins, and
# the runtime modules generated code imports.
TEMPLATE_GLOBALS = ("np", "math", "range", "max", "min") + runtime.MODULES
# The globals generated code reads: those, and prange.
_GLOBALS = frozenset(TEMPLATE_GLOBALS + ("prange",))
# Names generated code makes by counting: loop indices, sizes, temporaries.
_COUNTED = re.compile(r"[int]\d+")
_LOOP_FORM = "_i"


class Namer:
    """Names the values of one program; call it with a Var. `reserved`: names a target's
    code binds besides the globals (the CUDA driver's `buffers`, a kernel's `flat`)."""

    def __init__(self, program, reserved=frozenset()):
        self._reserved = _GLOBALS | reserved
        self._names = {}
        self._taken = set()  # each name handed out, and its loop form
        self._temps = 0
        self._walk(program)

    def _walk(self, program):
        """Names a program's values, and those of the regions (sub-programs) in its
        equations' params (structured.py), each region where its equation is."""
        for var in program.ins:
            self._assign(var, program.hints.get(var))
        for eqn in program.eqns:
            for _, value in eqn.params:
                if hasattr(value, "eqns"):
                    self._walk(value)
            hint = program.hints.get(eqn.out)
            primal = program.adjoint_of.get(eqn.out)
            if hint is None and primal is not None and primal in program.hints:
                hint = "b" + self._names.get(primal, program.hints[primal])
            self._assign(eqn.out, hint)

    def __call__(self, var):
        return self._names[var]

    def add(self, var):
        """Names a value made after the program was named (code generation's rewrite of a
        region: codegen/control.py)."""
        self._assign(var, None)

    def in_loop(self, var):
        """The name of var's element inside a loop nest: its loop form."""
        return self._names[var] + _LOOP_FORM

    def fresh(self, base):
        """A name for generated code's own use (`base`, else base_1, base_2 …), clashing
        with no name handed out before, no loop form, no global and no counted name."""
        name, k = base, 1
        while not self._free(name) or _COUNTED.fullmatch(name):
            name, k = f"{base}_{k}", k + 1
        self._take(name)
        return name

    def _assign(self, var, hint):
        if var in self._names:
            return
        if hint is None:
            while not self._free(f"t{self._temps}"):  # a user's name ends in _i
                self._temps += 1
            name = f"t{self._temps}"
            self._temps += 1
            self._take(name)
        else:
            name = self.fresh(identifier(hint))
        self._names[var] = name

    def _free(self, name):
        return name not in self._reserved and not {name, name + _LOOP_FORM} & self._taken

    def _take(self, name):
        self._taken |= {name, name + _LOOP_FORM}


def identifier(hint):
    """A Python identifier made from hint: other characters as `_`, `v` before a leading
    digit, `_` after a keyword. Normalized as Python normalizes identifiers (NFKC), so
    that two names it makes differ as identifiers too, and generated source names what
    srcxform calls it. Every name of the user's that generated code holds is made here."""
    hint = unicodedata.normalize("NFKC", hint)
    name = "".join(c if ("v" + c).isidentifier() else "_" for c in hint).strip("_") or "v"
    if not name.isidentifier():  # it starts with a digit, or a mark that joins the v
        name = unicodedata.normalize("NFKC", "v" + name)
    return name + "_" if keyword.iskeyword(name) else name


# The most UTF-8 bytes of a function's name that generated code names its kernel after:
# the kernel's module file and Numba's cache files are named after the kernel, twice over
# in Numba's (module and function), and a file system allows 255 bytes a file name.
_FUNCTION_NAME_BYTES = 48


def function_name(hint):
    """The identifier a function's kernel and generated functions are named after: the
    identifier of `hint`, where longer than _FUNCTION_NAME_BYTES in UTF-8 its longest
    prefix that leaves room for `_` and a digest of it all (names that share the prefix
    stay apart)."""
    name = identifier(hint)
    data = name.encode()
    if len(data) <= _FUNCTION_NAME_BYTES:
        return name
    digest = hashlib.sha256(data).hexdigest()[:16]
    prefix = data[:_FUNCTION_NAME_BYTES - len(digest) - 1].decode(errors="ignore")
    return f"{identifier(prefix)}_{digest}"


def assigned_name(origin):
    """The variable a user's line assigns (`s = tf.reduce_sum(b)` gives 's'), or None."""
    if origin is None:
        return None
    line = source_line(*origin).strip()
    try:
        stmt = syntax.parse(line).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target = stmt.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None
