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

from srcxform.errors import SrcxformError


class ScheduleError(SrcxformError):
    """srcxform generated a kernel that reads a value before defining it."""


def check(source):
    """Raise ScheduleError where a function in `source` reads a local that may not yet
    be defined at that point."""
    tree = ast.parse(source)
    lines = source.splitlines()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            _Function(fn, lines).run()


class _Function:
    def __init__(self, fn, lines):
        self.fn, self.lines = fn, lines
        declared = {n for node in ast.walk(fn) if isinstance(node, (ast.Global, ast.Nonlocal))
                    for n in node.names}
        self.locals = {node.id for node in ast.walk(fn)
                       if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                       } - declared
        self.breaks = []  # per enclosing loop: the names defined at each of its `break`s

    def run(self):
        params = {a.arg for a in self.fn.args.posonlyargs + self.fn.args.args}
        self.block(self.fn.body, params)

    def block(self, statements, defined):
        """The names defined after `statements`, or None where they never fall through."""
        for s in statements:
            defined = self.statement(s, defined)
            if defined is None:
                return None
        return defined

    def statement(self, s, defined):
        if isinstance(s, ast.Assign):
            self.reads(s.value, defined)
            for target in s.targets:
                self.reads(target, defined)  # a subscript's array and index
            return defined | _stored(s.targets)
        if isinstance(s, ast.AugAssign):
            self.reads(s.value, defined)
            self.reads(ast.Name(s.target.id, ast.Load(), lineno=s.lineno)
                       if isinstance(s.target, ast.Name) else s.target, defined)
            return defined | _stored([s.target])
        if isinstance(s, ast.If):
            self.reads(s.test, defined)
            after = [d for d in (self.block(s.body, defined), self.block(s.orelse, defined))
                     if d is not None]
            return set.intersection(*after) if after else None
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, defined)
        if isinstance(s, ast.Break):
            self.breaks[-1].append(defined)
            return None
        if isinstance(s, (ast.Return, ast.Raise, ast.Continue)):
            self.reads(s, defined)
            return None
        self.reads(s, defined)  # an expression, `pass`, a `global`
        return defined

    def loop(self, s, defined):
        """A loop's body sees what is defined before it (and its own index); after it,
        only that, as it may run no times, except a `while True` left by its breaks."""
        if isinstance(s, ast.For):
            self.reads(s.iter, defined)
            inside = defined | _stored([s.target])
        else:
            self.reads(s.test, defined)
            inside = defined
        self.breaks.append([])
        self.block(s.body, inside)
        exits = self.breaks.pop()
        endless = isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and s.test.value
        if endless:
            return set.intersection(*exits) if exits else None
        after = self.block(s.orelse, defined)
        return after if not exits or after is None else \
            set.intersection(after, *exits)

    def reads(self, node, defined):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) \
                    and n.id in self.locals and n.id not in defined:
                line = self.lines[n.lineno - 1].strip() if n.lineno <= len(self.lines) else ""
                raise ScheduleError(
                    f"srcxform generated a kernel ({self.fn.name}) that reads `{n.id}` where it "
                    f"may not be defined, at line {n.lineno}: {line}\nThis is a bug in "
                    "srcxform's loop scheduling; please report it with this function.")


def _stored(targets):
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
