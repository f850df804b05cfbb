"""Sizes that remember where they came from.

While tracing, each input dim that is not 1 is a `Dim`: an int's stand-in, with its size
(so shape rules run unchanged and report real sizes) and an expression over the input
sizes (so generated code computes it at run time and a new batch size reuses a kernel).
A comparison whose answer could differ for other sizes is recorded as a guard; a call
whose sizes break a guard traces again instead of running wrong code. Two input sizes
found equal (an elementwise op of x[n0] and y[n1]) become one symbol from then on, so
their loops fuse; the guard checks each call.

The rule for everything shape-dependent that tracing decides (an index, a slice's bounds,
a length, a dim broadcasting treats as 1): it is either an expression of the input sizes,
computed by the kernel at each call, or a guard. Expressions are kept in one canonical
form (`simplify`), so that `n0 - (n0 - 1)` is the constant 1. A derived size that is 0 or
1 in this trace becomes that constant under a guard (`make`): code generation treats a
literal 1 as a broadcast dim and a 0 as empty, which is right only while it stays so.
Comparisons record guards. A kernel is reused only for sizes that satisfy every guard.
"""

import contextlib
import operator
import threading

import numpy as np

from srcxform.core.errors import TracingError, user_line
from srcxform.core.recording import CONTEXT  # its guards: (expr_a, op, expr_b, result) each


