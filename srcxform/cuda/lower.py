"""CUDA lowering: the CPU kernel's fusion schedule, placement and loop bodies
(codegen/lower.py, whose lowering this extends), emitted as one CUDA kernel per loop nest
and a host driver that launches them in program order.

A loop nest becomes a kernel with a thread per element of its domain: a grid-stride loop
over the flattened domain, each thread recovering its loop indices. A reduction adds
into its output by atomics: a sum to a scalar first accumulates in a register over the
thread's elements, so the atomics are one per thread, not one per element; a reduction
that keeps axes adds each element atomically (several threads share an output element,
and an atomic needs no second kernel). Values one kernel makes and another reads are
device arrays (the driver's `buffers`, kept between calls, but for what a call returns);
a scalar is a 1-element array. Scalar steps between two nests run at the start of the
second's kernel, in each thread, rather than in a one-thread launch of their own. The
driver runs the views (getitem, reshape, transpose) on device arrays and calls launch.py
for concat, matmul, an image's windows, gathers (and their gradients) and random draws;
anything else that is not elementwise is refused, naming the op and the user's line.
Knows no primitive by name: the ops lowered outside loops are a table keyed by
primitive, the reductions told apart by their templates.

A loop or branch on traced values runs on the host (codegen/control.py's code, in the
driver): each iteration launches its body's kernels, and a bound, a loop's test or a
branch's predicate is read back (a wait for the kernels before it). Its stacks are device
arrays, a row copied in by a kernel; a region's results are new device arrays at each
iteration (a kept buffer would be written again while a carry still held it).
"""

import ast
import functools
import itertools

from srcxform.codegen import control
from srcxform.codegen.exprs import copy_ast, fill, name_ast, param_ast, reduction_init
from srcxform.codegen.lower import _Lowering, _Recomputing, _source
from srcxform.core.aval import is_one
from srcxform.core.errors import CompileError, user_line
from srcxform.core.ir import Lit, Var
from srcxform.core.version import __version__
from srcxform.codegen.schedule import LoopGroup
from srcxform.ops.conv import fold_p, patches_p
from srcxform.ops.linalg import matmul_p, matvec_p
from srcxform.ops.random import philox_p
from srcxform.passes.structured import reads_index
from srcxform.ops.shape import (check_range_p, concat_p, embed_p, gather_p, getitem_p,
                                 iota_p, reshape_p, scatter_add_p, transpose_p, window_p)
from srcxform.core import syntax

# NumPy calls of the templates that CUDA kernels do not compile, and their math module
# equivalents (numba-cuda compiles math.* to libdevice, float32 as float32).
_AS_MATH = {"exp": "exp", "expm1": "expm1", "log1p": "log1p", "sqrt": "sqrt", "sin": "sin",
            "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "arcsin": "asin",
            "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "fmod": "fmod", "isfinite": "isfinite",
            "isinf": "isinf", "erf": "erf", "erfc": "erfc", "lgamma": "lgamma"}
# NumPy names that CUDA kernels compile as they are: dtype constructors, constants and
# the ufuncs checked by compiling to PTX (tests/test_cuda_sim.py).
_KEPT = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
         "uint16", "uint32", "uint64", "bool_", "inf", "nan", "pi", "e", "maximum", "minimum",
         "isnan", "log", "tanh"}
# What a reduction's template combines with, and the atomic that does it.
_ATOMICS = {ast.Add: "add", "maximum": "max", "minimum": "min"}
_ATOMIC_DTYPES = {"float32", "float64", "int32", "int64", "uint32", "uint64"}
_KERNEL_GLOBALS = {"np", "math", "cuda", "range", "abs", "max", "min"}


class UnsupportedOnCuda(CompileError, NotImplementedError):
    """An op of the traced function that the CUDA target does not lower (yet)."""


def refuse(eqn, what):
    line = user_line(eqn.origin) if eqn.origin else "an unknown line"
    part = "the gradient of " if eqn.adjoint else ""
    raise UnsupportedOnCuda(
        f"srcxform.cuda: {eqn.prim.name} ({part}{line}) {what}; the CUDA target lowers "
        "elementwise ops, sum/max/min reductions, views, concat, gathers, matrix "
        "products, convolutions, poolings and random draws so far. Run this function on "
        "the CPU (device='cpu').")


