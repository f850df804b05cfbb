"""Elementwise primitives: NumPy impl, VJP in srcxform ops, scalar emit template.

Shape and dtype rules (broadcast, NEP 50 promotion) come from `elementwise()`, and
backprop sums cotangents back to each input's shape: nothing here handles broadcasting.
Templates use NumPy's scalar functions (np.exp), which Numba compiles and which keep
float32 as float32 where Python's math module would widen it.
"""

import numpy as np

from srcxform.core.aval import Aval
from srcxform.core import tensor as _tensor
from srcxform.core.dtypes import out_of_range, promote
from srcxform.core.errors import (
    DtypeArgumentError, ShapeArgumentError, ValueArgumentError, ZeroDivisionArgumentError,
)
from srcxform.core.primitive import ZERO, argument_error, check_kinds, elementwise, primitive
from srcxform.core.tensor import Tensor, as_value

# ----- binary arithmetic -----


def _true_divide_dtype(common):
    return common if common.kind == "f" else np.dtype(np.float64)


add_p = elementwise("add", np.add, "x + y", vjp=lambda g, out, x, y: (g, g),
                    units=((0, 0), (0, 1)), kinds="fiu", numpy=(np.add,))
subtract_p = elementwise("subtract", np.subtract, "x - y", vjp=lambda g, out, x, y: (g, -g),
                         units=((0, 1),), kinds="fiu", numpy=(np.subtract,))
multiply_p = elementwise("multiply", np.multiply, "x * y",
                         vjp=lambda g, out, x, y: (g * y, g * x), units=((1, 0), (1, 1)),
                         kinds="fiu", numpy=(np.multiply,))
# x * y, and 0 wherever y is 0, even where x is inf or NaN; TensorFlow's MulNoNanGrad as
# its VJP, so the gradient wrt y at y = 0 is x times the upstream gradient.
multiply_no_nan_p = elementwise(
    "multiply_no_nan", lambda x, y: np.where(y == 0, 0, x * y), "0 if y == 0 else x * y",
    vjp=lambda g, out, x, y: (multiply_no_nan(g, y), multiply_no_nan(x, g)), kinds="f")
divide_p = elementwise("divide", np.true_divide, "x / y", out_dtype=_true_divide_dtype,
                       units=((1, 1),),
                       vjp=lambda g, out, x, y: (g / y, -g * out / y), kinds="fiu",
                       numpy=(np.true_divide,))


def _integer_division(divide, name):
    """divide, raising for an integer divisor of 0 where NumPy gives 0: TensorFlow's
    InvalidArgumentError, which is also Python's ZeroDivisionError."""
    def impl(x, y):
        if y.dtype.kind in "iu" and not np.all(y):
            raise ZeroDivisionArgumentError(f"{name}: integer division by zero")
        return divide(x, y)

    return impl


def _integer_result(x, y, out):
    """raises: integer division and power are checked (arrays' helpers), float not."""
    return out.dtype.kind in "iu"


def _checked_integer(helper):
    """emit_for: compiled integer division calls arrays' helper, which raises for a
    divisor of 0 as eager does; float division stays an unchecked operator."""
    return lambda x, y, out: f"arrays.{helper}(x, y)" if _integer_result(x, y, out) else None


floordiv_p = elementwise("floordiv", _integer_division(np.floor_divide, "floordiv"), "x // y",
                         nondiff=True, args="x y", kinds="fiu", numpy=(np.floor_divide,),
                         emit_for=_checked_integer("floordiv"), raises=_integer_result)


def _floor_mod(x, y):
    """TensorFlow's floor modulo: fmod(x, y), moved by y where its sign is not y's. NumPy's
    np.mod gives a zero y's sign (-0. % 3. is 0.), TensorFlow keeps fmod's (-0.)."""
    if x.dtype.kind != "f":
        return np.mod(x, y)
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


mod_p = elementwise("mod", _integer_division(_floor_mod, "mod"),
                    "np.fmod(x, y) + y if np.fmod(x, y) != 0 and (np.fmod(x, y) < 0) != (y < 0)"
                    " else np.fmod(x, y)",
                    vjp=lambda g, out, x, y: (g, -g * floor(x / y)), kinds="fiu",
                    numpy=(np.remainder,), emit_for=_checked_integer("mod"),
                    raises=_integer_result)