class Dim:
    """A size: `d.value` is this trace's value, `d.expr` computes it from the inputs.

    expr is a nested tuple: ("size", k) is input size symbol k; (op, a, b) applies +, -,
    *, //, % to two expressions or ints.

    A Dim is not an int subclass: C code (range, list * n, float, f-strings, NumPy) takes
    an int subclass's value as it is, without asking it, so a kernel traced at one size
    silently ran with that size at every other. Here each use as a plain number goes
    through a method that guards the kernel to this size (`_guarded`); +, -, *, //, % and
    comparisons keep the size symbolic (comparisons guard their answer only). Python code
    still sees an int: isinstance(n, int) holds, through `__class__`, as it does eagerly.
    """

    __slots__ = ("_expr", "symbols", "value")

    def __init__(self, value, expr, symbols):
        self.value = value
        self._expr = expr
        self.symbols = symbols

    @property
    def expr(self):
        return self.symbols.canonical(self._expr)

    def _guarded(self):
        """This size as a plain int, the kernel guarded to it: right only for this size."""
        _guard(self.symbols, self.expr, "==", self.value, True)
        return self.value

    __index__ = __int__ = _guarded

    @property  # type: ignore[misc]
    def __class__(self):  # isinstance(n, int) holds while tracing as it does eagerly
        return int

    def __getattr__(self, name):  # int's own (real, bit_length...): the value's, guarded
        if name.startswith("_") or not hasattr(int, name):
            raise AttributeError(f"'int' object has no attribute {name!r}")
        return getattr(self._guarded(), name)

    def __float__(self):
        return float(self._guarded())

    def __complex__(self):
        return complex(self._guarded())

    def __hash__(self):  # equal to the int it equals, as a set or dict key
        return hash(self._guarded())

    def __repr__(self):
        return symbol_text(self) if _PRINTING.active else repr(self._guarded())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._guarded(), spec)

    def __array__(self, dtype=None, copy=None):  # NumPy takes a Dim as its value
        return np.asarray(self._guarded(), dtype=dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A NumPy function of a size (np.float32(0.5) * n) takes its value as the Python
        int it is eagerly, guarded: NumPy keeps the other operand's dtype for a Python
        int (NEP 50), where __array__'s int64 array made the result float64. A tensor
        among the operands takes the call (its own __array_ufunc__)."""
        if any(hasattr(type(v), "__array_ufunc__") and not isinstance(
                v, (Dim, np.ndarray, np.generic)) for v in inputs):
            return NotImplemented
        plain = [v._guarded() if isinstance(v, Dim) else v for v in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)

    def __reduce__(self):  # pickled or copied: the value, guarded
        return int, (self._guarded(),)

    def __neg__(self):
        return 0 - self

    def __pos__(self):
        return self

    def __trunc__(self):  # math.trunc, floor, ceil and round of an integer: itself
        return self

    __floor__ = __ceil__ = __trunc__

    def __round__(self, ndigits=None):
        return self if ndigits is None or ndigits >= 0 else round(self._guarded(), ndigits)

    def __abs__(self):
        return abs(self._guarded())

    def __invert__(self):
        return ~self._guarded()

    def __pow__(self, other, modulo=None):
        return _plainly(lambda a, b: pow(a, b, modulo), self, other)

    def __rpow__(self, other):
        return _plainly(operator.pow, self, other, swap=True)

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __bool__(self):
        return self._compare(0, operator.ne, "!=")

    def _arith(self, other, op, symbol, swap=False):
        """op of this size and another operand: an integer one keeps the expression where
        op has a symbol (+, -, *, //, %); others apply to the plain value (`_plainly`)."""
        if _apart(self, other):
            a, b = (_settled(other), _settled(self)) if swap else (_settled(self), _settled(other))
            return op(a, b)
        if symbol is None or not _integer(other):
            return _plainly(op, self, other, swap)
        a, b = (other, self) if swap else (self, other)
        if symbol in ("//", "%") and isinstance(b, Dim):  # raises where it is 0, as Python
            _guard(self.symbols, b.expr, "!=", 0, True)
        expr = simplify(symbol, expr_of(a), expr_of(b))
        return make(op(concrete(a), concrete(b)), expr, self.symbols)

    def _compare(self, other, op, symbol):
        """A comparison, guarded: the answer holds while the sizes compare the same way."""
        if _apart(self, other):
            return op(_settled(self), _settled(other))
        if not _integer(other):
            return _plainly(op, self, other)
        result = op(concrete(self), concrete(other))
        a, b = expr_of(self), expr_of(other)
        if a == b:
            return op(0, 0)
        recorded = _guard(self.symbols, a, symbol, b, result)
        equal = result if symbol == "==" else not result if symbol == "!=" else False
        if equal and recorded and _is_symbol(a) and _is_symbol(b):  # checked at each call
            self.symbols.unify(a[1], b[1])
        return result


# Dim's binary operators, each with its reflection; those with a symbol keep a size
# symbolic, the others (/, <<, &...) apply to its value, guarded.
_ARITHMETIC = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%",
               "truediv": None, "lshift": None, "rshift": None, "and_": None,
               "or_": None, "xor": None}
_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _binary(op, symbol):
    return (lambda self, other: self._arith(other, op, symbol),
            lambda self, other: self._arith(other, op, symbol, swap=True))


def _comparison(op, symbol):
    return lambda self, other: self._compare(other, op, symbol)


for _name, _symbol in _ARITHMETIC.items():
    _forward, _reflected = _binary(getattr(operator, _name), _symbol)
    setattr(Dim, f"__{_name.rstrip('_')}__", _forward)
    setattr(Dim, f"__r{_name.rstrip('_')}__", _reflected)
for _name, _symbol in _COMPARISONS.items():
    setattr(Dim, f"__{_name}__", _comparison(getattr(operator, _name), _symbol))


def _integer(value):
    """Whether value is an integer a size expression holds (a Dim, an int, a NumPy int)."""
    return isinstance(value, (int, np.integer))  # a Dim's __class__ is int


def _plainly(op, dim, other, swap=False):
    """op of a Dim and a number as plain numbers, the kernel guarded to this size; another
    operand (a tensor, an array) answers NotImplemented, for its own operator to apply."""
    if isinstance(other, Dim):
        other = other._guarded()
    elif not isinstance(other, (int, float, complex, np.number)):
        return NotImplemented
    a, b = (other, dim._guarded()) if swap else (dim._guarded(), other)
    return op(a, b)


def _guard(symbols, a, op, b, result):
    """Records that `a op b` was `result` in the trace `symbols` belong to, while it runs
    in this thread deciding for this call's sizes (CONTEXT.guards is set); returns whether
    it did."""
    guards = CONTEXT.guards if symbols.guards is None else symbols.guards
    recording = CONTEXT.guards is not None and (guards is CONTEXT.guards or any(
        trace.guards is guards for trace in CONTEXT.traces))
    if recording:
        guards.append((a, op, b, result))
    return recording


def _foreign(value):
    """Whether value is a size of another trace than the one running in this thread (one
    kept in Python state by an earlier trace): its symbols name other sizes here."""
    guards = CONTEXT.guards
    return isinstance(value, Dim) and guards is not None and value.symbols.guards is not guards


def _apart(a, b):
    """Whether two operands cannot meet as expressions: one is a size of another trace than
    the one running here, or they are two traces' sizes."""
    return _foreign(a) or _foreign(b) or (isinstance(a, Dim) and isinstance(b, Dim)
                                          and a.symbols is not b.symbols)


def _settled(value):
    """An operand where sizes are `_apart`: while tracing, as `local` gives it; outside a
    trace, a size's value."""
    return local(value) if CONTEXT.guards is not None else concrete(value)


def local(value):
    """value as the trace running in this thread sees it: a size of another trace is a
    constant here, its value (its own trace, if it runs in this thread, guarded to it)."""
    return value._guarded() if _foreign(value) else value


def localized(params):
    """An op's params with each size of another trace (`local`) made its value."""
    def visit(value):
        return tuple(map(visit, value)) if isinstance(value, tuple) else local(value)

    return {name: visit(value) for name, value in params.items()}


def check_sized(shape, op, origin=None):
    """Raises TracingError where `shape` holds a dim no array can be made with yet: the
    leading dim of a compiled loop's stack (passes/structured.py's Trips), known once the
    loop has run. An array made to it would be sized 0 and read past its end."""
    if any(isinstance(d, int) and type(d) is not int and not isinstance(d, (Dim, bool))
           for d in shape):
        raise TracingError(f"{op}: an array shaped as a compiled loop's stacked rows cannot "
                           "be made while tracing (its size is the loop's trip count): forward "
                           "mode through a compiled scan or while_loop (jvp, hvp, jacfwd), or a "
                           "third derivative by reverse mode; run it eagerly, or use reverse "
                           f"mode (hessian, jacrev) and forward over it. At {user_line(origin)}")


def concrete(d):
    """The concrete size of a Dim (or an int), recording no guard."""
    return d.value if isinstance(d, Dim) else operator.index(d)


class Symbols:
    """The input size symbols of one trace, with the equalities found between them."""

    def __init__(self, guards=None):
        self.parent = {}
        self.guards = guards  # the guards of the trace they belong to

    def find(self, k):
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def unify(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)  # the earlier symbol names both

    def label(self, k):
        """The number symbol k is shown with (n<label>): symbols found equal to an earlier
        one are skipped, so that the numbers shown have no gaps."""
        return k - sum(j < k for j in self.parent)

    def canonical(self, expr):
        """expr with each symbol replaced by the one naming its class, simplified again
        (n1 - n0 is 0 once the two are found equal)."""
        if isinstance(expr, int) or not self.parent:
            return expr
        if expr[0] == "size":
            return ("size", self.find(expr[1]))
        return simplify(expr[0], self.canonical(expr[1]), self.canonical(expr[2]))


def _is_symbol(expr):
    return isinstance(expr, tuple) and expr[0] == "size"


class _Printing(threading.local):
    active = False  # whether this thread prints a program's text (`printing`)
    sizes = None  # the input sizes it shows sizes at, if any


_PRINTING = _Printing()


@contextlib.contextmanager
def printing(sizes=None):
    """In the block, this thread prints each size as symbol_text does, by str() and repr()
    too (a program's parameters); with `sizes`, as its value where the input size symbols
    are `sizes` (the program as a call of those sizes runs it)."""
    saved, (_PRINTING.active, _PRINTING.sizes) = (_PRINTING.active, _PRINTING.sizes), (True, sizes)
    try:
        yield
    finally:
        _PRINTING.active, _PRINTING.sizes = saved


def symbol_text(d):
    """A size as the expression a kernel computes it by (`n0 - 1`), an int as itself."""
    if not isinstance(d, Dim):
        return str(d)
    if _PRINTING.sizes is not None:
        return str(printed_value(d))
    text = render(d.expr, lambda k: f"n{d.symbols.label(k)}")
    return text[1:-1] if text.startswith("(") else text


def negative(d):
    """Whether a size is negative: for a Dim, guarded unless its expression is never
    negative (sizes and ints ≥ 0 under +, *, // and %), as an input size's is."""
    if not isinstance(d, Dim):
        return d < 0
    return not _never_negative(d.expr) and d < 0


def _never_negative(expr):
    if isinstance(expr, int):
        return expr >= 0
    if expr[0] == "size":
        return True
    return expr[0] in ("+", "*", "//", "%") and all(map(_never_negative, expr[1:]))


def printed_value(d):
    """The number a size prints as inside `printing(sizes)`, or None outside it."""
    return None if _PRINTING.sizes is None else evaluate(d.expr, _PRINTING.sizes)


def as_index(value):
    """An integer argument as an int, a traced size kept symbolic (a Dim as it is)."""
    value = local(value)
    return value if isinstance(value, Dim) else operator.index(value)


def expr_of(d):
    return d.expr if isinstance(d, Dim) else int(d)


def make(value, expr, symbols):
    """A Dim for expr, or a plain int when expr is constant. While tracing, a size that is
    0 or 1 now is that constant under a guard (see the module's rule)."""
    if isinstance(expr, int):
        return value
    if value in (0, 1) and CONTEXT.guards is not None:
        _guard(symbols, expr, "==", value, True)
        return value
    return Dim(value, expr, symbols)


def simplify(op, a, b):
    """op applied to two canonical expressions, in canonical form: a linear expression as
    its terms in symbol order then its constant (`n0 - n1 + 2`), so that equal linear
    expressions are equal tuples; others fold constants and (x*k)//k."""
    if isinstance(a, int) and isinstance(b, int):
        return _apply(op, a, b)
    form = _linear((op, a, b))
    if form is not None:
        return _from_linear(form)
    if op in ("*", "//") and b == 1 or op == "*" and a == 1:
        return b if a == 1 else a
    if op == "*" and (a == 0 or b == 0):
        return 0
    if op == "//" and isinstance(a, tuple) and a[0] == "*" and a[2] == b:
        return a[1]
    return (op, a, b)


_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
              "//": operator.floordiv, "%": operator.mod}