class CudaLowering(_Lowering):
    """A program as CUDA kernels (`kernels`, their source) and a host driver (`lines`)."""

    in_place_carries = False  # a region's results are new arrays (new_array)
    # A kernel's element index, the driver's buffers and what both call: never a value's.
    reserved = frozenset({"flat", "buffers", "launch", "cuda", "abs", "slice"})

    def __init__(self, program, *region):
        super().__init__(program, *region)
        self.buffers, self.buffer_vars = [], set()  # the driver allocates every output
        self.kernels = []
        self.signatures = {}  # kernel name: its parameters' Numba types, as text
        self.stored = self._scalars_read_elsewhere()
        self.returned = _returned(program)
        self.pending = None  # a one-thread nest that the next nest's kernel runs first
        self.folded = {}  # its values: their locals there
        self.in_kernel = False  # whether the lines emitted are a kernel's
        self.partial_types = {}  # a product's partials: their Numba types

    def region_lowering(self, program):
        sub = super().region_lowering(program)
        sub.kernels, sub.signatures, sub.func_name = self.kernels, self.signatures, \
            self.func_name
        return sub

    # ----- loops and branches: run by the driver, reading device values back -----
    def on_host(self, value):
        return f"launch.host({value})"  # control.py reads a bound once, before its loop

    def loop_index(self, index, body):
        """As a 1-element device array where the body reads it (a copy per iteration)."""
        return f"launch.scalar({index}, np.int64)" if reads_index(body) else index

    def stack(self, name, dims, dtype):
        return f"{name} = launch.empty(({', '.join(dims)},), {dtype})"

    def row(self, stack, row):
        return f"launch.row({stack}, {row})"

    def put(self, stack, row, value, lane=False):
        return f"launch.put({stack}, {row}, {value})"

    def grown(self, stack):
        return f"launch.grown({stack})"

    def counted(self, indent, name):
        self.line(indent, f"{name} = launch.scalar({name}, np.int64)")

    def _scalars_read_elsewhere(self):
        """Scalars that loop nests make and something outside their nest reads: in
        1-element device arrays, where the CPU kernel keeps them in locals."""
        group_of = {e.out: item for item in self.items if isinstance(item, LoopGroup)
                    for e in item.eqns}
        found = {a for a in self.program.outs if isinstance(a, Var) and a in group_of}
        for eqn in self.program.eqns:
            found |= {a for a in eqn.ins if isinstance(a, Var) and a in group_of
                      and group_of.get(eqn.out) is not group_of[a]}
        return {v for v in found if not v.aval.shape}

    # ----- loads: a scalar another kernel made is element 0 of its array -----
    def load_at(self, atom, exprs, dtype):
        if atom in self.folded:
            return name_ast(self.folded[atom])
        if isinstance(atom, Var) and not atom.aval.shape and atom not in self.virtual:
            return ast.Subscript(name_ast(self.namer(atom)), ast.Constant(0), ast.Load())
        return super().load_at(atom, exprs, dtype)

    def expression(self, e, exprs, scalar_names):
        value = super().expression(e, exprs, scalar_names)
        return _for_cuda(e, value)

    # ----- loop nests -----
    def statements(self):
        """As the CPU kernel's, but a one-thread nest with no reduction, followed by a nest
        with a loop, runs in that nest's kernel: each thread computes its scalars before
        its loop (a few flops, where a launch costs microseconds)."""
        for item, after in itertools.pairwise(self.items + [None]):
            if not isinstance(item, LoopGroup):
                self.eqn(item)
            elif self._foldable(item, after):
                self.pending = item
            else:
                self.group(item)

    def _foldable(self, group, after):
        return not group.domain and isinstance(after, LoopGroup) and \
            not all(is_one(d) for d in after.domain) and self._live(after) and \
            all(e.prim.kind != "reduction" for e in group.eqns)

    def group(self, group):
        members = self._live(group)
        if not members:  # every value is recomputed where it is read
            return
        domain = group.domain
        index = [None if is_one(d) else f"i{p}" for p, d in enumerate(domain)]
        self.recomputing = _Recomputing(index)
        host, body, before, after, finish, scalar_names = [], [], [], [], [], {}
        prologue, steps = self._prologue(group, host)
        for e in members:
            name = self.namer(e.out)
            if e.prim.kind == "reduction":
                reduced = self.atomic_reduction(e, name, index, scalar_names,
                                                self._count(domain, index)[1])
                host += reduced.allocations
                before += reduced.before
                body += self._recomputed_here() + [(e, reduced.body)]
                after += [(e, node) for node in reduced.after]
                finish += reduced.finish
                continue
            local = self.namer.in_loop(e.out)
            value = self.elementwise(e, index, scalar_names)
            body += self._recomputed_here()
            body.append((e, ast.Assign([ast.Name(local, ast.Store())], value)))
            scalar_names[e.out] = local
            self.computed.add(e.out)
            if e.out in self.placement.arrays or e.out in self.stored:
                host.append(self.allocation(e.out, domain or (1,)))
                store = self._store(name, index) if domain else \
                    ast.Subscript(name_ast(name), ast.Constant(0), ast.Store())
                body.append((None, ast.Assign([store], name_ast(local))))
        self.section(steps + members)
        for node in host:
            self.stmt(1, node)
        self.launch(steps + members, domain, index, prologue + before, body, after,
                    bool(steps))
        for node in finish:
            self.stmt(1, node)
        self.folded = {}

    def _prologue(self, group, host):
        """The pending one-thread nest's statements, to run first in every thread of
        `group`'s kernel, its values locals there; thread 0 stores those that other
        nests read."""
        pending, self.pending = self.pending, None
        if pending is None:
            return [], []
        statements, stores, steps = [], [], self._live(pending)
        for e in steps:
            local = self.folded[e.out] = self.namer.in_loop(e.out)
            value = self.elementwise(e, [], {})
            statements += self._recomputed_here() + [(e, ast.Assign([ast.Name(
                local, ast.Store())], value))]
            self.computed.add(e.out)
            # Stored as without the fold: a later nest may recompute a value that reads it.
            if e.out in self.stored:
                host.append(self.allocation(e.out, (1,)))
                stores.append(ast.Assign([ast.Subscript(name_ast(self.namer(e.out)),
                                          ast.Constant(0), ast.Store())], name_ast(local)))
        if stores:
            statements.append((None, ast.If(syntax.parse("cuda.grid(1) == 0", mode="eval").body,
                                            stores, [])))
        return statements, steps

    def atomic_reduction(self, e, name, index, scalar_names, count):
        """A reduction's allocations (its output filled with its start), its statements in
        the kernel (before the loop, in it, after it) and in the driver after the launch.
        A product to one element has no atomic: each thread of the launch over `count`
        stores its own in `partials`, which one thread then multiplies."""
        dtype = e.out.aval.dtype
        product = _combined_by(e) is ast.Mult and len(e.kwargs["axis"]) == len(
            e.ins[0].aval.shape)
        combine = None if product else _atomic_of(e)
        init = reduction_init(e.prim.init, dtype)
        allocation = self.allocation(e.out, e.out.aval.shape or (1,), None if product else init)
        x = self.load(e.ins[0], index, scalar_names, dtype)
        if product or not e.out.aval.shape:  # a register per thread
            acc, start, step = self._accumulated(e, name, x, init)
            if not product:  # and an atomic per thread
                finish = _atomic(combine, name, ast.Constant(0), name_ast(acc), dtype)
                return _Reduced([allocation], [start], step, [finish])
            partials = self.namer.fresh(f"{name}_partials")
            self.partial_types[partials] = f"{_numba_dtype(dtype)}[:]"
            made = syntax.parse(f"{partials} = buffers.empty({partials!r}, "
                             f"(launch.gridsize({count}),), np.{dtype.name})").body[0]
            store = syntax.parse(f"{partials}[cuda.grid(1)] = {acc}").body[0]
            return _Reduced([allocation, made], [start], step, [store],
                            [syntax.parse(f"launch.multiplied({partials}, {name})").body[0]])
        axis, keepdims = e.kwargs["axis"], e.kwargs["keepdims"]
        kept = [ast.Constant(0) if a in axis or i is None else name_ast(i)
                for a, i in enumerate(index) if keepdims or a not in axis]
        at = ast.Tuple(kept, ast.Load()) if len(kept) > 1 else kept[0]
        return _Reduced([allocation], [], _atomic(combine, name, at, x, dtype), [])

    def _accumulated(self, e, name, x, init):
        """A reduction in a register per thread: its name, its start and its step."""
        acc = self.namer.fresh(f"{name}_acc")
        dtype = e.out.aval.dtype
        combined = _for_cuda(e, fill(e.prim.template, {"acc": name_ast(acc), "x": x},
                                     literal_dtype=dtype))
        step = ast.AugAssign(ast.Name(acc, ast.Store()), combined.op, combined.right) \
            if isinstance(combined, ast.BinOp) else \
            ast.Assign([ast.Name(acc, ast.Store())], combined)
        return acc, (None, ast.Assign([ast.Name(acc, ast.Store())], init)), step

    def section(self, eqns):
        if not self.in_kernel:  # a kernel's statements are in the driver's section
            super().section(eqns)

    def _count(self, domain, index):
        """The extents of a nest's loops, and their product: its elements (source text)."""
        extents = [self._paren(self.sizes.source(domain[p])) for p, i in enumerate(index) if i]
        return extents, " * ".join(extents) or "1"

    def launch(self, members, domain, index, before, body, after, steps=False):
        """Emits the kernel of a loop nest and its launch in the driver."""
        kernel = f"{self.func_name}_k{len(self.kernels)}"
        looped = [p for p, i in enumerate(index) if i]
        extents, count = self._count(domain, index)
        driver, self.lines = self.lines, []
        origin, self.last_origin = self.last_origin, None
        self.line(1, f'"""Loop nest {len(self.kernels)}: {_what(members, domain, steps)}."""')
        self.in_kernel = True
        for e, node in before:
            self.body_statement(1, e, node)
        self.line(1, f"for flat in range(cuda.grid(1), {count}, cuda.gridsize(1)):")
        for k, p in enumerate(looped):
            inner = " * ".join(extents[k + 1:])
            value = f"flat // ({inner})" if len(extents) - k > 2 else \
                f"flat // {inner}" if inner else "flat"
            self.line(2, f"{index[p]} = {value}" + (f" % {extents[k]}" if k else ""))
        for e, node in body:
            self.body_statement(2, e, node)
        for e, node in after:
            self.body_statement(1, e, node)
        lines, self.lines, self.last_origin = self.lines, driver, origin
        self.in_kernel = False
        params = _free_names(lines)
        self.signatures[kernel] = self._types(params)
        self.kernels.append("\n".join(["@cuda.jit", f"def {kernel}({', '.join(params)}):"]
                                      + ["    " * i + t for i, t in lines]))
        self.line(1, f"{kernel}[launch.grid({count})]({', '.join(params)})")

    def _types(self, params):
        """The Numba types of a kernel's parameters: arrays of any layout (a view may be
        strided), a scalar value as a 1-element array, a size as int64, a product's
        partials (`partial_types`) as theirs."""
        values = {self.namer(v): v for v in self.program.ins}
        values.update({self.namer(e.out): e.out for e in self.program.eqns})
        types = []
        for name in params:
            var = values.get(name)
            if var is None:  # a size, or partials
                types.append(self.partial_types.get(name, "int64"))
                continue
            dims = ", ".join([":"] * max(1, len(var.aval.shape)))
            types.append(f"{_numba_dtype(var.aval.dtype)}[{dims}]")
        return tuple(types)

    @staticmethod
    def _paren(text):
        """A size's source as an operand of * // %: parenthesized unless it is one name,
        one number or already parenthesized."""
        bare = text.isidentifier() or text.isdigit() or \
            text.startswith("(") and text.endswith(")") and text.count("(") == 1
        return text if bare else f"({text})"

    def allocation(self, var, shape, init=None):
        """`name = <a device array for var>`, filled with `init` where given."""
        return ast.Assign([ast.Name(self.namer(var), ast.Store())],
                          self.new_array(var, shape, init))

    def new_array(self, var, shape, init=None):
        """A new device array for a value the call returns (or a view of one returns);
        else the kernel's own, kept between calls (launch.Buffers, named by its site)."""
        how = "empty" if init is None else "full"
        args = [self.sizes.tuple(shape), *([init] if init is not None else []),
                _attr("np", var.aval.dtype.name)]
        if var in self.returned:
            return ast.Call(_attr("launch", how), args, [])
        return ast.Call(_attr("buffers", how), [ast.Constant(self.namer(var)), *args], [])

    # ----- equations outside loop nests: on the host, on device arrays -----
    def eqn(self, eqn):
        if eqn.out in self.virtual:
            return
        if getattr(eqn.prim, "structured", False):
            control.lower(self, eqn)
            return
        host = _HOST.get(eqn.prim)
        if host is None:
            refuse(eqn, "has no CUDA lowering")
        self.header(eqn, 1)
        value = host(self, eqn)
        self.stmt(1, ast.Assign([ast.Name(self.namer(eqn.out), ast.Store())], value))

    # ----- the module -----
    def function(self, func_name, doc):
        self.func_name = func_name
        self.statements()
        outs = [self.whole(a) for a in self.program.outs]
        args = ", ".join([self.namer(v) for v in self.program.ins] + ["buffers"])
        text = [f"def {func_name}({args}):", f'    """{doc}"""']
        for k in sorted(self.sizes.used):
            index, axis = self.program.sizes[k]
            text.append(f"    {self.sizes.name(k)} = {self.namer(self.program.ins[index])}"
                        f".shape[{axis}]")
        text += ["    " * i + t for i, t in self.lines]
        text.append("    return " + _source(ast.Tuple(outs, ast.Load())).strip())
        return "\n\n\n".join(self.kernels + ["\n".join(text)]) + "\n"

    def whole(self, atom):
        if isinstance(atom, Lit):  # an output the trace fixed: a 1-element array too
            return ast.Call(_attr("launch", "full"), [ast.Tuple([ast.Constant(1)], ast.Load()),
                            self.lit(atom), _attr("np", atom.aval.dtype.name)], [])
        return super().whole(atom)