def _pow_vjp(g, out, x, y):
    # d/dy x**y = out * log(x), log(x) taken as 0 where x <= 0: TensorFlow's _PowGrad, so
    # NaN where out is (x < 0 with a fractional y) and where g or out is inf. Made only
    # where y needs a gradient: mostly it is a constant.
    def exponent():
        positive = x > 0
        return g * out * where(positive, log(where(positive, x, 1)), 0)

    # x ** 0 is 1 at every x (C's pow: at 0, inf and NaN too), so an exponent of 1 takes no
    # power: forward mode differentiates this VJP again (hvp), and each x ** 0 was a pow
    # an element.
    if type(y) is Tensor and y._array.ndim == 0 and y._array == 1:
        return g * y, exponent
    return g * y * x ** (y - 1), exponent


def _power(x, y):
    """np.power, as C's pow (TensorFlow's kernel, and the compiled x ** y) at -inf and -0.:
    NumPy takes x ** 0.5 for a one-element exponent as sqrt(x), NaN at -inf where pow gives
    inf, and -0. at -0. where pow gives 0. (adding 0. makes -0. 0. and leaves the rest).
    An integer to a negative power raises, as NumPy's does, compiled too."""
    if np.result_type(x, y).kind in "iu" and np.any(y < 0):
        raise ValueArgumentError("pow: integers to negative integer powers are not allowed")
    out = np.power(x, y)
    if y.size == 1 and y.dtype.kind == "f" and y.item() == 0.5:
        out = np.where(np.isneginf(x), np.inf, out) + 0.0
    return out


def _power_emit(x, y, out):
    """An integer power checks its exponent (arrays.power); a float base takes a strong
    integer exponent as a float, C's pow (Numba's float ** int divides: 0. ** -1 raised
    ZeroDivisionError where eager gives inf)."""
    if _integer_result(x, y, out):
        return "arrays.power(x, y)"
    return f"x ** np.{out.dtype.name}(y)" if y.dtype.kind in "iu" and not y.weak else None


pow_p = elementwise("pow", _power, "x ** y", vjp=_pow_vjp, units=((1, 1),), kinds="fiu",
                    numpy=(np.power,), emit_for=_power_emit, raises=_integer_result)


def _zeros(x):
    """A zero cotangent for x, for ops whose gradient is zero rather than none."""
    return ZERO


def _select_vjp(mask_fn):
    def vjp(g, out, x, y):
        mask = mask_fn(x, y)
        return where(mask, g, 0), where(mask, 0, g)

    return vjp


# Ties send the whole gradient to x, as TensorFlow does; their value is x too, as
# TensorFlow's (maximum(-0., 0.) is -0., where np.maximum gives 0.), and NaN wins.
def _of_integers(form):
    """emit_for of maximum and minimum: integers' builtin max or min, a select that LLVM
    reads (a loop's trip count through the general form's branches made a nested loop
    3x slower: benchmarks/README.md, "x[i, j]'s gradient")."""
    return lambda x, y, out: form if out.dtype.kind in "iu" else None


maximum_p = elementwise("maximum", lambda x, y: np.where((x < y) | np.isnan(y), y, x),
                        "y if x < y or y != y else x", emit_for=_of_integers("max(x, y)"),
                        vjp=_select_vjp(lambda x, y: x >= y), kinds="fiu", numpy=(np.maximum,))
minimum_p = elementwise("minimum", lambda x, y: np.where((y < x) | np.isnan(y), y, x),
                        "y if y < x or y != y else x", emit_for=_of_integers("min(x, y)"),
                        vjp=_select_vjp(lambda x, y: x <= y), kinds="fiu", numpy=(np.minimum,))

# ----- comparisons and logic (no gradient) -----

equal_p = elementwise("equal", np.equal, "x == y", nondiff=True, out_dtype="bool", args="x y",
                      numpy=(np.equal,))
