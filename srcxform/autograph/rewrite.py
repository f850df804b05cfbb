"""Plain Python control flow on traced values, converted: the source transformation.

`convert(fn)` rewrites fn's `if`, `while` and `for i in range(...)` statements (its AST,
as TensorFlow's autograph does) so that each decides when it runs: a condition or range
that is a Python value (or a concrete tensor) runs the user's statement as it was, so
static conditions branch and static loops unroll while tracing, exactly as before; a
traced one runs the statement through srcxform.cond, while_loop or fori_loop
(runtime.py), its branches and body made functions of the variables they
assign that are read later (analysis.py). A statement holding what such a
function cannot run (return, break, continue, an in-place change) raises TracingError at
that line when its condition is traced, and runs as Python otherwise. A function defined
in fn (a loop's body written there) is converted with it; one fn calls, when called
(`callee`: TensorFlow's recursive conversion).

So each converted statement appears twice in the rewritten function:

    cond__5 = x > 0                                 if x > 0:
    if ag__.is_traced(cond__5):                         y = x * 2
        def if_true__5(y): ...                      else:
        def if_false__5(y): ...                         y = -x
        (y,) = ag__.if_stmt(cond__5, ...)
    elif cond__5: y = x * 2
    else: y = -x

The rewritten function keeps the user's file name and line numbers, so errors and the
generated kernel's origin comments point at the user's lines; its globals are fn's own
and its closure fn's own cells. A decorator's wrapper (functools.wraps sets its
`__wrapped__`) is made again with the converted function in the closure cell that held
the wrapped one. Functions without such statements, lambdas and builtins are used as they
are; so is a function with control flow whose source cannot be read (made by exec, typed
at `python -`) or a wrapper that holds no cell to put the converted function in, with an
AutographWarning saying so.
"""

import __future__
import ast
import builtins
import copy
import dis
import functools
import inspect
import linecache
import operator
import sys
import sysconfig
import types
import warnings
import weakref

from srcxform.autograph import runtime as autograph_runtime
from srcxform.control_flow import cond, fori_loop, map_fn, scan, while_loop
from srcxform.core.errors import AutographWarning, warn_user
from srcxform.autograph.analysis import (
    assigned,
    exposed,
    local_nodes,
    problem,
    reads,
    surely,
    target_names,
)
from srcxform.core import syntax

_AG = "ag__"  # the name the rewritten code calls autograph_runtime by
_CALLS = "ag__calls"  # and this module, for `callee` (a module: no entry guards its cell)
# function -> (its code and defaults, the converted function or None for itself), and
# code -> its file -> the converted function's code or None; each per `called`: a function
# refused as one converted code calls may be converted where srcxform is given it.
_CONVERTED = {True: weakref.WeakKeyDictionary(), False: weakref.WeakKeyDictionary()}
_REWRITTEN = {True: weakref.WeakKeyDictionary(), False: weakref.WeakKeyDictionary()}
_TAKES_FUNCTIONS = (cond, while_loop, fori_loop, map_fn, scan)  # converting what they take
_UNKNOWN = object()  # what a call's function is, where conversion cannot tell
# Packages whose functions converted code calls as they are (TensorFlow's autograph keeps
# its own and a list of libraries so), by name; the standard library's and installed
# packages' by their files (a user's package may be named like a standard module).
_LIBRARIES = frozenset({"srcxform", "numpy", "scipy", "numba"})
_JUMPS = frozenset(dis.hasjrel + dis.hasjabs)
_INSTALLED = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
_BINDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
          ast.MatchStar, ast.MatchMapping)  # nodes binding their name (a mapping: its rest)
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_FUTURE = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                          for name in __future__.all_feature_names))


def convert(fn, called=False):
    """fn with its control flow converted; fn itself where there is nothing to convert, or
    its source cannot be read or no longer compiles to its code (its file was edited since)
    (an AutographWarning says why where it holds control flow). `called`: fn is one
    converted code calls (`callee`): converted quietly. A bound
    method's function is converted and bound again, a partial's wrapped again, and a
    callable object's __call__ as its class binds it. srcxform's own callables (compiled
    functions and their f.grad, layers, ops, transforms) are fn."""
    if _srcxforms_own(fn):
        return fn
    if isinstance(fn, types.MethodType):
        func = convert(fn.__func__, called)
        return fn if func is fn.__func__ else types.MethodType(func, fn.__self__)
    if type(fn) is functools.partial:  # a subclass: a callable object
        func = convert(fn.func, called)
        return fn if func is fn.func else functools.partial(func, *fn.args, **fn.keywords)
    call = type(fn).__call__ if callable(fn) else None
    if isinstance(call, types.FunctionType) and not library(call):
        bound = fn.__call__  # a staticmethod's is not bound
        func = convert(bound, called)
        return fn if func is bound else func
    if not isinstance(fn, types.FunctionType) or \
            {_AG, _CALLS} & set(fn.__code__.co_freevars):
        return fn  # not a function, or one defined in a converted function: converted
    found = _cached(fn, called)
    if found is None:
        converted = _converted(fn, called)
        _CONVERTED[called][fn] = _key(fn), converted
        found = converted or fn
    return found


