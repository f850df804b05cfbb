"""Building blocks of generated expressions: literals in an explicit dtype, sizes,
params, and template substitution. Knows no primitive by name."""

import ast
import math

import numpy as np

from srcxform.core.dims import Dim, expr_of, render

_NP_NAMES = {"bool": "bool_"}
_SIZE_OPERATORS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "//": ast.FloorDiv, "%": ast.Mod}


def dtype_ast(dtype):
    """`np.float32` for float32 (`np.bool_` for bool)."""
    name = _NP_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)
    return ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load())


def cast_to(value, dtype):
    """`np.int32(value)`: value as a scalar of dtype, unless it is that cast already."""
    if isinstance(value, ast.Call) and ast.dump(value.func) == ast.dump(dtype_ast(dtype)):
        return value
    return ast.Call(dtype_ast(dtype), [value], [])


def literal(value, dtype):
    """A Python number as `np.float32(2.0)`: generated code spells every dtype out."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return ast.Constant(bool(value))
    if isinstance(value, float) and not math.isfinite(value):
        inf = ast.Attribute(ast.Name("np", ast.Load()), "nan" if math.isnan(value) else "inf",
                            ast.Load())
        arg = ast.UnaryOp(ast.USub(), inf) if value < 0 else inf
    elif dtype.kind == "f":
        arg = ast.Constant(float(value))
    else:
        arg = ast.Constant(int(value))
    return cast_to(arg, dtype)


def reduction_init(init, dtype):
    """A reduction's starting value in dtype (±inf becomes an integer type's bound)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and not math.isfinite(init):
        info = np.iinfo(dtype)
        init = info.min if init < 0 else info.max
    return literal(init, dtype)


def size_label(program):
    """The number each size symbol of program is shown with (dims.Symbols.label)."""
    for var in program.ins:
        for d in var.aval.shape:
            if isinstance(d, Dim):
                return d.symbols.label
    return lambda k: k


class Sizes:
    """Renders sizes (ints or Dims) as expressions over n0, n1, …, noting which are used;
    `label` numbers the symbols."""

    def __init__(self, label):
        self.used = set()
        self.label = label

    def name(self, k):
        return f"n{self.label(k)}"

    def _name(self, k):
        self.used.add(k)
        return self.name(k)

    def source(self, d):
        return render(expr_of(d), self._name)

    def ast(self, d):
        return self._expr_ast(expr_of(d))

    def _expr_ast(self, expr):
        """The AST of an expression, as parsing its source gives it (-1 is a negation)."""
        if isinstance(expr, int):
            return ast.Constant(expr) if expr >= 0 else \
                ast.UnaryOp(ast.USub(), ast.Constant(-expr))
        if expr[0] == "size":
            return ast.Name(self._name(expr[1]), ast.Load())
        return ast.BinOp(self._expr_ast(expr[1]), _SIZE_OPERATORS[expr[0]](),
                         self._expr_ast(expr[2]))

    def tuple(self, shape):
        return ast.Tuple([self.ast(d) for d in shape], ast.Load())


def param_ast(value, sizes):
    """A primitive's param as an expression: tuples, sizes, dtypes, slices, None."""
    if isinstance(value, np.dtype):
        return dtype_ast(value)
    if value is None:
        return ast.Constant(None)
    if hasattr(value, "to_slice"):
        return ast.Slice(*[None if v is None else param_ast(v, sizes)
                           for v in (value.start, value.stop, value.step)])
    if isinstance(value, tuple):
        return ast.Tuple([param_ast(v, sizes) for v in value], ast.Load())
    if isinstance(value, bool):
        return ast.Constant(value)
    if isinstance(value, (int, np.integer)):
        return sizes.ast(value)
    return ast.Constant(value)


def name_ast(name):
    """An AST Name reading `name`."""
    return ast.Name(name, ast.Load())


def copy_ast(node):
    """A copy of an AST in which no two places hold the same node, unlike copy.deepcopy
    (whose generality also costs most of code generation's time). Nodes without fields
    (Load, Add) hold nothing: they are shared, as the parser shares them."""
    if isinstance(node, list):
        return [copy_ast(n) for n in node]
    if not isinstance(node, ast.AST) or not node._fields:
        return node
    copied = type(node)(**{f: copy_ast(getattr(node, f)) for f in node._fields
                           if hasattr(node, f)})
    if getattr(node, "slice_bounds", False):  # lower.embedded's mark, for chunking.py
        copied.slice_bounds = True
    return copied


def _literal_number(node):
    """The number in `2` or `np.float64(2.0)`, else None."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    return None


def _reverses(perm):
    """Whether an axes tuple literal is (k-1, ..., 1, 0)."""
    values = [e.value for e in getattr(perm, "elts", []) if isinstance(e, ast.Constant)]
    return len(values) == len(getattr(perm, "elts", [])) and values == sorted(values)[::-1] \
        and values == list(range(len(values)))[::-1]


def _single_index(node):
    """x[0], not x[0,]; and a variadic operand's item, `indices[1]` of (i, j), as j."""
    if isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 1:
        node.slice = node.slice.elts[0]
    if isinstance(node.value, ast.Tuple) and isinstance(node.slice, ast.Constant):
        return node.value.elts[node.slice.value]
    return node


def _square_as_product(node):
    """x ** 2 as x * x: a multiply, where pow() is a call LLVM cannot vectorize."""
    if (isinstance(node.op, ast.Pow) and _literal_number(node.right) == 2
            and isinstance(node.left, (ast.Name, ast.Subscript))):
        return ast.BinOp(node.left, ast.Mult(), copy_ast(node.left))
    return node


def _transpose_as_view(node):
    """arrays.transpose(x, (1, 0)) as x.T: a view Numba types as Fortran-ordered, which
    blas.matmul hands to BLAS as it is, where a general transpose would be copied."""
    func = node.func
    if (isinstance(func, ast.Attribute) and func.attr == "transpose"
            and isinstance(func.value, ast.Name) and func.value.id == "arrays"
            and len(node.args) == 2 and _reverses(node.args[1])):
        return ast.Attribute(node.args[0], "T", ast.Load())
    return node


# Rewrites of a filled node, applied once its children are filled.
_REWRITES = {ast.Subscript: _single_index, ast.BinOp: _square_as_product,
             ast.Call: _transpose_as_view}


def fill(template, names, literal_dtype=None):
    """A copy of a template with each Name in `names` replaced by a copy of its expression
    and, given literal_dtype, each number wrapped in that dtype; each copied node of the
    template is then rewritten as _REWRITES says (the substituted expressions are not)."""

    def build(node):
        if isinstance(node, list):
            return [build(n) for n in node]
        if not isinstance(node, ast.AST) or not node._fields:
            return node
        if isinstance(node, ast.Name) and node.id in names:
            return copy_ast(names[node.id])
        if isinstance(node, ast.Constant) and literal_dtype is not None \
                and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return literal(node.value, literal_dtype)
        built = type(node)(**{f: build(getattr(node, f)) for f in node._fields
                              if hasattr(node, f)})
        rewrite = _REWRITES.get(type(node))
        return rewrite(built) if rewrite else built

    return build(template)