not_equal_p = elementwise("not_equal", np.not_equal, "x != y", nondiff=True, out_dtype="bool",
                          args="x y", numpy=(np.not_equal,))
less_p = elementwise("less", np.less, "x < y", nondiff=True, out_dtype="bool", args="x y",
                     kinds="fiu", numpy=(np.less,))
less_equal_p = elementwise("less_equal", np.less_equal, "x <= y", nondiff=True,
                           out_dtype="bool", args="x y", kinds="fiu", numpy=(np.less_equal,))
greater_p = elementwise("greater", np.greater, "x > y", nondiff=True, out_dtype="bool",
                        args="x y", kinds="fiu", numpy=(np.greater,))
greater_equal_p = elementwise("greater_equal", np.greater_equal, "x >= y", nondiff=True,
                              out_dtype="bool", args="x y", kinds="fiu", numpy=(np.greater_equal,))
logical_and_p = elementwise("logical_and", np.logical_and, "x and y", nondiff=True,
                            out_dtype="bool", args="x y", kinds="b")
logical_or_p = elementwise("logical_or", np.logical_or, "x or y", nondiff=True,
                           out_dtype="bool", args="x y", kinds="b")
logical_not_p = elementwise("logical_not", np.logical_not, "not x", nondiff=True,
                            out_dtype="bool", args="x", kinds="b")
bitwise_and_p = elementwise("bitwise_and", np.bitwise_and, "x & y", nondiff=True, args="x y",
                            kinds="iu")
bitwise_or_p = elementwise("bitwise_or", np.bitwise_or, "x | y", nondiff=True, args="x y",
                           kinds="iu")
bitwise_xor_p = elementwise("bitwise_xor", np.bitwise_xor, "x ^ y", nondiff=True, args="x y",
                            kinds="iu")
invert_p = elementwise("invert", np.invert, "~x", nondiff=True, args="x", kinds="iu")
is_finite_p = elementwise("is_finite", np.isfinite, "np.isfinite(x)", nondiff=True,
                          out_dtype="bool", args="x", numpy=(np.isfinite,))
is_nan_p = elementwise("is_nan", np.isnan, "np.isnan(x)", nondiff=True, out_dtype="bool",
                       args="x", numpy=(np.isnan,))
is_inf_p = elementwise("is_inf", np.isinf, "np.isinf(x)", nondiff=True, out_dtype="bool",
                       args="x", numpy=(np.isinf,))

# ----- unary -----

negative_p = elementwise("negative", np.negative, "-x", vjp=lambda g, out, x: (-g,), kinds="fiu",
                         numpy=(np.negative,))
# vecmath.exp and .tanh (in exp, tanh, sigmoid): polynomials that vectorize, where np.exp
# and np.tanh in a Numba loop are one libm call an element. (softplus keeps libm's exp: its
# log1p is a libm call, so its loops do not vectorize, and libm's exp is then faster.)
exp_p = elementwise("exp", np.exp, "np.exp(x)", vector_emit="vecmath.exp(x)", kinds="f",
                    vjp=lambda g, out, x: (g * out,), expensive=True, numpy=(np.exp,))
# log's and log1p's VJPs multiply by reciprocal(), as TensorFlow's do, so that their second
# derivatives take reciprocal_grad's rule (0 where the upstream gradient is 0).
log_p = elementwise("log", np.log, "np.log(x)", kinds="f",
                    vjp=lambda g, out, x: (g * reciprocal(x),), expensive=True, numpy=(np.log,))
log1p_p = elementwise("log1p", np.log1p, "np.log1p(x)", kinds="f",
                      vjp=lambda g, out, x: (g * reciprocal(1 + x),), expensive=True,
                      numpy=(np.log1p,))
expm1_p = elementwise("expm1", np.expm1, "np.expm1(x)", kinds="f",
                      vjp=lambda g, out, x: (g * (out + 1),), expensive=True, numpy=(np.expm1,))
sqrt_p = elementwise("sqrt", np.sqrt, "np.sqrt(x)", kinds="f",
                     vjp=lambda g, out, x: (sqrt_grad(out, g),), expensive=True, numpy=(np.sqrt,))
