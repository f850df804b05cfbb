"""What a kernel captured from outside its arguments, and the test, at each call, that it
has not changed since the trace.

A trace bakes in whatever the function reached without being passed it: the Variables it
reads (a global, a closure's, an attribute), numbers, arrays and functions. Eagerly, the
next call reaches them anew, so a kernel is used only while each of them is the object
(or, for a number or string, the value) the trace saw; otherwise the function is traced
again. What is tested (a probe each):

- each global name the function's code uses (and the code of every function of the
  user's it reaches through its globals and closures: helpers, a schedule), in the
  function's globals dict: the value bound to it;
- each closure variable of those functions (a cell): its contents;
- each attribute, named in that code, of an object of the user's they reach directly (a
  global `model`, `self` of a method; its own, its slots' or its class's): `model.w`
  rebound to a new Variable; and what the object's own methods and properties that code
  names, and its `__call__`, read of it (`model.loss(x)`, `model(x)`), as for a method's
  `self`;
- what a library object reports while traced (Trace.capture): an optimizer's learning
  rate Variable or schedule, and its hyperparameters.

Library modules, classes and functions (srcxform's, NumPy's, the standard ones) are not
probed; nor is anything further away (`model.layers[0].w`), nor a global reached only
through `globals()` or `getattr` with a computed name.
"""

import inspect
import types
from dataclasses import dataclass

import numpy as np

from srcxform.core.signature import number_key
from srcxform.jit.index import _library, code_names

# Values compared by value, not identity: a global rebound to an equal number is the same.
SIMPLE = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True, eq=False)
class Probe:
    """One captured object: where it is read again (`kind` "global": holder[key], "cell":
    holder.cell_contents, "attr": getattr(holder, key)) and what the trace saw there."""

    kind: str
    holder: object
    key: str | None
    value: object

    def current(self):
        """The object found there now (_MISSING where there is none)."""
        try:
            if self.kind == "global":
                return self.holder.get(self.key, _MISSING)
            if self.kind == "cell":
                return self.holder.cell_contents
            return getattr(self.holder, self.key, _MISSING)
        except ValueError:  # an empty cell
            return _MISSING

    @property
    def by_value(self):
        """Whether an equal object of the same type will do (a number, a string): one seen
        is compared by value, anything else by identity."""
        return isinstance(self.value, SIMPLE)

    def holds(self):
        """Whether the object found there is the one the trace saw (never, for what changed
        while traced: settled)."""
        return self.kind != UNSETTLED and self._matches(self.current())

    def _matches(self, now):
        if now is self.value:
            return True
        if not self.by_value or type(now) is not type(self.value):
            return False
        return number_key(now) == number_key(self.value) if isinstance(
            now, (float, complex)) else now == self.value



_MISSING = object()
UNSETTLED = "unsettled"  # a Probe's kind for what moved while traced: it never holds


def settled(before, after):
    """A trace's probes, from of_function's before and after it: each as it was before
    (after's, where reached only then); an UNSETTLED one where it moved while traced
    (a global the function, or another thread, rebound: the trace may have read either
    value, so its kernel serves that call alone; helper 134)."""
    now = {_key(probe): probe for probe in after}
    kept = {_key(probe): probe if _key(probe) in now and probe._matches(now[_key(probe)].value)
            else Probe(UNSETTLED, probe.holder, probe.key, probe.value) for probe in before}
    return list(kept.values()) + [probe for key, probe in now.items() if key not in kept]


def serves_one_call(probes):
    """Whether a kernel with these probes serves its trace's call alone (settled): no warm
    entry, no crosscheck, traced again at the next call."""
    return any(probe.kind == UNSETTLED for probe in probes)


def _key(probe):
    return probe.kind, id(probe.holder), probe.key


def of_function(fn):
    """The probes for what fn (a function, method or Differentiable) and the functions of
    the user's it reaches read, as they are now."""
    found = {}
    _function(fn, found, set())
    return list(found.values())


def attribute(obj, name):
    """A probe for obj.name as it is now (a library object's state, reported while traced)."""
    return Probe("attr", obj, name, getattr(obj, name))


def _add(found, probe):
    found.setdefault(_key(probe), probe)