class _Reduced:
    def __init__(self, allocations, before, body, after, finish=()):
        self.allocations, self.before, self.body, self.after = allocations, before, body, after
        self.finish = list(finish)


def _getitem(low, eqn):
    if not eqn.ins[0].aval.shape:  # a scalar given new axes (s[None]): its one element
        return _reshape(low, eqn)
    view = _source_of(low, eqn)
    if eqn.out.aval.shape or not isinstance(view, ast.Subscript):
        return view
    index = view.slice if isinstance(view.slice, ast.Tuple) else ast.Tuple([view.slice],
                                                                           ast.Load())
    return ast.Call(_attr("launch", "element"), [view.value, index], [])


def _reshape(low, eqn):
    shape = low.sizes.tuple(eqn.out.aval.shape)
    return ast.Call(_attr("launch", "reshape"), [low.whole(eqn.ins[0]), shape], [])


def _transpose(low, eqn):
    perm = ast.Tuple([ast.Constant(int(k)) for k in eqn.kwargs["perm"]], ast.Load())
    return ast.Call(_attr("launch", "transpose"), [low.whole(eqn.ins[0]), perm], [])


def _embed(low, eqn):
    """A slice's gradient: zeros with g copied into the slice by a kernel (launch.embedded);
    a scalar made of g's one element (x[None]'s) is g reshaped."""
    g, shape = low.whole(eqn.ins[0]), eqn.out.aval.shape
    if not shape:
        return ast.Call(_attr("launch", "reshape"), [g, ast.Tuple([], ast.Load())], [])
    index = [ast.Call(name_ast("slice"), [ast.Constant(None) if v is None else
                                          param_ast(v, low.sizes)
                                          for v in (i.start, i.stop, i.step)], [])
             if hasattr(i, "to_slice") else param_ast(i, low.sizes) for i in eqn.kwargs["index"]]
    zero = ast.Call(_attr("np", eqn.out.aval.dtype.name), [ast.Constant(0)], [])
    return ast.Call(_attr("launch", "embedded"), [g, low.new_array(eqn.out, shape, zero),
                                                  ast.Tuple(index, ast.Load())], [])