# sqrt's VJP, TensorFlow's SqrtGrad: dy * 0.5 / y, and 0 wherever dy is 0, even at y = 0
# or NaN (x <= 0), so that where(x > 0, sqrt(x), 0) has a finite gradient everywhere. Its
# own VJP is TensorFlow's SqrtGradGrad, which has no such rule (a where() in sqrt's VJP
# would also zero the second derivative wherever dy is 0).
sqrt_grad_p = elementwise(
    "sqrt_grad", lambda y, dy: np.where(dy == 0, 0, dy * 0.5 / y),
    "dy * 0 if dy == 0 else dy * 0.5 / y", kinds="f",
    vjp=lambda g, out, y, dy: (-g / y * out, 0.5 * g / y))
reciprocal_p = elementwise("reciprocal", lambda x: 1 / x, "1 / x", kinds="f",
                          vjp=lambda g, out, x: (reciprocal_grad(out, g),), numpy=(np.reciprocal,))
# reciprocal's VJP, TensorFlow's ReciprocalGrad: -y * y * dy, and 0 wherever dy is 0 (as
# sqrt_grad), so where(x > 0, 1 / x, 0) has a finite gradient at 0. Its VJP is
# TensorFlow's ReciprocalGradGrad.
reciprocal_grad_p = elementwise(
    "reciprocal_grad", lambda y, dy: np.where(dy == 0, 0, -y * y * dy),
    "dy * 0 if dy == 0 else -y * y * dy", kinds="f",
    vjp=lambda g, out, y, dy: (g * -2 * dy * y, reciprocal_grad(y, g)))
sin_p = elementwise("sin", np.sin, "np.sin(x)", kinds="f",
                    vjp=lambda g, out, x: (g * cos(x),), expensive=True, numpy=(np.sin,))
cos_p = elementwise("cos", np.cos, "np.cos(x)", kinds="f",
                    vjp=lambda g, out, x: (-g * sin(x),), expensive=True, numpy=(np.cos,))
tan_p = elementwise("tan", np.tan, "np.tan(x)", kinds="f",
                    vjp=lambda g, out, x: (g * (1 + out * out),), expensive=True, numpy=(np.tan,))
tanh_p = elementwise("tanh", np.tanh, "np.tanh(x)", vector_emit="vecmath.tanh(x)", kinds="f",
                     vjp=lambda g, out, x: (g * (1 - out * out),), expensive=True, numpy=(np.tanh,))
sigmoid_p = elementwise("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + np.exp(-x))",
                        vector_emit="1 / (1 + vecmath.exp(-x))",
                        kinds="f", vjp=lambda g, out, x: (g * out * (1 - out),), expensive=True)
# log(1 + e^x) written so that neither branch overflows.
softplus_p = elementwise("softplus", lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0),
                         "np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)", kinds="f",
                         vjp=lambda g, out, x: (g * sigmoid(x),), expensive=True)
# x / (1 + |x|), NaN at an infinity, with TensorFlow's SoftsignGrad as its VJP: written as
# the quotient's derivative it cancels at large |x| and is NaN at an infinity (TF: 0).
softsign_p = elementwise("softsign", lambda x: x / (1 + np.abs(x)), "x / (1 + np.abs(x))",
                         kinds="f", vjp=lambda g, out, x: (g / square(1 + abs(x)),))
# max(x, 0) keeping x where x is not below 0: relu(-0.) is -0., as TensorFlow's.
relu_p = elementwise("relu", lambda x: np.where(x < 0, 0, x), "0 if x < 0 else x",
                     vjp=lambda g, out, x: (relu_grad(g, x),), kinds="fiu")
# relu's VJP, TensorFlow's ReluGrad: dy * (x > 0), so a NaN or inf dy gives NaN even where
# x <= 0. Its own gradient wrt x is zero (not None), so relu has a second derivative.
relu_grad_p = elementwise("relu_grad", lambda dy, x: dy * (x > 0), "dy if x > 0 else dy * 0",
                          vjp=lambda g, out, dy, x: (relu_grad(g, x), _zeros(x)))
