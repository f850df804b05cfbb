"""The static analysis rewrite.py rewrites by: which names a block of statements may
assign, which it surely assigns, which it reads before assigning, and what in it a branch
or loop on a traced value cannot run (return, break, in-place changes).

Every answer errs on the safe side: a name is read or live if it might be, assigned
surely only if every path that completes assigns it.
"""

import ast

# Scopes of their own: their bodies neither assign nor break out of the enclosing ones.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Methods that change a list, dict, set or deque in place.
MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear",
                      "update", "setdefault", "add", "discard", "sort", "reverse",
                      "appendleft", "extendleft"})


def local_nodes(node):
    """node and the nodes under it that run in its scope: a nested function, class or
    lambda is itself included, its body is not; nor is a comprehension's own target."""
    yield node
    if isinstance(node, _SCOPES):
        return
    for name, value in ast.iter_fields(node):
        if isinstance(node, ast.comprehension) and name == "target":
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from local_nodes(child)


def target_names(target):
    """The names an assignment target binds: x, (a, b), [a, *rest]; none for x[i], x.y."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(target_names(t) for t in target.elts))
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return set()


def assigned(stmts):
    """The names the statements may bind in their scope."""
    names = set()
    for stmt in stmts:
        for node in local_nodes(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return names


def reads(node):
    """The names read anywhere under node (nested scopes included: they may run later)."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
    return names


def surely(stmts, strict=False):
    """The names every path through the statements that reaches their end assigns; None
    if no path reaches it (each returns, raises, breaks or continues). `strict`: what may be
    read as bound after them, so not a `with` body's names (its manager may suppress an
    exception before their assignment) nor a walrus's (it may be in a branch of an `and`)."""
    names = set()
    for stmt in stmts:
        sure = _surely(stmt, strict)
        if sure is None:
            return None
        names |= sure
    return names


def _surely(stmt, strict=False):
    if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return None
    if isinstance(stmt, ast.If):
        return _meet(surely(stmt.body, strict), surely(stmt.orelse, strict))
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        body = surely(stmt.body, strict)
        items = set().union(*(target_names(i.optional_vars) for i in stmt.items
                              if i.optional_vars is not None))
        return items if strict else None if body is None else items | body
    if isinstance(stmt, ast.Try):
        paths = [surely(stmt.body + stmt.orelse, strict)] + \
            [surely(h.body, strict) for h in stmt.handlers]
        final = surely(stmt.finalbody, strict)
        if final is None:
            return None
        met = paths[0]
        for path in paths[1:]:
            met = _meet(met, path)
        return final | (met or set())
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Match)):
        return set()  # the body may not run
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return set()
    sure = assigned([stmt]) - _deleted(stmt)
    if strict:
        sure -= {n.target.id for n in local_nodes(stmt) if isinstance(n, ast.NamedExpr)}
    return sure


def _deleted(stmt):
    return set().union(*(target_names(t) for t in stmt.targets)) \
        if isinstance(stmt, ast.Delete) else set()


def _meet(a, b):
    """What two paths both assign (None: a path that does not reach the end)."""
    if a is None:
        return b
    return a if b is None else a & b


def exposed(stmts, defined):
    """The names the statements may read before assigning them, given the names
    `defined` when they start."""
    found, defined = set(), set(defined)
    for stmt in stmts:
        found |= _exposed(stmt, defined)
        sure = _surely(stmt)
        if sure is None:
            break
        defined |= sure
    return found


def _exposed(stmt, defined):
    if isinstance(stmt, (ast.If, ast.While)):
        return (reads(stmt.test) - defined) | exposed(stmt.body, defined) | \
            exposed(stmt.orelse, defined)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return (reads(stmt.iter) - defined) | exposed(stmt.body, defined |
                                                      target_names(stmt.target)) | \
            exposed(stmt.orelse, defined)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        items = set().union(*(reads(i.context_expr) for i in stmt.items))
        bound = set().union(*(target_names(i.optional_vars) for i in stmt.items
                              if i.optional_vars is not None))
        return (items - defined) | exposed(stmt.body, defined | bound)
    if isinstance(stmt, ast.Try):
        found = exposed(stmt.body + stmt.orelse, defined) | exposed(stmt.finalbody, defined)
        for handler in stmt.handlers:
            name = {handler.name} if handler.name else set()
            found |= exposed(handler.body, defined | name)
        return found
    return reads(stmt) - defined


def problem(stmts, local):
    """The first thing in the statements (a branch, or a loop's body) that cannot run as
    a function called by cond or a loop on a traced value, as (kind, node), or None: a
    return, a break or continue of a loop around them, a del, an in-place change of one
    of the function's `local` names (np.append of a module is a plain call)."""
    for stmt in stmts:
        found = _problem(stmt, local, False)
        if found:
            return found
    return None


def _problem(node, local, in_loop):
    if isinstance(node, ast.Return):
        return ("return", node)
    if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
        return (type(node).__name__.lower(), node)
    if isinstance(node, ast.Delete):
        return ("del", node)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return ("global", node)
    if isinstance(node, (ast.Attribute, ast.Subscript)) and \
            isinstance(node.ctx, (ast.Store, ast.Del)):
        return ("mutation", node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in MUTATORS and _root_name(node.func.value) in local:
        return ("mutation", node)
    if isinstance(node, _SCOPES):
        return None
    for name, value in ast.iter_fields(node):
        inner = True if isinstance(node, _LOOPS) and name == "body" else in_loop
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                found = _problem(child, local, inner)
                if found:
                    return found
    return None


def _root_name(expr):
    """x for x, x.y, x[i].y: the variable an attribute or item chain starts from."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None