def _product(helper, ranks):
    """A matrix product on the device by launch.<helper> (a thread per output element)
    for operands of `ranks`; others (batched) are refused."""
    def emit(low, eqn):
        if tuple(len(a.aval.shape) for a in eqn.ins) != ranks:
            shapes = " @ ".join(a.aval.short() for a in eqn.ins)
            refuse(eqn, f"of {shapes} (only 2-d @ 2-d and 2-d @ 1-d are lowered)")
        out = low.new_array(eqn.out, eqn.out.aval.shape)
        return ast.Call(_attr("launch", helper), [low.whole(a) for a in eqn.ins] + [out], [])
    return emit


def _launched(low, eqn, out=True):
    """An op that launch.py runs by kernels of its own (an image's windows, concat), or on
    the host (indices checked): the CPU template's call with launch's function of the same
    name, and the output array where `out`."""
    # The op's own call (emit), not a CPU form of it (one index's arrays.row, emit_for).
    call = fill(eqn.prim.template, low.template_names(eqn, [low.whole(a) for a in eqn.ins]))
    call.func = _attr("launch", call.func.attr)
    if out:
        call.args.append(low.new_array(eqn.out, eqn.out.aval.shape or (1,)))  # a scalar: (1,)
    return call


def _scattered(low, eqn):
    """Rows added at indices (gather's gradient), by atomics: for their dtypes only."""
    _atomic_dtype(eqn)
    return _launched(low, eqn)