abs_p = elementwise("abs", np.abs, "np.abs(x)", vjp=lambda g, out, x: (g * sign(x),),
                    kinds="fiu", numpy=(np.absolute,))
# A zero gradient, as TensorFlow's (so abs has a second derivative, zero).
sign_p = elementwise("sign", np.sign, "np.sign(x)", vjp=lambda g, out, x: (_zeros(x),),
                     kinds="fiu", numpy=(np.sign,),  # Numba's of a uint past int's max: -1,
                     emit_for=lambda x, out: f"np.{out.dtype.name}(x != 0)"  # of -0.0: -0.0
                     if out.dtype.kind == "u" else "np.sign(x) + 0.0" if out.dtype.kind == "f"
                     else None)
floor_p = elementwise("floor", np.floor, "np.floor(x)", nondiff=True, args="x", numpy=(np.floor,))
ceil_p = elementwise("ceil", np.ceil, "np.ceil(x)", nondiff=True, args="x", kinds="f",
                     numpy=(np.ceil,))
# Half to even; an integer is as it is (np.rint's float64 lost int64's 2**53 + 1: helper 130).
round_p = elementwise("round", lambda x: x.copy() if x.dtype.kind in "iub" else np.rint(x),
                      "np.rint(x)", nondiff=True, args="x", numpy=(np.rint,),
                      emit_for=lambda x, out: "x" if out.dtype.kind in "iub" else None)
stop_gradient_p = elementwise("stop_gradient", lambda x: x, "x", nondiff=True, args="x",
                              same_aval_is_identity=True, unrecorded=True)
# A copy, which a tape can watch apart from its input (tf.identity).
identity_p = elementwise("identity", np.copy, "x", vjp=lambda g, out, x: (g,),
                         same_aval_is_identity=True)

# ----- selection and casting -----

where_p = elementwise("where", np.where, "x if c else y",
                      vjp=lambda g, out, c, x, y: (None, where(c, g, 0), where(c, 0, g)))


def _cast_shape(x, *, dtype):
    return Aval(x.shape, dtype)


cast_p = primitive("cast", "elementwise", lambda x, dtype: x.astype(dtype), _cast_shape,
                   "dtype(x)",
                   vjp=lambda g, out, x, dtype: (cast(g, x.dtype),), same_aval_is_identity=True)


def _fit_python_int(x, *, dtype, before, after):
    bad = out_of_range(x, dtype)
    if bad is not None:
        raise DtypeArgumentError(f"{before}{bad}{after}")
    return x.astype(dtype)


def _fit_emit(x, out, *, dtype, before, after):
    """arrays.python_int_in: the bounds of dtype that int64 holds, and the message on one
    line (astor would indent a literal's later lines); user_line has made the user's
    text safe to quote."""
    info = np.iinfo(dtype)
    low, high = max(int(info.min), -2**63), min(int(info.max), 2**63 - 1)
    return (f"dtype(arrays.python_int_in(x, {low}, {high}, {before!r}, "
            f"{after.replace(chr(10) + '  ', ' ')!r}))")


# A traced Python int (a loop's carry, held as int64) met by a narrower integer dtype:
# checked when the kernel runs, as the eager op checks it (core/primitive.py binds it).
python_int_in_p = primitive(
    "python_int_in", "elementwise", _fit_python_int,
    lambda x, *, dtype, before, after: Aval(x.shape, dtype), "dtype(x)", nondiff=True,
    emit_for=_fit_emit, raises=True)
_tensor.FIT_PYTHON_INT = lambda v, dtype, before, after: python_int_in_p.bind(
    v, dtype=dtype, before=before, after=after)


# ----- wrappers (TensorFlow names) -----


def add(x, y, name=None):
    """x + y elementwise, with NumPy broadcasting (tf.math.add)."""
    trace = getattr(x, "_trace", None)
    folded = trace.fold_add(x, y) if trace is not None else None
    return add_p.bind(x, y) if folded is None else folded