def _apply(op, a, b):
    """op applied to two ints (a division by zero gives 0: sizes are never divided by 0)."""
    return 0 if op in ("//", "%") and not b else _OPERATORS[op](a, b)


def render(expr, symbol_name):
    """Python source for an expression; symbol_name(k) names input size symbol k."""
    if isinstance(expr, int):
        return str(expr)
    if expr[0] == "size":
        return symbol_name(expr[1])
    return f"({render(expr[1], symbol_name)} {expr[0]} {render(expr[2], symbol_name)})"


def evaluate(expr, sizes):
    """The value of an expression given the input size symbols' values."""
    if isinstance(expr, int):
        return expr
    if expr[0] == "size":
        return sizes[expr[1]]
    a, b = evaluate(expr[1], sizes), evaluate(expr[2], sizes)
    return _apply(expr[0], a, b)


# ----- guards -----

_NEGATE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", "<=": ">", ">": "<="}


def guard_conditions(guards):
    """The trace's guards as conditions `(expr, op)` meaning `expr op 0`, op one of >=, ==
    and !=, without repeats and without those every call satisfies (sizes are never
    negative, and an input size that is not 1 stays so: it is in the signature), nor
    those a stronger one implies: of `linear + c >= 0` for one linear part, only the least
    c is kept (x[i] for i in range(1000) guards the size of x once, not 1,000 times)."""
    conditions, seen = [], set()
    strongest = {}  # the linear part of a `>=` condition -> (its least constant, position)
    for a, op, b, result in dict.fromkeys(guards):  # a comparison repeats often: once each
        op = op if result else _NEGATE[op]
        # Integers: a < b is b - a - 1 >= 0, a > b is a - b - 1 >= 0.
        left, right, shift = {"<": (b, a, 1), "<=": (b, a, 0), ">": (a, b, 1),
                              ">=": (a, b, 0)}.get(op, (a, b, 0))
        difference = simplify("-", simplify("-", left, right), shift)
        form = _linear(difference)
        op = ">=" if op in ("<", "<=", ">", ">=") else op
        if form is not None and _always(form, op):
            continue
        condition = (difference, op)  # canonical already (simplify)
        if condition in seen:
            continue
        seen.add(condition)
        if op == ">=" and form is not None:
            part = frozenset((k, c) for k, c in form.items() if k is not None)
            if part in strongest:  # the stronger of the two takes the first one's place
                constant, position = strongest[part]
                if form.get(None, 0) < constant:
                    conditions[position] = condition
                    strongest[part] = form.get(None, 0), position
                continue
            strongest[part] = form.get(None, 0), len(conditions)
        conditions.append(condition)
    return conditions