def _made(name, keys):
    """Lowers a value made on the host by launch.<name> from the inputs and the params
    `keys`, then copied: a random draw (with the CPU kernel's bits), a count (iota)."""
    def made(low, eqn):
        params = [param_ast(eqn.kwargs[k], low.sizes) for k in keys]
        return ast.Call(_attr("launch", name), [low.whole(a) for a in eqn.ins] + params, [])
    return made


def _source_of(low, eqn):
    """The CPU template of a view (x[1:]), which device arrays take as NumPy's do."""
    names = low.template_names(eqn, [low.whole(a) for a in eqn.ins])
    return fill(eqn.prim.template_for([a.aval for a in eqn.ins], eqn.out.aval, eqn.kwargs),
                names)


def _windowed(low, eqn):
    """x[begin:begin + size] with begin known on the device: launch.window's copy."""
    params = [param_ast(eqn.kwargs[k], low.sizes) for k in ("size", "op")]
    return ast.Call(_attr("launch", "window"), [low.whole(a) for a in eqn.ins] + params
                    + [low.new_array(eqn.out, eqn.out.aval.shape)], [])


# What returns its input (check_range where the indices are int64 already).
_VIEWS = (getitem_p, reshape_p, transpose_p, check_range_p)
_HOST = {getitem_p: _getitem, reshape_p: _reshape, transpose_p: _transpose, embed_p: _embed,
         matmul_p: _product("matmul", (2, 2)), matvec_p: _product("matvec", (2, 1)),
         patches_p: _launched, fold_p: _launched,
         philox_p: _made("drawn", ("count", "dist", "dtype")),
         iota_p: _made("counted", ("count", "dtype")), concat_p: _launched,
         gather_p: _launched, scatter_add_p: _scattered, window_p: _windowed,
         check_range_p: functools.partial(_launched, out=False)}