def add_n(inputs, name=None):
    """The sum of a list of tensors of one shape and dtype, added in order (tf.math.add_n:
    no broadcasting, unlike add). Python numbers among them take the tensors' dtype, as
    add's do."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"add_n: inputs must be a list of at least one tensor; got "
                         f"{type(inputs).__name__}")
    values = [as_value(x) for x in inputs]
    strong = {np.dtype(v.aval.dtype) for v in values if not v.aval.weak}
    if len(strong) == 1:
        values = [cast(v, *strong) if v.aval.weak else v for v in values]
    first = values[0].aval  # compared, not hashed: a traced size hashes as its value, guarded
    if any(v.aval.shape != first.shape or v.aval.dtype != first.dtype for v in values):
        raise ShapeArgumentError("add_n: inputs must have one shape and dtype; got " + ", ".join(
            f"{np.dtype(v.aval.dtype).name}{list(v.aval.shape)}" for v in values))
    total = values[0]
    for v in values[1:]:
        total = add(total, v)
    return total


def subtract(x, y, name=None):
    """x - y elementwise (tf.math.subtract)."""
    trace = getattr(x, "_trace", None)
    folder = getattr(trace, "folder", None)  # a chain of subtractions (reroll.py)
    folded = folder(trace, x, y, subtract_p) if folder is not None else None
    return subtract_p.bind(x, y) if folded is None else folded


def multiply(x, y, name=None):
    """x * y elementwise (tf.math.multiply)."""
    return multiply_p.bind(x, y)


def divide(x, y, name=None):
    """x / y elementwise (tf.math.divide, tf.math.truediv); integers divide as
    TensorFlow's truediv casts them: 8- and 16-bit ones in float32, wider ones in float64."""
    x, y = as_value(x, "divide"), as_value(y, "divide")
    dtype = promote([x.aval, y.aval])[0]
    if dtype.kind in "iu" and dtype.itemsize <= 2:
        x, y = cast(x, np.float32), cast(y, np.float32)
    return divide_p.bind(x, y)


truediv = divide


def multiply_no_nan(x, y, name=None):
    """x * y for floats, 0 wherever y is 0, even where x is inf or NaN
    (tf.math.multiply_no_nan)."""
    return multiply_no_nan_p.bind(x, y)


def float_operands(op, *operands):
    """The operands as values of their common dtype, which must be a float's, as a
    float-only primitive's (TensorFlow's kernels for composites such as divide_no_nan and
    xdivy take floats only); DtypeArgumentError otherwise."""
    values = [as_value(v, op) for v in operands]
    avals = [v.aval for v in values]
    dtype, weak = promote(avals)
    try:  # Python numbers alone count by their common dtype (divide_no_nan(3.0, 0))
        check_kinds([Aval((), dtype, True)] if weak else avals, dtype, "f")
    except TypeError as err:
        raise argument_error(op, values, err) from None
    if weak:  # Python numbers alone stay weak: divide_no_nan(3.0, 0) is float32's
        return values
    return [v if v.aval.dtype == dtype else cast(v, dtype) for v in values]


def divide_no_nan(x, y, name=None):
    """x / y, 0 wherever y is 0 (tf.math.divide_no_nan); its gradients are 0 there too (y
    is replaced by 1 before dividing, so no inf or NaN reaches them). Integers divide as
    divide's do, in a float (TensorFlow 2.21's: helper 130)."""
    x, y = as_value(x, "divide_no_nan"), as_value(y, "divide_no_nan")
    if promote([x.aval, y.aval])[0].kind not in "iu":
        x, y = float_operands("divide_no_nan", x, y)
    zero = equal(y, 0)
    return where(zero, 0, divide(x, where(zero, 1, y)))


def floordiv(x, y, name=None):
    """x // y elementwise; no gradient (tf.math.floordiv).

    Floats give floor(x / y), as TensorFlow's kernel: 7.0 // -1.4 is -5.0, where NumPy's
    floor_divide (which np.floor_divide on a tensor keeps) corrects x / y by fmod and
    gives -6.0."""
    x, y = as_value(x, "floordiv"), as_value(y, "floordiv")
    if promote([x.aval, y.aval])[0].kind == "f":
        return floor(divide(x, y))
    return floordiv_p.bind(x, y)