def _key(fn):
    return fn.__code__, fn.__defaults__, fn.__kwdefaults__


def _cached(fn, called):
    """fn converted as it was last (itself where nothing was), or None: not yet, or fn's
    code or defaults were replaced since."""
    found = _CONVERTED[called].get(fn)
    if found is None or any(a is not b for a, b in zip(found[0], _key(fn))):
        return None
    return found[1] or fn


def _srcxforms_own(fn):
    """Whether fn is srcxform's: a function by its module (which functools.wraps makes the
    user's), a bound method by its object's or its function's, and an object by its
    class's (a compiled function takes its user function's module, and its methods are
    made at run time, with none)."""
    if isinstance(fn, types.MethodType):
        return _srcxforms_own(fn.__self__) or _srcxforms_own(fn.__func__)
    module = fn.__module__ if isinstance(fn, types.FunctionType) else type(fn).__module__
    return (module or "").startswith("srcxform.")


def _converted(fn, called):
    """The converted function, or None. A construct the rewriting gets wrong must not stop
    a function that traced before from tracing: it warns, as TensorFlow's autograph
    does, and fn is traced as written."""
    wrapped = getattr(fn, "__wrapped__", None)
    rewrapped = wrapped is not None and _rewrapped(fn, wrapped, called)
    if rewrapped:
        return rewrapped
    code = fn.__code__
    # Once per code (a factory's closures share theirs), and file: equal code objects of
    # two files (the same function in each) compare equal.
    per_file = _REWRITTEN[called].setdefault(code, {})
    if code.co_filename not in per_file:
        per_file[code.co_filename] = _rewritten_code(fn, called)
    # A wrapper not holding what it wraps: what it calls converted.
    if per_file[code.co_filename]:
        return _bound(fn, per_file[code.co_filename])
    if rewrapped is None and not called:
        warn_user(f"srcxform cannot convert the control flow of {fn.__qualname__}: it wraps "
                  f"{getattr(wrapped, '__qualname__', wrapped)} (its __wrapped__, as "
                  "functools.wraps sets) without holding it in its closure, where srcxform "
                  "would put the converted function, so an `if`, `while` or `for` on a "
                  "traced value in it raises TracingError. Put srcxform's decorator right "
                  "above the def, under the other one, or write the branch with "
                  "srcxform.cond, while_loop or fori_loop", AutographWarning)
    return None


def _rewritten_code(fn, called):
    tree = _parse(fn, warn=not called)
    if tree is None:
        return None
    try:
        if not _compiles_to(fn, tree) and not _assertions_rewritten(fn):
            if not called and _has_control_flow(fn.__code__):
                _warn_changed(fn)
            return None  # its file changed since it was compiled: not its source now
        if _uses(fn.__code__, {_AG, _CALLS}):
            raise NameError(f"it uses a name the converted code calls srcxform by ({_AG} or "
                            f"{_CALLS}): rename it")
        return _compiled(fn, _rewritten(fn, tree))
    except Exception as error:  # noqa: BLE001 - any failure of the rewriting is ours
        warnings.warn(f"srcxform could not convert the control flow of "
                      f"{fn.__qualname__} ({type(error).__name__}: {error}); it is traced as "
                      "written (if, while and for on traced values raise TracingError)",
                      AutographWarning, stacklevel=3)
        return None


def _warn_changed(fn):
    warn_user(f"srcxform cannot convert the control flow of {fn.__qualname__}: "
              f"{readable(fn.__code__).co_filename} changed since it was imported (its text "
              "no longer compiles to the function Python runs), so an `if`, `while` or `for` "
              "on a traced value in it raises TracingError. Import or run it again",
              AutographWarning)


def _uses(code, names):
    """Whether code, or code defined in it, names one of `names` (a variable, a global
    or an attribute)."""
    return bool(names & {*code.co_varnames, *code.co_names, *code.co_freevars,
                         *code.co_cellvars}) or \
        any(isinstance(c, types.CodeType) and _uses(c, names) for c in code.co_consts)


def _rewrapped(fn, wrapped, called):
    """A decorator's wrapper (fn, whose __wrapped__ is `wrapped`) calling the converted
    wrapped function: fn made again, the closure cell holding `wrapped` holding it instead.
    False where there is nothing to convert; None where there is no such cell."""
    inner = convert(wrapped, called)
    if inner is wrapped:
        return False
    cells = fn.__closure__ or ()
    held = [k for k, cell in enumerate(cells) if _contents(cell) is wrapped]
    if not held:
        return None
    closure = tuple(types.CellType(inner) if k in held else cell for k, cell in enumerate(cells))
    rewrapped = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                   closure)
    rewrapped.__kwdefaults__ = fn.__kwdefaults__
    for attribute in ("__qualname__", "__module__", "__doc__", "__annotations__", "__dict__"):
        setattr(rewrapped, attribute, getattr(fn, attribute))
    return rewrapped


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def source(fn):
    """The rewritten source of fn, as text (None if it is not converted): to read what
    convert made of it."""
    fn = getattr(fn, "__func__", fn)  # a bound method's function
    fn = inspect.unwrap(fn) if isinstance(fn, types.FunctionType) else fn
    tree = _parse(fn) if isinstance(fn, types.FunctionType) else None
    return ast.unparse(_rewritten(fn, tree)) if tree else None


