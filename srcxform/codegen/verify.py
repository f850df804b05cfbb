"""The generated kernel's one scheduling invariant, checked on its source: every local a
statement reads is certainly defined there, by an earlier statement on every path to it.

A loop nest's scalar temporaries (`v_i`) live in that nest: a later nest that reads one
without computing it again would see the last element the earlier nest left behind, a
silently wrong value that no test of the result can be sure to catch (the loop
scheduler's stale-value bug). Python allows the read, and so does Numba, so the rule is
checked here, on every kernel: a loop may run no times, so what only a loop's body
defines is not defined after it, and what a branch alone defines is not defined after
the `if`. A failure is a bug in srcxform, raised with the kernel's line.
"""

import ast

from srcxform.core.errors import SrcxformError
from srcxform.core import syntax


class ScheduleError(SrcxformError):
    """srcxform generated a kernel that reads a value before defining it."""


def check(source):
    """Raise ScheduleError where a function in `source` reads a local that may not yet
    be defined at that point."""
    tree = syntax.parse(source)
    lines = source.splitlines()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            _Function(fn, lines).run()


class _Function:
    """Walks one function in order. What is defined is a stack of scopes, one for the
    function and one for each branch or loop body being walked: a statement adds to the
    innermost, and each look-up searches the few scopes open, so a long kernel costs
    time in proportion to its length."""

    def __init__(self, fn, lines):
        self.fn, self.lines = fn, lines
        declared = {n for node in ast.walk(fn) if isinstance(node, (ast.Global, ast.Nonlocal))
                    for n in node.names}
        self.locals = {node.id for node in ast.walk(fn)
                       if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                       } - declared
        self.scopes = []
        self.breaks = []  # per enclosing loop: what its body had defined at each `break`

    def run(self):
        params = {a.arg for a in self.fn.args.posonlyargs + self.fn.args.args}
        self.body(self.fn.body, params)

    def body(self, statements, defined=()):
        """Walks statements in a new scope holding `defined`: what they define, or None
        where they never fall through."""
        self.scopes.append(set(defined))
        falls_through = all(self.statement(s) for s in statements)
        scope = self.scopes.pop()
        return scope if falls_through else None

    def statement(self, s):
        """Walks one statement; False where it never falls through."""
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            self.reads(s.value)
            for target in targets:
                self.reads(target)  # a subscript's array and index
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                self.read(s.target)
            self.scopes[-1].update(_stored(targets))
        elif isinstance(s, ast.If):
            self.reads(s.test)
            after = [d for d in (self.body(s.body), self.body(s.orelse)) if d is not None]
            if not after:
                return False
            self.scopes[-1].update(set.intersection(*after))
        elif isinstance(s, (ast.For, ast.While)):
            return self.loop(s)
        elif isinstance(s, ast.Break):
            self.breaks[-1].append(set().union(*self.scopes[self.breaks[-1].depth:]))
            return False
        else:  # an expression, `pass`, a `global`, a `return`, `raise`, `continue`
            self.reads(s)
            return not isinstance(s, (ast.Return, ast.Raise, ast.Continue))
        return True

    def loop(self, s):
        """A loop's body sees what is defined before it (and its own index); after it,
        only that, as it may run no times, except a `while True` left by its breaks."""
        self.reads(s.iter if isinstance(s, ast.For) else s.test)
        self.breaks.append(_Exits(len(self.scopes)))
        self.body(s.body, _stored([s.target]) if isinstance(s, ast.For) else ())
        exits = self.breaks.pop()
        if isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and s.test.value:
            if not exits:
                return False
            self.scopes[-1].update(set.intersection(*exits))
            return True
        after = self.body(s.orelse)
        if after is not None and not exits:
            self.scopes[-1].update(after)
        return True

    def reads(self, node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.read(n)

    def read(self, name):
        if name.id in self.locals and not any(name.id in d for d in self.scopes):
            n = name.lineno
            line = self.lines[n - 1].strip() if n <= len(self.lines) else ""
            raise ScheduleError(
                f"srcxform generated a kernel ({self.fn.name}) that reads `{name.id}` where "
                f"it may not be defined, at line {n}: {line}\nThis is a bug in srcxform's "
                "loop scheduling; please report it with this function.")


class _Exits(list):
    """What a loop's body had defined at each of its `break`s, beyond the scopes below
    `depth` (those open before the loop)."""

    def __init__(self, depth):
        super().__init__()
        self.depth = depth


def _stored(targets):
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