def mod(x, y, name=None):
    """x % y elementwise, with the sign of y (tf.math.floormod)."""
    return mod_p.bind(x, y)


def pow(x, y, name=None):
    """x ** y elementwise (tf.math.pow)."""
    return pow_p.bind(x, y)


def maximum(x, y, name=None):
    """The larger of x and y elementwise (tf.math.maximum)."""
    return maximum_p.bind(x, y)


def minimum(x, y, name=None):
    """The smaller of x and y elementwise (tf.math.minimum)."""
    return minimum_p.bind(x, y)


def equal(x, y, name=None):
    """x == y elementwise, broadcast, as bools (tf.math.equal); no gradient."""
    return equal_p.bind(x, y)


def not_equal(x, y, name=None):
    """x != y elementwise, broadcast, as bools (tf.math.not_equal); no gradient."""
    return not_equal_p.bind(x, y)


def less(x, y, name=None):
    """x < y elementwise, broadcast, as bools (tf.math.less); no gradient."""
    return less_p.bind(x, y)


def less_equal(x, y, name=None):
    """x <= y elementwise, broadcast, as bools (tf.math.less_equal); no gradient."""
    return less_equal_p.bind(x, y)


def greater(x, y, name=None):
    """x > y elementwise, broadcast, as bools (tf.math.greater); no gradient."""
    return greater_p.bind(x, y)


def greater_equal(x, y, name=None):
    """x >= y elementwise, broadcast, as bools (tf.math.greater_equal); no gradient."""
    return greater_equal_p.bind(x, y)


def logical_and(x, y, name=None):
    """x and y elementwise, on bools (tf.math.logical_and)."""
    return logical_and_p.bind(x, y)


def logical_or(x, y, name=None):
    """x or y elementwise, on bools (tf.math.logical_or)."""
    return logical_or_p.bind(x, y)


def logical_xor(x, y, name=None):
    """x xor y elementwise, on bools (tf.math.logical_xor: (x or y) and not (x and y))."""
    x, y = as_value(x), as_value(y)
    if x.aval.dtype != np.bool_ or y.aval.dtype != np.bool_:
        raise DtypeArgumentError(f"logical_xor({x.aval.short()}, {y.aval.short()}): expects "
                                 "bool inputs")
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


def logical_not(x, name=None):
    """not x elementwise, on bools (tf.math.logical_not)."""
    return logical_not_p.bind(x)


def bitwise_and(x, y, name=None):
    """x & y on integers, bit by bit (tf.bitwise.bitwise_and)."""
    return bitwise_and_p.bind(x, y)


def bitwise_or(x, y, name=None):
    """x | y on integers, bit by bit (tf.bitwise.bitwise_or)."""
    return bitwise_or_p.bind(x, y)


def bitwise_xor(x, y, name=None):
    """x ^ y on integers, bit by bit (tf.bitwise.bitwise_xor)."""
    return bitwise_xor_p.bind(x, y)


def invert(x, name=None):
    """~x on integers, bit by bit (tf.bitwise.invert)."""
    return invert_p.bind(x)


def is_finite(x, name=None):
    """Whether each element is neither infinite nor NaN, as bools (tf.math.is_finite)."""
    return is_finite_p.bind(x)


def is_nan(x, name=None):
    """Whether each element is NaN, as bools (tf.math.is_nan)."""
    return is_nan_p.bind(x)


def is_inf(x, name=None):
    """Whether each element is infinite, as bools (tf.math.is_inf)."""
    return is_inf_p.bind(x)


def negative(x, name=None):
    """-x elementwise (tf.math.negative)."""
    return negative_p.bind(x)


def exp(x, name=None):
    """e ** x elementwise (tf.math.exp)."""
    return exp_p.bind(x)


def log(x, name=None):
    """The natural logarithm elementwise (tf.math.log): -inf at 0, NaN below it."""
    return log_p.bind(x)


def log1p(x, name=None):
    """log(1 + x) elementwise, exact for small x (tf.math.log1p)."""
    return log1p_p.bind(x)


def expm1(x, name=None):
    """e ** x - 1 elementwise, exact for small x (tf.math.expm1)."""
    return expm1_p.bind(x)