def _rewritten(fn, tree):  # fn's FunctionDef, its control flow and calls rewritten
    return _Callees(fn, tree).rewritten(_Logical().visit(_Converter(tree).function()))


def _parse(fn, warn=False):
    """fn's FunctionDef, at its lines in its file, if fn has statements to convert. With
    `warn`, an AutographWarning where fn holds control flow but its source is unreadable."""
    code = fn.__code__
    if code.co_flags & _NOT_PLAIN:
        return None
    if code.co_name == "<lambda>":
        node = _lambda(code)
        return node if node and _Callees(fn, node).found(node) else None
    try:
        lines, start = inspect.getsourcelines(readable(code))  # fn's own, not what it wraps
        # An indented def (a method, a nested function) parsed in an `if` block: dedent
        # would change its strings' continuation lines.
        nested = lines[0][:1].isspace()
        tree = syntax.parse("if 1:\n" * nested + "".join(lines))
    except (OSError, TypeError, SyntaxError):  # no file, a builtin, or an odd indentation
        if warn and _has_control_flow(code):
            warn_user(f"srcxform cannot convert the control flow of {fn.__qualname__}: its "
                      f"source cannot be read (its code comes from {code.co_filename!r}: "
                      "exec, `python -c` or `python -` make such code), so an `if`, `while` "
                      "or `for` on a traced value in it raises TracingError. Define it in a "
                      "file (a module, or a script run as `python script.py`), or write the "
                      "branch with srcxform.cond, while_loop or fori_loop", AutographWarning)
        return None
    body = tree.body[0].body if nested else tree.body
    node = body[0] if body else None
    if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
        if warn and _has_control_flow(code):  # its line holds another statement now
            _warn_changed(fn)
        return None
    ast.increment_lineno(tree, start - 1 - nested)
    return node if _converts(node) or _Callees(fn, node).found(node) else None


def _lambda(code):
    """A lambda as `def <lambda>(...): return body`, its node found in its file's tree by
    its line and parameters; None where no one lambda there is it."""
    filename = readable(code).co_filename
    try:
        tree = _tree(filename, "".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    count = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and
             n.lineno == code.co_firstlineno and _parameters(n.args) == code.co_varnames[:count]]
    if len(found) != 1:
        return None
    return ast.copy_location(ast.FunctionDef("<lambda>", found[0].args,
                                             [ast.Return(found[0].body)], []), found[0])


@functools.lru_cache(maxsize=8)
def _tree(filename, text):
    return syntax.parse(text, filename=filename)


def _parameters(args):
    return tuple(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs +
                 [a for a in (args.vararg, args.kwarg) if a])


def _converts(node):
    """Whether a function, or a function or class defined in it, has statements to
    convert (a class: its methods); a generator's cannot be (its body cannot be made
    functions)."""
    nodes = [n for stmt in node.body for n in local_nodes(stmt)]
    defined = any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and _converts(n)
                  for n in nodes)
    if isinstance(node, ast.ClassDef):
        return defined
    return not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in nodes) and \
        (defined or any(isinstance(n, (ast.If, ast.While, ast.For)) for n in nodes))


def _explicit_super(fndef, first):
    """fndef with its `super()` calls written `super(__class__, self)`: a branch or loop
    body made a function of its own has no `self` (its first argument) to find."""
    def calls(fndef):
        return [n for stmt in fndef.body for n in local_nodes(stmt) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args]

    if not first or not calls(fndef):
        return fndef
    fndef = copy.deepcopy(fndef)
    for node in calls(fndef):
        node.args = [ast.copy_location(ast.Name(name, ast.Load()), node)
                     for name in ("__class__", first[0].arg)]
    return fndef


# Code that arrived by value (cloudpickle names its file <dynamic-code>) -> the file it came
# from, whose lines `arrived` put in linecache: its source reads as in the sending process.
_ARRIVED = {}


def code_key(code):
    """What tells code objects apart in any process, their file aside (cloudpickle's is
    <dynamic-code>): with its names and constants, as two files' functions of one name,
    line and bytecode differ there (helper 122: the second to arrive took the first's file)."""
    consts = tuple(_constant_key(c) for c in code.co_consts)
    return code.co_name, code.co_firstlineno, code.co_code, code.co_names, consts


def _constant_key(value):
    """A constant told apart from those equal to it (1, 1.0 and True; 0.0 and -0.0:
    helper 126) by its type, and a float by its repr; in every process alike (a
    frozenset's by its members, not its order)."""
    if isinstance(value, types.CodeType):
        return code_key(value)
    if isinstance(value, tuple):
        return tuple(_constant_key(v) for v in value)
    if isinstance(value, frozenset):
        return frozenset(_constant_key(v) for v in value)
    return type(value).__name__, repr(value) if isinstance(value, (float, complex)) else value