def _returned(program):
    """The values whose device arrays a call returns: the outputs, what a view among them
    (getitem, reshape, transpose) is a view of, and what a loop or branch among them was
    given (a result may be its initial value)."""
    found = {a for a in program.outs if isinstance(a, Var)}
    producers = {eqn.out: eqn for eqn in program.eqns}
    for eqn in reversed(program.eqns):
        if eqn.out in found and (eqn.prim in _VIEWS or eqn.prim is embed_p and not
                                 eqn.out.aval.shape):  # a scalar's gradient: g reshaped
            found.update(a for a in eqn.ins if isinstance(a, Var))
        elif eqn.out in found and getattr(eqn.prim, "is_result", False):
            found.update(a for a in producers[eqn.ins[0]].ins if isinstance(a, Var))
    return found


def _attr(module, name):
    return ast.Attribute(name_ast(module), name, ast.Load())


def _atomic_of(e):
    """The atomic combining a reduction's elements: from its template (acc + x,
    np.maximum(acc, x)), for the dtypes CUDA's atomics take."""
    key = _combined_by(e)
    if key not in _ATOMICS:
        refuse(e, "has no atomic to combine its elements with (sum, max and min do)")
    _atomic_dtype(e)
    return _ATOMICS[key]


def _combined_by(e):
    """What a reduction's template combines with: an operator's type (acc + x) or a
    NumPy function's name (np.maximum(acc, x))."""
    t = e.prim.template
    return type(t.op) if isinstance(t, ast.BinOp) else \
        getattr(t.func, "attr", None) if isinstance(t, ast.Call) else None