def sqrt(x, name=None):
    """The square root elementwise (tf.math.sqrt): NaN below 0."""
    return sqrt_p.bind(x)


def reciprocal(x, name=None):
    """1 / x for floats (tf.math.reciprocal); its gradient is 0 where the upstream one is."""
    return reciprocal_p.bind(x)


def reciprocal_grad(y, dy, name=None):
    """reciprocal's gradient -y * y * dy, 0 where dy is 0 (TensorFlow's ReciprocalGrad)."""
    return reciprocal_grad_p.bind(y, dy)


def sin(x, name=None):
    """The sine elementwise, of radians (tf.math.sin)."""
    return sin_p.bind(x)


def cos(x, name=None):
    """The cosine elementwise, of radians (tf.math.cos)."""
    return cos_p.bind(x)


def tan(x, name=None):
    """The tangent elementwise, of radians (tf.math.tan)."""
    return tan_p.bind(x)


def tanh(x, name=None):
    """The hyperbolic tangent elementwise (tf.math.tanh, tf.nn.tanh)."""
    return tanh_p.bind(x)


def sigmoid(x, name=None):
    """1 / (1 + e ** -x) elementwise (tf.math.sigmoid, tf.nn.sigmoid)."""
    return sigmoid_p.bind(x)


def softsign(features, name=None):
    """x / (1 + |x|) elementwise (tf.nn.softsign), NaN at an infinity, where its gradient
    is TensorFlow's, 0."""
    return softsign_p.bind(features)


def softplus(x, name=None):
    """log(1 + e ** x) elementwise, without overflow (tf.math.softplus, tf.nn.softplus)."""
    return softplus_p.bind(x)


def relu(x, name=None):
    """max(x, 0); its gradient at 0 is 0, as TensorFlow's."""
    return relu_p.bind(x)


def sqrt_grad(y, dy, name=None):
    """sqrt's gradient dy * 0.5 / y, 0 where dy is 0 (TensorFlow's raw_ops.SqrtGrad)."""
    return sqrt_grad_p.bind(y, dy)


def relu_grad(dy, x, name=None):
    """dy where x > 0, else dy * 0 (TensorFlow's ReluGrad)."""
    return relu_grad_p.bind(dy, x)


def abs(x, name=None):
    """|x| elementwise (tf.math.abs); its gradient is sign(x) times the upstream one."""
    return abs_p.bind(x)


def sign(x, name=None):
    """-1, 0 or 1 by the sign of each element (tf.math.sign); its gradient is zero."""
    return sign_p.bind(x)


def floor(x, name=None):
    """The largest integer not above x, elementwise (tf.math.floor); its gradient is None."""
    return floor_p.bind(x)


def ceil(x, name=None):
    """The smallest integer ≥ x, elementwise, for floats; no gradient (tf.math.ceil)."""
    return ceil_p.bind(x)


def round(x, name=None):
    """Rounds half to even, as TensorFlow and NumPy do; no gradient."""
    return round_p.bind(x)


def stop_gradient(x, name=None):
    """x, through which no gradient flows (tf.stop_gradient)."""
    return stop_gradient_p.bind(x)


def identity(input, name=None):
    """A new tensor equal to input; gradients flow through it (tf.identity)."""
    return identity_p.bind(input)


def where(condition, x=None, y=None, name=None):
    """x where condition is true, else y, broadcasting all three (tf.where)."""
    if x is None or y is None:
        raise TypeError("where: srcxform needs both x and y (the one-argument form returns "
                        "data-dependent shapes)")
    return where_p.bind(condition, x, y)


def cast(x, dtype, name=None):
    """x converted to dtype; a cast to an integer type carries no gradient (tf.cast)."""
    from srcxform.core.dtypes import as_dtype

    return cast_p.bind(x, dtype=as_dtype(dtype))


def square(x, name=None):
    """x * x (tf.math.square)."""
    return multiply(x, x)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t limited to [clip_value_min, clip_value_max] (tf.clip_by_value): TensorFlow's
    max(min(t, max), min), so where min > max every element is min."""
    return maximum(minimum(t, clip_value_max), clip_value_min)