def arrived(files, lines):
    """Registers the files of code objects that arrived by value (`files`: code_key ->
    file name) and those files' lines, so that autograph converts them as it would have
    where they were sent from (a function of __main__ sent to a process pool)."""
    for filename, text in lines.items():
        linecache.cache[filename] = (sum(map(len, text)), None, text, filename)
    _ARRIVED.update(files)


def readable(code):
    """code, named after its own file where it arrived by value (`arrived`)."""
    filename = _ARRIVED.get(code_key(code)) if code.co_filename == "<dynamic-code>" else None
    return code if filename is None else code.replace(co_filename=filename)


def installed(path):
    """Whether a file is the standard library's or an installed package's."""
    return path.startswith(_INSTALLED)


def library(value):
    """Whether converted code calls `value` as it is: a class, a builtin, a function of an
    installed package or of the standard library (by its file), or a module or callable
    of srcxform, NumPy, SciPy or Numba."""
    if type(value) is functools.partial:
        return library(value.func)
    if isinstance(value, (type, types.BuiltinFunctionType)):  # a class; C code, any module's
        return True
    code = getattr(getattr(value, "__func__", value), "__code__", None)
    if isinstance(code, types.CodeType) and installed(code.co_filename):
        return True
    module = value.__name__ if isinstance(value, types.ModuleType) else \
        getattr(value, "__module__", None)
    return isinstance(module, str) and module.partition(".")[0] in _LIBRARIES


def callee(fn):
    """What converted code calls where the user wrote `fn(...)`: a function of the user's
    (a method, a partial, a callable object's __call__) converted too, as TensorFlow's
    autograph converts what a converted function calls; cond, while_loop, fori_loop,
    map_fn and scan converting the functions given to them; a library's function, a class
    or a builtin as it is."""
    found = _cached(fn, True) if type(fn) is types.FunctionType else None
    if found is not None:  # the usual case
        return found
    if any(fn is f for f in _TAKES_FUNCTIONS):
        return functools.partial(_with_converted, fn)
    if library(fn):
        if type(fn) is types.FunctionType:
            _CONVERTED[True][fn] = _key(fn), None
        return fn
    return convert(fn, called=True)


def _with_converted(fn, *args, **kwargs):
    def converted(value):
        return callee(value) if callable(value) and not isinstance(value, type) else value

    return fn(*map(converted, args), **{k: converted(v) for k, v in kwargs.items()})


class _Callees(ast.NodeTransformer):
    """Each call `f(...)` that may call a function of the user's, written
    `ag__calls.callee(f)(...)`: f is converted when called (`callee`). A call of a global or
    builtin name that is a library's (looked up at conversion) stays as written; a
    function's locals(), vars() or dir() is shown without the names the rewriting made."""

    def __init__(self, fn, tree):
        self.globals, self.in_class = fn.__globals__, False
        # a name bound anywhere in it may be anything
        self.bound = _bound_names(tree) | set(fn.__code__.co_freevars)
        self.made = ()

    def rewritten(self, fndef):
        """fndef (the function's tree, rewritten by _Converter) with its calls rewritten."""
        self.made = ast.Tuple([ast.Constant(n) for n in sorted(
            _bound_names(fndef) - self.bound | {_AG, _CALLS})], ast.Load())
        return self.visit(fndef)

    def found(self, tree):
        return any(isinstance(n, ast.Call) and (self.wraps(n.func) or self.value(n.func) is len)
                   for n in ast.walk(tree))

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (node.args or node.keywords or self.in_class) and \
                any(self.value(node.func) is f for f in (locals, vars, dir)):
            return ast.copy_location(_calls("shown", node, self.made), node)
        if self.value(node.func) is len:  # a tensor's size (TensorFlow's autograph)
            node.func = ast.copy_location(ast.Attribute(_name(_AG), "len_", ast.Load()), node.func)
        elif self.wraps(node.func):
            node.func = ast.copy_location(_calls("callee", node.func), node.func)
        return node

    def visit_FunctionDef(self, node, in_class=False):  # a class body's locals() is its own
        self.in_class, outer = in_class, self.in_class
        self.generic_visit(node)
        self.in_class = outer
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node):
        return self.visit_FunctionDef(node, in_class=True)

    def wraps(self, func):
        value = self.value(func)
        return value is _UNKNOWN or any(value is f for f in _TAKES_FUNCTIONS) or \
            not library(value)

    def value(self, func):
        """What a call's function is, if a global or builtin name (or a module's attribute
        of one) says; else _UNKNOWN."""
        attributes = []
        while isinstance(func, ast.Attribute):
            attributes.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id in self.bound:
            return _UNKNOWN  # a call's result called, or a local: may be anything
        value = autograph_runtime if func.id == _AG else \
            self.globals.get(func.id, getattr(builtins, func.id, _UNKNOWN))
        for attribute in reversed(attributes):  # only a module's attributes are looked up
            value = getattr(value, attribute, _UNKNOWN) \
                if isinstance(value, types.ModuleType) else _UNKNOWN
        return value