def _atomic_dtype(e):
    if e.out.aval.dtype.name not in _ATOMIC_DTYPES:
        refuse(e, f"of {e.out.aval.dtype.name} (CUDA's atomics take "
                  f"{', '.join(sorted(_ATOMIC_DTYPES))})")


def _atomic(combine, name, at, value, dtype):
    """cuda.atomic.<combine>(name[at], value); a float max or min stores a NaN plainly, as
    NumPy's propagate it: numba-cuda's atomic max and min skip a NaN value, and skip any
    value once the element is NaN."""
    call = ast.Expr(ast.Call(ast.Attribute(_attr("cuda", "atomic"), combine, ast.Load()),
                             [name_ast(name), at, value], []))
    if combine == "add" or dtype.kind != "f":
        return call
    target = ast.Subscript(name_ast(name), copy_ast(at), ast.Store())
    is_nan = ast.Compare(copy_ast(value), [ast.NotEq()], [copy_ast(value)])
    return ast.If(is_nan, [ast.Assign([target], copy_ast(value))], [call])


class _Sign(ast.NodeTransformer):
    """np.sign(x) (abs's gradient), which numba-cuda has not, as 1 or -1 in x's type where
    x is positive or negative, else x (0 or NaN)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and getattr(func.value, "id", None) == "np"
                and func.attr == "sign"):
            return node
        x = node.args[0]
        one = ast.BinOp(copy_ast(x), ast.Pow(), ast.Constant(0))
        return ast.IfExp(ast.Compare(copy_ast(x), [ast.Gt()], [ast.Constant(0)]), one,
                         ast.IfExp(ast.Compare(copy_ast(x), [ast.Lt()], [ast.Constant(0)]),
                                   ast.UnaryOp(ast.USub(), copy_ast(one)), x))


def _for_cuda(e, node):
    """An elementwise value's expression with the NumPy calls CUDA kernels do not compile
    replaced (np.exp by math.exp, np.abs by abs); one that is left is refused."""
    node = _Sign().visit(node)
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call) or not isinstance(sub.func, ast.Attribute):
            continue
        module = getattr(sub.func.value, "id", None)
        attr = sub.func.attr
        if module in ("np", "specfun") and attr in _AS_MATH:
            sub.func = _attr("math", _AS_MATH[attr])
        elif module == "np" and attr in ("abs", "absolute"):
            sub.func = name_ast("abs")
        elif module == "vecmath" and attr in ("maximum", "minimum"):  # reduce_max's
            sub.func = _attr("np", attr)
        elif module != "math" and not (module == "np" and attr in _KEPT):
            refuse(e, f"calls {module}.{attr}, which CUDA kernels do not compile")
    return node


def _numba_dtype(dtype):
    return "boolean" if dtype.kind == "b" else dtype.name


def _free_names(lines):
    """A kernel's parameters: the names its body reads and does not assign, in order of
    first use."""
    tree = syntax.parse("\n".join("    " * (i - 1) + t for i, t in lines if i >= 1))
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    loads = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load)), key=lambda n: (n.lineno, n.col_offset))
    found = []
    for n in loads:
        if n.id not in stored and n.id not in _KERNEL_GLOBALS and n.id not in found:
            found.append(n.id)
    return found


def _what(members, domain, steps):
    kinds = {e.adjoint for e in members}
    part = "forward and adjoint" if len(kinds) == 2 else "adjoint" if True in kinds else \
        "forward"
    dtype = members[-1].out.aval.dtype
    shape = ", ".join(str(d) for d in domain)
    where = f"a thread per element of [{shape}]" if domain else "one thread"
    if steps:
        where += ", each first computing the one-thread steps before it"
    return f"{part}, {where} ({dtype.name})"


def generate(program, func_name, doc):
    """The source of a module holding the program's CUDA kernels and `func_name`, the host
    driver that takes the program's inputs as device arrays (scalars as 1-element arrays)
    and returns its outputs so; and each kernel's parameter types ({name: (type, ...)})."""
    lowering = CudaLowering(program)
    body = lowering.function(func_name, doc)
    header = f'"""Generated by srcxform {__version__} for CUDA; edits are overwritten."""\n\n'
    imports = "import math\n\nimport numpy as np\nfrom numba import cuda\n\n" \
              "from srcxform.cuda import launch\n\n\n"
    return header + imports + body, lowering.signatures