def _function(fn, found, seen):
    if id(fn) in seen:
        return
    seen.add(id(fn))
    if isinstance(fn, types.MethodType):
        _function(fn.__func__, found, seen)
        _object(fn.__self__, fn.__func__, found, seen)
        return
    wrapped = getattr(fn, "__wrapped__", None)  # a Differentiable, or a functools.wraps
    if not isinstance(fn, types.FunctionType):
        if wrapped is not None:
            _function(wrapped, found, seen)
        elif callable(fn) and not isinstance(fn, type):  # an instance of the user's: its __call__
            _method(fn, "__call__", found, seen)
        return
    if fn.__globals__.get("__srcxform_generated__"):  # a warm entry (codegen/entry.py)
        return
    if _library(fn.__globals__.get("__name__") or ""):
        # Library code is fixed, but one made at run time (jacobian's) holds the user's.
        for cell in fn.__closure__ or ():
            value = _contents(cell)
            if callable(value):
                _function(value, found, seen)
        return
    names = code_names(fn.__code__)
    for name in sorted(names & fn.__globals__.keys()):
        value = fn.__globals__[name]
        if not is_library(value):
            _add(found, Probe("global", fn.__globals__, name, value))
            _reached(value, fn, found, seen)
    for cell in fn.__closure__ or ():
        value = _contents(cell)
        # A library module is not rebound, as for globals (autograph's ag__ is one).
        if value is _MISSING or isinstance(value, types.ModuleType) and is_library(value):
            continue
        _add(found, Probe("cell", cell, None, value))
        _reached(value, fn, found, seen)
    if wrapped is not None:
        _function(wrapped, found, seen)


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # not assigned yet
        return _MISSING


def cell_value(cell):
    """A closure cell's contents, or None where it is empty."""
    value = _contents(cell)
    return None if value is _MISSING else value


def _reached(value, fn, found, seen):
    """Follows a value fn reads: a function is read through too, an object of the user's
    one attribute deep."""
    if isinstance(value, (types.FunctionType, types.MethodType)) or \
            hasattr(value, "__wrapped__") and callable(value):
        _function(value, found, seen)
    elif not isinstance(value, (type, types.ModuleType) + SIMPLE):
        _object(value, fn, found, seen)


def _object(obj, fn, found, seen):
    """Probes for what fn reads of obj (an object of the user's): the attributes its code
    names, and what the methods and properties it names read of obj (`obj.loss(x)`,
    `self.scale` where scale is a property), and its __call__ (`obj(x)`)."""
    if (id(obj), id(fn)) in seen:
        return
    seen.add((id(obj), id(fn)))
    _attributes(obj, fn, found)
    for name in sorted(code_names(fn.__code__) | {"__call__"}):  # obj(x) names no method
        _method(obj, name, found, seen)


def _method(obj, name, found, seen):
    """Follows the method or property `name` of obj's class (the user's), when it is one,
    as a bound method is followed: its code, and what it reads of obj."""
    member = getattr(type(obj), name, None)
    method = member.fget if isinstance(member, property) else member
    if isinstance(method, types.FunctionType) and not _library(type(obj).__module__ or ""):
        _function(method, found, seen)
        _object(obj, method, found, seen)


def _attributes(obj, fn, found):
    """Probes for the attributes of obj (an object of the user's) that fn's code names:
    its own, its slots', and its class's values (`self.SCALE`, rebound on the class)."""
    if _library(type(obj).__module__ or ""):
        return
    own = vars(obj) if hasattr(obj, "__dict__") else {}
    for name in sorted(code_names(fn.__code__)):
        if name in own:
            _add(found, Probe("attr", obj, name, own[name]))
        elif _class_value(inspect.getattr_static(obj, name, _MISSING)) and \
                (value := getattr(obj, name, _MISSING)) is not _MISSING:
            _add(found, Probe("attr", obj, name, value))


def _class_value(static):
    """Whether what obj's class holds under a name is a value of obj's: a slot, or plain
    data (no descriptor: a method, property or partialmethod makes a new object at each
    read, and _method follows what methods and properties read)."""
    if isinstance(static, types.MemberDescriptorType):
        return True
    return static is not _MISSING and not isinstance(static, (type, types.ModuleType)) and \
        not hasattr(type(static), "__get__")


def is_library(value):
    """A module, class or function of srcxform's, NumPy's or the standard library: not
    probed (they are not rebound in practice, and each probe costs warm call time)."""
    if isinstance(value, types.ModuleType):
        return _library(value.__name__)
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        return _library(getattr(value, "__module__", "") or "")
    return False