def shown(names, made):
    """locals(), vars() or dir() in converted code: without the names the rewriting made."""
    if isinstance(names, dict):
        return {k: v for k, v in names.items() if k not in made}
    return [k for k in names if k not in made]


def _bound_names(tree):
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, ast.alias):
            names.add((n.asname or n.name).partition(".")[0])
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, _BINDS):
            names |= {getattr(n, f) for f in ("name", "rest") if getattr(n, f, None)}
    return names


def _calls(name, *args):
    return ast.Call(ast.Attribute(_name(_CALLS), name, ast.Load()), list(args), [])


def _defined(node, enclosing):
    """A function or class defined in a converted function, converted with it (a class's
    methods), keeping its decorators; `enclosing`: the local names around it."""
    if isinstance(node, ast.FunctionDef):
        return _Converter(node, enclosing).function(decorated=True)
    node = copy.copy(node)
    node.body = [_defined(b, enclosing) if isinstance(b, (ast.FunctionDef, ast.ClassDef))
                 and _converts(b) else b for b in node.body]
    return node


def _has_control_flow(code):
    """Whether code holds an `if`, `while` or `for` (or `x if c else y`), as its bytecode
    shows them: a loop, or a conditional jump other than a `with`'s exit, an `except`'s
    match or `and`/`or` (Python 3.12's: after a COPY)."""
    before = None
    for instruction in dis.get_instructions(code):
        name = instruction.opname
        if name == "FOR_ITER" or name.startswith("POP_JUMP") and "IF" in name and \
                before not in ("WITH_EXCEPT_START", "CHECK_EXC_MATCH", "COPY"):
            return True
        before = name
    return False


def _compiled(fn, fndef):
    """The code of a FunctionDef (fn's, rewritten or not) compiled as fn's was: inside a
    factory whose parameters stand for fn's free variables and for ag__ (in a class of
    fn's class's name where fn is a method, so that `self.__x` is mangled as in fn),
    under a name of its own (fn's own name in its body is the global it was), then given
    fn's names."""
    code = fn.__code__
    qualname = getattr(code, "co_qualname", fn.__qualname__)  # not what wraps made it
    fndef = copy.copy(fndef)
    fndef.name = "autograph_converted__"
    factory = ast.FunctionDef(
        name="autograph_factory__", args=_params(code.co_freevars + (_AG, _CALLS)),
        body=[fndef, ast.Return(ast.Name(fndef.name, ast.Load()))], decorator_list=[])
    owner = _owner(qualname)
    outer = ast.ClassDef(owner, [], [], [factory], []) if owner else factory
    module = ast.Module([ast.fix_missing_locations(ast.copy_location(outer, fndef))], [])
    compiled = syntax.compiled(module, readable(code).co_filename, "exec",
                               flags=code.co_flags & _FUTURE,
                               dont_inherit=True)  # fn's own __future__ imports (annotations)
    for name in (owner, factory.name, fndef.name):
        compiled = _code_named(compiled, name) if name else compiled
    prefix = ".".join(filter(None, (owner, factory.name, "<locals>", fndef.name)))
    inner = _requalified(compiled, prefix, qualname).replace(co_name=code.co_name)
    return inner if set(inner.co_freevars) <= set(code.co_freevars) | {_AG, _CALLS} else None


def _owner(qualname):
    """The class a function of this qualified name was defined in, if it was."""
    parts = qualname.split(".")[:-1]
    classes = [p for p, after in zip(parts, parts[1:] + [""]) if "<locals>" not in (p, after)]
    return classes[-1] if classes else None


def _compiles_to(fn, tree):
    raw = _compiled(fn, tree)
    return raw is not None and _instructions(raw) == _instructions(fn.__code__)


def _assertions_rewritten(fn):
    """Whether pytest compiled fn's module, rewriting its asserts (its code is not what
    its text compiles to)."""
    loader = getattr(sys.modules.get(fn.__module__), "__loader__", None)
    return type(loader).__name__ == "AssertionRewritingHook"


def _instructions(code):
    """What code does, apart from where its constants, names and jump targets sit, and
    from the method loads a module's imports decide (3.11: LOAD_ATTR on an imported name,
    after a PUSH_NULL, and shorter, so a jump past it may need no EXTENDED_ARG)."""
    listed, index = [], {}
    for i in dis.get_instructions(code):
        index[i.offset] = len(listed)  # a jump to an EXTENDED_ARG goes to what it extends
        if i.opname not in ("EXTENDED_ARG", "PUSH_NULL"):
            listed.append(i)
    return [("LOAD_ATTR" if i.opname == "LOAD_METHOD" else i.opname,
             _instructions(i.argval) if isinstance(i.argval, types.CodeType) else
             index.get(i.argval) if i.opcode in _JUMPS else repr(i.argval)) for i in listed]