def _linear(expr):
    """{symbol: coefficient, None: constant} for a linear expression, else None."""
    if isinstance(expr, int):
        return {None: expr} if expr else {}
    if expr[0] == "size":
        return {expr[1]: 1}
    op, a, b = expr
    la, lb = _linear(a), _linear(b)
    if la is None or lb is None:
        return None
    if op in "+-":
        out = dict(la)
        for k, c in lb.items():
            out[k] = out.get(k, 0) + (c if op == "+" else -c)
        return {k: c for k, c in out.items() if c}
    if op == "*" and (set(la) <= {None} or set(lb) <= {None}):
        scale, other = (la.get(None, 0), lb) if set(la) <= {None} else (lb.get(None, 0), la)
        return {k: c * scale for k, c in other.items() if c * scale}
    return None


def _always(form, op):
    """Whether `form op 0` holds for every size (sizes are ≥ 0; input sizes are not 1)."""
    const = form.get(None, 0)
    symbols = {k: c for k, c in form.items() if k is not None}
    if not symbols:
        return {">=": const >= 0, "==": const == 0, "!=": const != 0}[op]
    if op == ">=":
        return const >= 0 and all(c > 0 for c in symbols.values())
    signs = {c > 0 for c in symbols.values()}
    if op == "!=" and const and signs == {const > 0}:  # n + 1 != 0: never 0, sizes ≥ 0
        return True
    one_symbol = len(symbols) == 1 and abs(next(iter(symbols.values()))) == 1
    return op == "!=" and one_symbol and abs(const) == 1 and -const * next(
        iter(symbols.values())) == 1  # n - 1 != 0


def _from_linear(form):
    """The canonical expression of a linear form: the symbols with positive coefficients in
    order, then those with negative ones subtracted, the constant last (n0 - n1 + 2)."""
    const = form.get(None, 0)
    symbols = sorted(k for k in form if k is not None)
    terms = [(k, form[k]) for k in symbols if form[k] > 0] + \
            [(k, form[k]) for k in symbols if form[k] < 0]
    expr = 0
    for k, c in terms:
        term = ("size", k) if abs(c) == 1 else ("*", abs(c), ("size", k))
        expr = term if expr == 0 and c > 0 else ("+" if c > 0 else "-", expr, term)
    if const:
        expr = const if expr == 0 else ("+" if const > 0 else "-", expr, abs(const))
    return expr
