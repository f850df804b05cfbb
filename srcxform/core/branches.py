"""A branch not taken, for tape.explain: where a tensor's truth picks a branch while a
tape records (a Python `if` or `a if c else b` on a tensor, tf.cond run eagerly), the
values the other branch names are kept as a Cut of kind "branch not taken", at the
user's line. Their gradient is None for this run because that branch did not run.

The branch is found in the source of the user's line (its AST, parsed once a file), and
its names read from the user's frame: a name, `name.attribute` (an instance's own
attribute: no property runs), and the values a named function or lambda closes over.
"""

import ast
import linecache
import types

from srcxform.core import recording, syntax
from srcxform.core.errors import user_frame_object

_BRANCHES: dict = {}  # filename -> [(first line, last line, kind, names if true, if false)]
_AT: dict = {}  # (filename, line) -> its innermost branch's (kind, names, names), or None


def not_taken(truth, is_value, by_srcxform):
    """Keeps the branch `truth` did not pick, on each recording tape that watches (or
    would watch, a trainable Variable) a value it names. `is_value`: whether an object is
    a srcxform value (this module imports no value class); `by_srcxform`: the truth was
    asked by srcxform's code, which only cond() does for the user."""
    frame = user_frame_object()
    if frame is None:
        return
    found = _branch_at(frame.f_code.co_filename, frame.f_lineno)
    if found is None or by_srcxform and found[0] != "cond":
        return
    kind, if_true, if_false = found
    values = [v for v in _values(if_false if truth else if_true, frame) if is_value(v)]
    for tape in recording.CONTEXT.tapes:
        ids = tuple(v._id for v in values if v._id in tape._watched or (
            tape._watch_accessed and getattr(v, "trainable", False)))
        if ids and tape._recording:
            tape._cuts.append(recording.Cut(
                "branch not taken", kind, ids, None, (frame.f_code.co_filename, frame.f_lineno),
                _detail(kind, truth)))


def _detail(kind, truth):
    if kind == "cond":
        return f"{'false_fn' if truth else 'true_fn'} did not run (the predicate was {truth})"
    return f"the {'else' if truth else 'if'} branch did not run (the condition was {truth})"


def _branch_at(filename, line):
    """(kind, names the branch taken on True does not run, on False), of the innermost
    `if`, conditional expression or cond() call whose condition is at this line."""
    if (filename, line) not in _AT:
        if filename not in _BRANCHES:
            _BRANCHES[filename] = _branches(filename)
        inside = [b for b in _BRANCHES[filename] if b[0] <= line <= b[1]]
        _AT[filename, line] = min(inside, key=lambda b: b[1] - b[0])[2:] if inside else None
    return _AT[filename, line]


def _branches(filename):
    try:
        tree = syntax.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        for block in _blocks(node):
            for k, statement in enumerate(block):
                if isinstance(statement, ast.If):
                    found.append(_if(statement, block[k + 1:]))
        if isinstance(node, ast.IfExp):
            found.append((node.test.lineno, node.test.end_lineno, "if",
                          _names([node.body]), _names([node.orelse])))
        elif isinstance(node, ast.Call) and _called(node.func) == "cond":
            fns = dict(zip(("pred", "true_fn", "false_fn"), node.args))
            fns.update((k.arg, k.value) for k in node.keywords)
            found.append((node.lineno, node.end_lineno, "cond",
                          _names([fns.get("true_fn")]), _names([fns.get("false_fn")])))
    return found


def _blocks(node):
    return [block for field in ("body", "orelse", "finalbody")
            if isinstance(block := getattr(node, field, None), list)]


def _if(statement, rest):
    """An `if` statement's entry. An `if` with no `else` whose body returns (or raises,
    breaks, continues) leaves the statements after it as its other branch."""
    orelse = statement.orelse
    if not orelse and isinstance(statement.body[-1], (ast.Return, ast.Raise, ast.Break,
                                                      ast.Continue)):
        orelse = rest
    test = statement.test
    return test.lineno, test.end_lineno, "if", _names(statement.body), _names(orelse)


def _called(func):
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _names(nodes):
    """The names (`x`, or ("obj", "attr") for obj.attr) read in these statements."""
    names = set()
    for node in (n for top in nodes if top is not None for n in ast.walk(top)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names.add((node.value.id, node.attr))
    return frozenset(names)


def _values(names, frame):
    """What the names hold in the frame, and what a function among them closes over."""
    for name in names:
        obj, attr = (name, None) if isinstance(name, str) else name
        value = frame.f_locals.get(obj, frame.f_globals.get(obj))
        if attr is not None:
            value = getattr(value, "__dict__", {}).get(attr)
        yield value
        if isinstance(value, types.FunctionType):
            yield from _contents(value.__closure__ or ())
            yield from (value.__globals__.get(n) for n in value.__code__.co_names)


def _contents(cells):
    for cell in cells:
        try:
            yield cell.cell_contents
        except ValueError:  # a cell not yet assigned
            continue