def _bound(fn, inner):
    """The function of the rewritten code, with fn's globals, defaults and closure cells
    (so rebinding a global or a closure variable is seen)."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[_AG], cells[_CALLS] = (types.CellType(m) for m in (autograph_runtime,
                                                             sys.modules[__name__]))
    converted = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__,
                                   tuple(cells[name] for name in inner.co_freevars))
    converted.__kwdefaults__ = fn.__kwdefaults__
    for attribute in ("__qualname__", "__module__", "__doc__", "__annotations__", "__dict__"):
        setattr(converted, attribute, getattr(fn, attribute))  # the same dicts: shared
    return converted


def _requalified(code, prefix, name):
    """code with the qualified names of the functions defined in it (its own too) as the
    user's: the factory's `prefix` made fn's `name` (co_qualname; before Python 3.11, the
    name MAKE_FUNCTION takes from the constants)."""
    def renamed(text):
        return name + text[len(prefix):] if text.startswith(prefix) else text

    consts = tuple(_requalified(c, prefix, name) if isinstance(c, types.CodeType) else
                   renamed(c) if isinstance(c, str) else c for c in code.co_consts)
    code = code.replace(co_consts=consts)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=renamed(code.co_qualname))
    return code


def _code_named(code, name):
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _params(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _name(name, store=False):
    return ast.Name(name, ast.Store() if store else ast.Load())


def _names(names, store=False):
    return ast.Tuple([_name(n, store) for n in names], ast.Store() if store else ast.Load())


def _strings(names):
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


def _call(helper, *args):
    return ast.Call(ast.Attribute(_name(_AG), helper, ast.Load()), list(args), [])


def _located(nodes, origin):
    """nodes, placed on origin's first line (their children without a place too): a call
    spanning the statement's lines would be reported at its last (CPython places a method
    call at its attribute's end)."""
    for node in nodes:
        node.lineno = node.end_lineno = origin.lineno
        node.col_offset = node.end_col_offset = origin.col_offset
        ast.fix_missing_locations(node)
    return nodes


class _Converter:
    """Rewrites one function's control flow statements (see the module's docstring);
    `enclosing`: the local names of the functions it is defined in (whose lists a branch
    must not change either)."""

    def __init__(self, fndef, enclosing=frozenset()):
        args = fndef.args
        self.fndef = fndef = _explicit_super(fndef, (args.posonlyargs + args.args)[:1])
        params = args.posonlyargs + args.args + args.kwonlyargs + \
            [a for a in (args.vararg, args.kwarg) if a]
        self.params = {a.arg for a in params}
        self.local = self.params | assigned(fndef.body) | enclosing
        self.declared = set()  # global and nonlocal names
        for stmt in fndef.body:
            for node in local_nodes(stmt):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    self.declared |= set(node.names)
        self.taken = self.params | {n.id if isinstance(n, ast.Name) else n.name
                                    for n in ast.walk(fndef) if isinstance(n, (ast.Name,
                                    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        self.made = {}
        self.row_loops = {}  # for_rows' loop for each of the user's (named as it is)
        # Where each name is read (`y += 1` and `del y` too); reads in nested functions
        # may happen at any time.
        self.loads = [((n.lineno, n.col_offset), n.id if isinstance(n, ast.Name) else n.target.id)
                      for n in ast.walk(fndef)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load, ast.Del))
                      or isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)]
        self.anytime = set()  # (a generator expression is run later too)
        for node in ast.walk(fndef):
            if node is not fndef and isinstance(node, (ast.FunctionDef, ast.Lambda,
                                                       ast.AsyncFunctionDef, ast.ClassDef,
                                                       ast.GeneratorExp)):
                self.anytime |= reads(node)

    def function(self, decorated=False):
        """The converted FunctionDef; `decorated`: with its decorators (a defined one's)."""
        fndef = copy.copy(self.fndef)
        fndef.decorator_list = copy.deepcopy(fndef.decorator_list) if decorated else []
        fndef.body = self.block(self.fndef.body, self.params, ())
        return fndef

    def fresh(self, base, node):
        """A name for what the rewriting makes of the user's statement `node`: the same
        in both of its forms, distinct from every name the function uses."""
        key = (base, id(node))
        if key not in self.made:
            self.made[key] = self.unused(f"{base}__{node.lineno}")
        return self.made[key]

    def unused(self, name):
        """name, with underscores added until the function uses no such name (now taken)."""
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    # ----- statements -----
    def block(self, stmts, defined, loops):
        """The statements rewritten; `defined`: the names surely bound when they start;
        `loops`: the user's loops they are inside (innermost last)."""
        out, defined = [], set(defined)
        for stmt in stmts:
            out += self.statement(stmt, defined, loops)
            defined |= surely([stmt], strict=True) or set()
        return out

    def statement(self, stmt, defined, loops):
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and _converts(stmt):
            return [_defined(stmt, self.local)]
        if isinstance(stmt, ast.If):
            return self.if_(stmt, defined, loops)
        if isinstance(stmt, ast.While):
            return self.while_(stmt, defined, loops)
        if isinstance(stmt, ast.For) and _range_args(stmt.iter) is not None:
            return self.for_range(stmt, defined, loops)
        if isinstance(stmt, ast.For):
            return self.for_rows(stmt, defined, loops)
        if not isinstance(stmt, (ast.For, ast.With, ast.Try)):
            return [copy.deepcopy(stmt)]
        original, stmt = stmt, copy.copy(stmt)
        if isinstance(stmt, ast.For):
            stmt.body = self.block(stmt.body, defined | target_names(stmt.target),
                                   loops + (original,))
            stmt.orelse = self.block(stmt.orelse, defined, loops)
        else:
            for field in ("body", "orelse", "finalbody"):
                if hasattr(stmt, field):
                    setattr(stmt, field, self.block(getattr(stmt, field), defined, loops))
            if isinstance(stmt, ast.Try):
                stmt.handlers = [copy.copy(h) for h in stmt.handlers]
                for h in stmt.handlers:
                    h.body = self.block(h.body, defined | ({h.name} if h.name else set()),
                                        loops)
        return [stmt]

    def if_(self, node, defined, loops):
        test = self.fresh("cond", node)
        static = ast.If(_name(test), self.block(node.body, defined, loops),
                        self.block(node.orelse, defined, loops))
        return _located([
            ast.Assign([_name(test, True)], copy.deepcopy(node.test)),
            ast.If(_call("is_traced", _name(test)), self.traced_if(node, test, defined, loops),
                   [static])], node)

    def traced_if(self, node, test, defined, loops):
        stmts = node.body + node.orelse
        refused = self.refused(stmts, node, "an if")
        if refused:
            return refused
        state = sorted(assigned(stmts) & (exposed(node.body, ()) | exposed(node.orelse, ())
                                          | self.live_after(node, loops)))
        true_fn, false_fn = self.fresh("if_true", node), self.fresh("if_false", node)
        sure_true, sure_false = (surely(body) for body in (node.body, node.orelse))
        call = _call("if_stmt", _name(test), _name(true_fn), _name(false_fn),
                     self.values(state, defined), _strings(state),
                     _strings(sorted(set(state) if sure_true is None else sure_true & set(state))),
                     _strings(sorted(set(state) if sure_false is None
                                     else sure_false & set(state))))
        return [self.state_function(true_fn, state, node.body, defined, loops, state),
                self.state_function(false_fn, state, node.orelse, defined, loops, state),
                ast.Assign([_names(state, True)], call) if state else ast.Expr(call)]

    def while_(self, node, defined, loops):
        traced = self.fresh("traced", node)
        inner = loops + (node,)
        test = _call("static_truth", copy.deepcopy(node.test), _name(traced))
        orelse = [ast.If(_name(traced), self.traced_while(node, defined, loops), [])]
        loop = ast.While(test, self.block(node.body, defined, inner),
                         orelse + self.block(node.orelse, defined, loops))
        return _located([ast.Assign([_name(traced, True)], ast.List([], ast.Load())), loop], node)

    def traced_while(self, node, defined, loops):
        refused = self.refused(node.body, node, "a while loop")
        if not refused and any(isinstance(n, ast.NamedExpr) for n in _outside_lambdas(node.test)):
            refused = _unconvertible("walrus", node, "a while loop")
        if refused:
            return refused
        state = sorted(assigned(node.body) & (reads(node.test) | exposed(node.body, ())
                                              | self.live_after(node, loops)))
        test_fn, body_fn = self.fresh("while_test", node), \
            self.fresh("while_body", node)
        test_def = self.taking(test_fn, state, [ast.Return(copy.deepcopy(node.test))])
        call = _call("while_stmt", _name(test_fn), _name(body_fn), self.values(state, defined),
                     _strings(state))
        return [test_def,
                self.state_function(body_fn, state, node.body, defined, loops + (node,), state),
                ast.Assign([_names(state, True)], call) if state else ast.Expr(call)]

    def for_rows(self, node, defined, loops):
        """`for T in E` (E not a range): over a tensor, a loop over its row numbers taking
        row i into T first, which compiles as a range loop does (TensorFlow's autograph
        loops over a tensor's rows); over anything else, E's items as Python gives them."""
        items, row = self.fresh("items", node), self.fresh("row", node)
        take = ast.Assign([copy.deepcopy(node.target)], _call("row", _name(items), _name(row)))
        loop = self.row_loops.setdefault(id(node), ast.copy_location(ast.For(
            ast.Name(row, ast.Store()), node.iter, [take, *node.body], node.orelse), node))
        start = lambda refused: _call("for_rows", ast.Constant(not refused), _name(items))
        return _located([ast.Assign([_name(items, True)], copy.deepcopy(node.iter))], node) + \
            self.for_range(loop, defined, loops, start)

    def for_range(self, node, defined, loops, start=None):  # start: for_rows's call
        rng = self.fresh("range", node)
        inner = loops + (node,)
        refused = self.refused(node.body, node, "a for loop")
        if not refused and not isinstance(node.target, ast.Name):
            refused = _unconvertible("target", node, "a for loop")
        static = ast.For(copy.deepcopy(node.target), _name(rng),
                         self.block(node.body, defined | target_names(node.target), inner),
                         self.block(node.orelse, defined, loops))
        traced = refused or self.traced_for(node, rng, defined, loops) + \
            self.block(node.orelse, defined, loops)
        start = start(refused) if start else _call(
            "for_range", ast.Constant(not refused), copy.deepcopy(node.iter.func),
            *map(copy.deepcopy, _range_args(node.iter)))
        return _located([ast.Assign([_name(rng, True)], start),
                         ast.If(_call("is_traced", _name(rng)), traced, [static])], node)

    def traced_for(self, node, rng, defined, loops):
        index = node.target.id
        state = sorted((assigned(node.body) & (exposed(node.body, {index})
                                               | self.live_after(node, loops))) - {index})
        body_fn = self.fresh("for_body", node)
        call = _call("for_stmt", _name(rng), _name(body_fn), self.values(state, defined),
                     _strings(state), ast.Constant(index))
        return [self.state_function(body_fn, [index] + state, node.body, defined,
                                    loops + (node,), state),
                ast.Assign([_names(state + [index], True)], call)]

    # ----- parts -----
    def state_function(self, name, params, body, defined, loops, state):
        """def name(*params): body; return state -- a branch or loop body as a function
        of the state it reads and assigns (the rest it reads from the enclosing scope)."""
        inside = set(params) | (set(defined) - assigned(body))
        stmts = self.block(body, inside, loops) + [ast.Return(_names(state))]
        return self.taking(name, params, stmts)

    def taking(self, name, params, stmts):
        """def name(*params): stmts. A parameter a nested function reads is given to the
        enclosing function's variable first (nonlocal), so that the nested function reads
        this trip's or branch's value, as eagerly (it read the value before the loop:
        helper 105)."""
        shared = [p for p in params if p in self.anytime]
        given = {p: self.unused(p + "__given") for p in shared}
        first = [ast.Nonlocal(shared)] if shared else []
        first += [ast.Assign([_name(p, True)], _name(given[p])) for p in shared]
        return ast.FunctionDef(name, _params([given.get(p, p) for p in params]),
                               first + stmts, [])

    def values(self, state, defined):
        """The state's values before the statement: a name not surely bound yet is read
        through ag__.ld, which gives an Undefined where it has no value."""
        return ast.Tuple([_name(n) if n in defined else _call(
            "ld", ast.Lambda(_params(()), _name(n)), ast.Constant(n)) for n in state],
            ast.Load())

    def refused(self, stmts, node, statement):
        """A raise of the TracingError for a statement whose traced form cannot run, or
        None."""
        found = problem(stmts, self.local)
        if found is None and assigned(stmts) & self.declared:
            found = ("global", node)
        if found is None:
            return None
        return _unconvertible(*found, statement)

    def live_after(self, node, loops):
        """The names that may be read after node: later in the function (a loop's `else:`
        included: it runs after the loop), anywhere in a loop around it, or in a nested
        function."""
        last = node.body[-1] if isinstance(node, (ast.For, ast.While)) else node
        end = (last.end_lineno, last.end_col_offset)
        later = {name for where, name in self.loads if where >= end}
        for loop in loops:
            later |= reads(loop)
        return later | self.anytime


class _Logical(ast.NodeTransformer):
    """`and`, `or` and `not` as ag__ calls, wherever they are in a converted function, as
    TensorFlow's autograph converts them: Python's own on Python values; logical_and,
    logical_or and logical_not on traced ones. The operands after the first are lambdas,
    evaluated only where Python would evaluate them. An `and` or `or` stays as written
    where a lambda would change what a later operand means (`_SCOPED`), and so does a
    class body's (a lambda there cannot read the class's names)."""

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(_scoped(n) for v in node.values[1:] for n in ast.walk(v)):
            return node
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(helper, node.values[0], *(
            ast.Lambda(_params(()), v) for v in node.values[1:])), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", node.operand), node)
        return node

    def visit_ClassDef(self, node):
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit(stmt)
        return node


def _scoped(node):
    """Whether node means something else inside a lambda: a `:=` would bind the lambda's
    name, a `yield` make it a generator; super(), locals(), vars() and dir() without
    arguments, sys._getframe() and inspect.currentframe() would see the lambda's frame."""
    if isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
        return True
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute):
        return node.func.attr in ("_getframe", "currentframe")
    return not node.args and not node.keywords and isinstance(node.func, ast.Name) and \
        node.func.id in ("super", "locals", "vars", "dir")


def _outside_lambdas(node):
    """The nodes of an expression, those of the lambdas in it left out (their own scope;
    a comprehension's := binds in the function's)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Lambda):
            yield from _outside_lambdas(child)


def _unconvertible(kind, node, statement):
    """The statement raising runtime.unconvertible's TracingError for node's line."""
    return [ast.Raise(_call("unconvertible", ast.Constant(kind), ast.Constant(node.lineno),
                            ast.Constant(statement)))]


def _range_args(iterable):
    """The arguments of a `range(...)` or `tf.range(...)` call (positional, one to
    three), else None. Which range the name or attribute is, the runtime decides."""
    func = getattr(iterable, "func", None)
    named_range = isinstance(func, ast.Name) and func.id == "range" or \
        isinstance(func, ast.Attribute) and func.attr == "range"
    if named_range and 1 <= len(iterable.args) <= 3 and not iterable.keywords and \
            not any(isinstance(a, ast.Starred) for a in iterable.args):
        return iterable.args
    return None
