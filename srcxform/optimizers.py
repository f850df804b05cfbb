"""Optimizers with Keras's update rules: SGD (momentum, Nesterov), Adam, AdamW, RMSprop,
Adagrad and Nadam, with Keras 3's weight decay and gradient clipping.

Every piece of state is a Variable: the step count (`iterations`, int64), the learning
rate (float64, cast to each variable's dtype when used) and the per-variable slots
(moments, velocities). So one optimizer works in both faces of srcxform:

- eagerly, `apply_gradients` updates Variables in place, as TensorFlow does;
- inside a `@srcxform.differentiable` training step, its reads and assignments are
  traced like any other Variable use: the update is generated into the same fused
  kernel as the forward pass and the adjoint, and the new values of the parameters, the
  slots and `iterations` are written back after the call.

Slots are created lazily, on the first `apply_gradients` for a variable, as zeros of
its shape and dtype. That also works while tracing (creating a Variable is plain Python;
only reading and assigning it is traced), so the first call of a compiled step builds
the state and every later call reuses it.

Hyperparameters are converted to the variable's dtype before use (as Keras casts them),
so a float64 model is updated in float64 arithmetic throughout. (Keras's TensorFlow
backend rounds some of them through float32 first, as tf.cast(0.999, tf.float64) does,
so its float64 updates differ from these from about the eighth digit; float32 updates
agree.)

Every optimizer takes Keras's `weight_decay`, `clipnorm`, `clipvalue` and
`global_clipnorm` (at most one of the three clips). An update first clips the gradients
(each to norm `clipnorm`; each element to [-clipvalue, clipvalue]; or all together to
global norm `global_clipnorm`, as `clip_by_global_norm`), then decays each parameter as
Keras 3 does, decoupled from the gradient: `w = w - w * weight_decay * lr`, and then
applies the optimizer's own rule to the decayed `w`.

Parameters may be given as nested structures (`apply(grads, params)` with a dict or
list), and may be plain arrays or tensors instead of Variables: then nothing is updated
in place and `apply` returns the new values in the same structure (the functional form,
for steps that pass parameters in and out whole).
"""

import contextlib

import numpy as np

from srcxform import ops as _ops
from srcxform.core import recording
from srcxform.core.errors import GradientCutWarning, user_frame, warn_once_at
from srcxform.ad.tape import GradientTape
from srcxform.core.tensor import Value, Variable
from srcxform.core.tree import (DATACLASS, DICT, NAMEDTUPLE, REGISTERED, SEQUENCE,
                                 flatten_function, tree_flatten, tree_unflatten)

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Nadam", "Optimizer", "RMSprop",
           "clip_by_global_norm", "clip_by_norm", "global_norm"]


def _const(x, dtype):
    """A hyperparameter as a constant of `dtype` (a strong scalar: no float32 detour)."""
    return _ops.constant(np.asarray(x, dtype=dtype))


class Optimizer:
    """The base class: state as Variables, `apply_gradients`, `apply`, `minimize`.

    Subclasses define `_build_slots(key, param)` (create the slots one parameter needs)
    and `_update(grad, w, lr, key)` (return the parameter's new value from its current
    value `w`, assigning the slots), written in srcxform ops so that they trace, and list
    in `_HYPERPARAMETERS` the attributes their updates read (a compiled step is traced
    again when one changes).
    """

    _HYPERPARAMETERS: tuple[str, ...] = ()
    _SHARED_HYPERPARAMETERS = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm")

    def __init__(self, learning_rate, name, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None):
        self.name = name
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue,
                 "global_clipnorm": global_clipnorm}
        if sum(c is not None for c in clips.values()) > 1:
            raise ValueError(f"{name}: only one of `clipnorm`, `clipvalue` and "
                             f"`global_clipnorm` can be set, got "
                             + ", ".join(f"{k}={v}" for k, v in clips.items()))
        self.weight_decay = _optional_number(weight_decay, "weight_decay")
        self.clipnorm = _optional_number(clipnorm, "clipnorm")
        self.clipvalue = _optional_number(clipvalue, "clipvalue")
        self.global_clipnorm = _optional_number(global_clipnorm, "global_clipnorm")
        self._iterations = Variable(np.int64(0), trainable=False, name=f"{name}/iterations")
        if callable(learning_rate) and not isinstance(learning_rate, Value):
            self._schedule = learning_rate
            self._learning_rate = None
        else:
            self._schedule = None
            self._learning_rate = Variable(np.float64(_number(learning_rate, "learning_rate")),
                                           trainable=False, name=f"{name}/learning_rate")
        self._slots = {}  # slot name -> {key: Variable}
        self._owners = {}  # a Variable's key -> the Variable (whose copy re-keys its slots)

    # ----- state -----
    def __setstate__(self, state):
        """A copy (deepcopy, pickle) re-keys its slots by its parameters' copies: a
        Variable's copy is a Variable of its own, with its own id (helper 75: a copied
        Adam lost its moments, and restarted them silently)."""
        self.__dict__.update(state)
        keys = {key: _key(owner, None) for key, owner in self._owners.items()}
        self._owners = {keys[key]: owner for key, owner in self._owners.items()}
        self._slots = {name: {keys.get(key, key): slot for key, slot in slots.items()}
                       for name, slots in self._slots.items()}

    @property
    def iterations(self):
        """The number of updates applied (an int64 Variable, TensorFlow's `iterations`)."""
        return self._iterations

    @property
    def learning_rate(self):
        """The learning rate: a float64 Variable, or the schedule given."""
        return self._schedule if self._schedule is not None else self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if callable(value) and not isinstance(value, Value):
            self._schedule, self._learning_rate = value, None
            return
        value = _number(value, "learning_rate")
        if self._learning_rate is None:
            self._schedule = None
            self._learning_rate = Variable(np.float64(value), trainable=False,
                                           name=f"{self.name}/learning_rate")
        else:
            self._learning_rate.assign(np.float64(value))

    @property
    def variables(self):
        """The optimizer's own Variables: iterations, learning rate, then every slot."""
        found = [self._iterations]
        if self._learning_rate is not None:
            found.append(self._learning_rate)
        for slots in self._slots.values():
            found.extend(slots.values())
        return found

    def get_slot(self, var, slot_name):
        """The slot Variable `slot_name` of `var` (TensorFlow's OptimizerV2.get_slot)."""
        try:
            return self._slots[slot_name][_key(var, None)]
        except KeyError:
            raise KeyError(f"{self.name} has no slot {slot_name!r} for {_describe(var)}; "
                           f"slots: {sorted(self._slots)}") from None

    def get_slot_names(self):
        return sorted(self._slots)

    def add_slot(self, key, param, slot_name, initial_value=0.0):
        """The slot `slot_name` for a parameter, created filled with `initial_value` in
        its shape and dtype on first use (while tracing too: the values are concrete)."""
        slots = self._slots.setdefault(slot_name, {})
        slot = slots.get(key)
        shape = tuple(int(d) for d in param.shape)
        if slot is None:
            slot = Variable(np.full(shape, initial_value, dtype=param.dtype), trainable=False,
                            name=f"{self.name}/{_short_name(param)}/{slot_name}")
            slots[key] = slot
            if isinstance(param, Variable):
                self._owners[key] = param
        elif slot.shape != shape:
            raise ValueError(f"{self.name}: the {slot_name!r} state of {_describe(param)} was "
                             f"built for shape {slot.shape}, but the parameter now has shape "
                             f"{shape}; use a new optimizer for new parameters")
        return slot

    # ----- applying -----
    def apply_gradients(self, grads_and_vars, name=None):
        """Applies one update to each (gradient, variable) pair; returns `iterations`.

        Pairs whose gradient is None are skipped with a warning (Keras's rule); if every
        gradient is None this raises ValueError. The step count advances once per call.
        """
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"{self.name}.apply_gradients expects (gradient, variable) "
                                f"pairs, as zip(grads, variables) gives; got {pair!r}")
        params = [p for _, p in pairs]
        for p in params:
            if not isinstance(p, Variable):
                raise TypeError(f"{self.name}.apply_gradients updates Variables in place, "
                                f"got a {type(p).__name__}; for arrays use "
                                "new_params = optimizer.apply(grads, params)")
        self._apply([g for g, _ in pairs], params)
        return self._iterations

    def apply(self, grads, trainable_variables):
        """Applies gradients given as a structure matching `trainable_variables` (a
        Variable, array, or nested list, tuple or dict of them, e.g. what
        `tape.gradient(loss, params)` returns for `params`).

        Variables are updated in place; returns the structure with each parameter's new
        value: the Variable itself, or a Tensor for an array or tensor parameter.
        """
        param_leaves, param_tree = tree_flatten(trainable_variables)
        new = self._apply(_matched(grads, param_tree, f"{self.name}.apply", "grads"),
                          param_leaves)
        return tree_unflatten(param_tree, new)

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of `loss` (a callable, or a tensor recorded by `tape`)
        with respect to `var_list` and applies them (TensorFlow's minimize)."""
        if not callable(loss) and tape is None:
            raise ValueError("minimize: `tape` is required when a tensor loss is passed")
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if callable(var_list):
                    var_list = var_list()
                loss = loss()
        elif callable(var_list):
            var_list = var_list()
        leaves = tree_flatten(var_list)[0]
        grads = tape.gradient(loss, leaves)  # a list: a None gradient keeps its place
        why = {id(v): _why_none(tape.explain(loss, v))
               for v, g in zip(leaves, grads) if g is None}
        self._apply(grads, leaves, why)
        return self._iterations

    def _apply(self, grads, params, why=None):
        """Updates params by grads; `why`: {id(param): why its gradient is None}, for the
        warning."""
        params = [p if isinstance(p, Value) else _ops.convert_to_tensor(p) for p in params]
        keys = [_key(p, i) for i, p in enumerate(params)]
        for trace in recording.CONTEXT.traces:  # each Variable's own slots, found by it
            for p in params:
                if isinstance(p, Variable):
                    trace.rely_on_identity(p)
        missing = [p for g, p in zip(grads, params) if g is None]
        if missing and len(missing) == len(params):
            raise ValueError(f"{self.name}: no gradients provided for any variable: "
                             f"{[_describe(p) for p in params]}")
        if missing:
            reasons = "".join(f"\n  {_describe(p)}: {why[id(p)]}" for p in missing
                              if why and id(p) in why)
            warn_once_at(user_frame(), f"{self.name}: gradients do not exist for "
                         f"{[_describe(p) for p in missing]} when minimizing the loss; "
                         f"they are not updated{reasons}\n  (tape.explain(loss, variable) "
                         f"says why a gradient is None)", GradientCutWarning)
        new = list(params)
        with recording.paused():  # updates are not differentiated (TensorFlow's rule)
            # Check every pair before changing anything, so a bad one updates nothing.
            checked = []
            for g, p in zip(grads, params):
                if g is None:
                    checked.append(None)
                    continue
                if p.dtype.kind != "f":
                    raise TypeError(f"{self.name}: cannot update {_describe(p)} of dtype "
                                    f"{p.dtype}: only float parameters are trained")
                g = _ops.cast(_ops.convert_to_tensor(g), p.dtype)
                # The read's shape: symbolic while tracing, so no size is baked in.
                if g.ndim != p.ndim or tuple(g.shape) != tuple(_read(p).shape):
                    raise ValueError(f"{self.name}: gradient of shape "
                                     f"{tuple(int(d) for d in g.shape)} for {_describe(p)}")
                checked.append(g)
            for key, p in zip(keys, params):
                self._build_slots(key, p)
            lr = self._current_learning_rate()
            self._report_captured()
            checked = self._clip(checked)
            self._before_updates([p for g, p in zip(checked, params) if g is not None])
            for i, (g, p, key) in enumerate(zip(checked, params, keys)):
                if g is None:
                    continue
                # One Variable's update is atomic (as its assign_add is): from the read of
                # its value to its assign, and its slots' updates between. Its slots were
                # made after it, so their locks are taken after its own, in the order
                # tensor.Updating takes them.
                with p._update_lock() if isinstance(p, Variable) else contextlib.nullcontext():
                    p_lr = _ops.cast(lr, p.dtype)
                    w = _read(p)
                    if self.weight_decay is not None:  # Keras 3's decoupled decay, first
                        w = w - w * _const(self.weight_decay, p.dtype) * p_lr
                    value = self._update(g, w, p_lr, key)
                    if isinstance(p, Variable):
                        p.assign(value if p.constraint is None else p.constraint(value))
                    else:
                        new[i] = value
            self._iterations.assign_add(1)
        return new

    def _report_captured(self):
        """While traced: the kernel relies on the learning rate (its Variable or schedule)
        and the hyperparameters staying as they are now (captures.py)."""
        traces = recording.CONTEXT.traces
        if not traces:
            return
        for name in (("_schedule", "_learning_rate") + self._SHARED_HYPERPARAMETERS
                     + self._HYPERPARAMETERS):
            traces[-1].capture(self, name)
        if self._schedule is not None:
            traces[-1].capture(self._schedule)

    def _current_learning_rate(self):
        if self._schedule is not None:
            lr = self._schedule(self._iterations)
            # A number as float64, as a fixed rate is: float32 moved float64 parameters by
            # 0.1's float32 rounding.
            return lr if isinstance(lr, Value) else _ops.convert_to_tensor(
                np.float64(_number(lr, "learning_rate")))
        return self._learning_rate.read_value()

    def _step(self, dtype):
        """The 1-based step number of the update being applied, as a `dtype` tensor."""
        return _ops.cast(self._iterations.read_value() + 1, dtype)

    def _clip(self, grads):
        """The gradients clipped as Keras's `_clip_gradients` does (None stays None); a
        clip of 0 clips nothing, as in Keras."""
        if self.clipnorm:
            return [None if g is None else clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return clip_by_global_norm(grads, self.global_clipnorm)[0]
        if self.clipvalue:
            return [None if g is None else _ops.clip_by_value(g, -self.clipvalue,
                                                              self.clipvalue)
                    for g in grads]
        return grads

    def _before_updates(self, params):
        """Runs once per apply, before the parameters' updates (Nadam's shared state)."""

    def _build_slots(self, key, param):
        pass

    def _update(self, grad, w, lr, key):
        raise NotImplementedError

    def get_config(self):
        lr = self._learning_rate.numpy().item() if self._learning_rate is not None else None
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "clipvalue": self.clipvalue,
                "global_clipnorm": self.global_clipnorm}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "name")
        return f"<srcxform.optimizers.{type(self).__name__} {args}>"


class SGD(Optimizer):
    """Gradient descent, with optional momentum and Nesterov momentum (Keras's SGD).

    With gradient `g` and learning rate `lr`, when `momentum` is 0::

        w = w - lr * g

    when `momentum` is larger than 0 (`velocity` is a slot, starting at zeros)::

        velocity = momentum * velocity - lr * g
        w = w + velocity

    and with `nesterov=True`::

        velocity = momentum * velocity - lr * g
        w = w + momentum * velocity - lr * g
    """

    _HYPERPARAMETERS = ("momentum", "nesterov")

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="SGD"):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue,
                         global_clipnorm)
        momentum = _number(momentum, "momentum")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be a float in [0, 1], got {momentum}")
        self.momentum = momentum
        self.nesterov = bool(nesterov)

    def _build_slots(self, key, param):
        if self.momentum != 0:
            self.add_slot(key, param, "momentum")

    def _update(self, grad, w, lr, key):
        if self.momentum == 0:
            return w - grad * lr
        m = self._slots["momentum"][key]
        momentum = _const(self.momentum, w.dtype)
        m.assign(m.read_value() * momentum - grad * lr)
        if self.nesterov:
            return w + (m.read_value() * momentum - grad * lr)
        return w + m.read_value()

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam, with Keras's "epsilon hat" form (Kingma and Ba, just before section 2.1).

    With step `t` = iterations + 1 (counted from 1), slots `m` and `v` (zeros at first)::

        lr_t = lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g ** 2 - v) * (1 - beta_2)
        w = w - m * lr_t / (sqrt(v) + epsilon)

    With `amsgrad=True` a slot `v_hat = maximum(v_hat, v)` replaces `v` in the last line.
    The bias corrections are computed from the `iterations` Variable with srcxform ops,
    so a compiled step reads the step count at run time.
    """

    _HYPERPARAMETERS = ("beta_1", "beta_2", "epsilon", "amsgrad")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="Adam"):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue,
                         global_clipnorm)
        self.beta_1 = _number(beta_1, "beta_1")
        self.beta_2 = _number(beta_2, "beta_2")
        self.epsilon = _number(epsilon, "epsilon")
        self.amsgrad = bool(amsgrad)

    def _build_slots(self, key, param):
        self.add_slot(key, param, "m")
        self.add_slot(key, param, "v")
        if self.amsgrad:
            self.add_slot(key, param, "vhat")

    def _update(self, grad, w, lr, key):
        dtype = w.dtype
        one = _const(1.0, dtype)
        t = self._step(dtype)
        beta_1_power = _ops.pow(_const(self.beta_1, dtype), t)
        beta_2_power = _ops.pow(_const(self.beta_2, dtype), t)
        alpha = lr * _ops.sqrt(one - beta_2_power) / (one - beta_1_power)
        m, v = self._slots["m"][key], self._slots["v"][key]
        m.assign_add((grad - m.read_value()) * _const(1.0 - self.beta_1, dtype))
        v.assign_add((_ops.square(grad) - v.read_value()) * _const(1.0 - self.beta_2, dtype))
        v_now = v.read_value()
        if self.amsgrad:
            v_hat = self._slots["vhat"][key]
            v_hat.assign(_ops.maximum(v_hat.read_value(), v_now))
            v_now = v_hat.read_value()
        step = (m.read_value() * alpha) / (_ops.sqrt(v_now) + _const(self.epsilon, dtype))
        return w - step

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class RMSprop(Optimizer):
    """RMSprop with plain momentum, optionally centered (Keras's RMSprop).

    With slots `ms` (the mean square) and, when used, `mg` (the mean gradient, centered)
    and `mom` (momentum), all zeros at first::

        ms = rho * ms + (1 - rho) * g ** 2
        mg = rho * mg + (1 - rho) * g                    # centered only
        denominator = ms - mg ** 2 + epsilon             # centered
        denominator = ms + epsilon                       # otherwise
        increment = lr * g / sqrt(denominator)
        mom = momentum * mom + increment; w = w - mom    # momentum > 0
        w = w - increment                                # otherwise

    epsilon sits inside the square root, exactly as in Keras (and in TensorFlow's
    ApplyRMSProp kernel); defaults: rho=0.9, momentum=0.0, epsilon=1e-7.
    """

    _HYPERPARAMETERS = ("rho", "momentum", "epsilon", "centered")

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="RMSprop"):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue,
                         global_clipnorm)
        self.rho = _number(rho, "rho")
        self.momentum = _number(momentum, "momentum")
        self.epsilon = _number(epsilon, "epsilon")
        self.centered = bool(centered)

    def _build_slots(self, key, param):
        self.add_slot(key, param, "rms")
        if self.momentum > 0:
            self.add_slot(key, param, "momentum")
        if self.centered:
            self.add_slot(key, param, "mg")

    def _update(self, grad, w, lr, key):
        dtype = w.dtype
        rho, rest = _const(self.rho, dtype), _const(1.0 - self.rho, dtype)
        ms = self._slots["rms"][key]
        ms.assign(rho * ms.read_value() + rest * _ops.square(grad))
        if self.centered:
            mg = self._slots["mg"][key]
            mg.assign(rho * mg.read_value() + rest * grad)
            denominator = (ms.read_value() - _ops.square(mg.read_value())
                           + _const(self.epsilon, dtype))
        else:
            denominator = ms.read_value() + _const(self.epsilon, dtype)
        increment = (lr * grad) / _ops.sqrt(denominator)
        if self.momentum > 0:
            mom = self._slots["momentum"][key]
            mom.assign(_const(self.momentum, dtype) * mom.read_value() + increment)
            return w - mom.read_value()
        return w - increment

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


class AdamW(Adam):
    """Adam with decoupled weight decay, on by default (Keras's AdamW): each update first
    sets `w = w - w * weight_decay * lr`, then applies Adam's rule."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="AdamW"):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a float, got None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay,
                         clipnorm, clipvalue, global_clipnorm, name)


class Adagrad(Optimizer):
    """Adagrad (Keras's): a slot `accumulator`, starting at `initial_accumulator_value`::

        accumulator = accumulator + g ** 2
        w = w - lr * g / sqrt(accumulator + epsilon)
    """

    _HYPERPARAMETERS = ("initial_accumulator_value", "epsilon")

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Adagrad"):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue,
                         global_clipnorm)
        self.initial_accumulator_value = _number(initial_accumulator_value,
                                                 "initial_accumulator_value")
        self.epsilon = _number(epsilon, "epsilon")

    def _build_slots(self, key, param):
        self.add_slot(key, param, "accumulator", self.initial_accumulator_value)

    def _update(self, grad, w, lr, key):
        accumulator = self._slots["accumulator"][key]
        accumulator.assign_add(_ops.square(grad))
        denominator = _ops.sqrt(accumulator.read_value() + _const(self.epsilon, w.dtype))
        return w - (lr * grad) / denominator

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


class Nadam(Optimizer):
    """Adam with Nesterov momentum (Keras 3's Nadam, after Dozat 2015).

    With step `t` = iterations + 1, the momentum schedule
    `u(t) = beta_1 * (1 - 0.5 * 0.96 ** t)` and one Variable `u_product` shared by all
    parameters (the product of u(1) .. u(t), advanced once per update), slots `m`, `v`::

        m = m + (g - m) * (1 - beta_1)
        v = v + (g ** 2 - v) * (1 - beta_2)
        m_hat = u(t + 1) * m / (1 - u_product * u(t + 1)) + (1 - u(t)) * g / (1 - u_product)
        v_hat = v / (1 - beta_2 ** t)
        w = w - m_hat * lr / (sqrt(v_hat) + epsilon)

    `u_product` has the dtype of the first parameter updated, as Keras builds it.
    """

    _HYPERPARAMETERS = ("beta_1", "beta_2", "epsilon")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Nadam"):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue,
                         global_clipnorm)
        self.beta_1 = _number(beta_1, "beta_1")
        self.beta_2 = _number(beta_2, "beta_2")
        self.epsilon = _number(epsilon, "epsilon")
        self._u_product = None

    @property
    def variables(self):
        found = super().variables
        return found if self._u_product is None else found + [self._u_product]

    def _build_slots(self, key, param):
        self.add_slot(key, param, "m")
        self.add_slot(key, param, "v")

    def _before_updates(self, params):
        if self._u_product is None:
            self._u_product = Variable(np.ones((), dtype=params[0].dtype), trainable=False,
                                       name=f"{self.name}/u_product")
        dtype = self._u_product.dtype
        with self._u_product._update_lock():  # atomic, as every update of a Variable
            self._u_product.assign(self._u_product.read_value() * _const(self.beta_1, dtype)
                                   * self._momentum_factor(self._step(dtype)))

    def _momentum_factor(self, t):
        """1 - 0.5 * 0.96 ** t, in t's dtype: u(t) / beta_1."""
        dtype = t.dtype
        return _const(1.0, dtype) - _const(0.5, dtype) * _ops.pow(_const(0.96, dtype), t)

    def _update(self, grad, w, lr, key):
        dtype = w.dtype
        one = _const(1.0, dtype)
        beta_1, beta_2 = _const(self.beta_1, dtype), _const(self.beta_2, dtype)
        t = self._step(dtype)
        u_t = beta_1 * self._momentum_factor(t)
        u_next = beta_1 * self._momentum_factor(t + one)
        u_product = _ops.cast(self._u_product.read_value(), dtype)
        u_product_next = u_product * u_next
        m, v = self._slots["m"][key], self._slots["v"][key]
        m.assign_add((grad - m.read_value()) * (one - beta_1))
        v.assign_add((_ops.square(grad) - v.read_value()) * (one - beta_2))
        m_hat = (u_next * m.read_value() / (one - u_product_next)
                 + (one - u_t) * grad / (one - u_product))
        v_hat = v.read_value() / (one - _ops.pow(beta_2, t))
        return w - (m_hat * lr) / (_ops.sqrt(v_hat) + _const(self.epsilon, dtype))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


# ----- gradient clipping (TensorFlow's functions, which the optimizers' clips use) -----


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor in `t_list`), None
    entries skipped (tf.linalg.global_norm)."""
    squares = [_ops.reduce_sum(_ops.square(t)) for t in _present(t_list, "global_norm")]
    if not squares:
        raise ValueError("global_norm: t_list holds no tensor")
    return _ops.sqrt(_ops.reduce_sum(_ops.stack(squares)))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """The tensors of `t_list` scaled by clip_norm / max(global_norm, clip_norm), and the
    global norm (tf.clip_by_global_norm): unchanged when their global norm is at most
    clip_norm. None entries stay None. An inf or NaN norm makes every value NaN, as in
    TensorFlow."""
    _check_list(t_list, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(t_list)
    use_norm = _ops.convert_to_tensor(use_norm)
    one, clip_norm = _const(1.0, use_norm.dtype), _ops.cast(clip_norm, use_norm.dtype)
    scale = clip_norm * _ops.minimum(one / use_norm, one / clip_norm)
    scale = scale + (use_norm - use_norm)  # NaN for a norm of inf or NaN
    clipped = [None if t is None else _scaled(_ops.convert_to_tensor(t), scale)
               for t in t_list]
    return clipped, use_norm


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t scaled to L2 norm clip_norm (over `axes`, all by default) where its norm is
    larger (tf.clip_by_norm); a zero tensor stays zero with a zero gradient."""
    t = _ops.convert_to_tensor(t)
    l2sum = _ops.reduce_sum(t * t, axis=axes, keepdims=True)
    positive = l2sum > 0
    # Two wheres keep sqrt's gradient at 0 (inf) out of the adjoint.
    l2norm = _ops.where(positive, _ops.sqrt(_ops.where(positive, l2sum,
                                                       _ops.ones_like(l2sum))), l2sum)
    clip_norm = _ops.cast(clip_norm, t.dtype)
    return t * clip_norm / _ops.maximum(l2norm, clip_norm)


def _scaled(t, scale):
    return t * _ops.cast(scale, t.dtype)


def _present(t_list, op):
    _check_list(t_list, op)
    return [_ops.convert_to_tensor(t) for t in t_list if t is not None]


def _check_list(t_list, op):
    if not isinstance(t_list, (list, tuple)):
        raise TypeError(f"{op}: t_list must be a list or tuple of tensors, got "
                        f"{type(t_list).__name__}")


# ----- helpers -----


def _read(param):
    return param.read_value() if isinstance(param, Variable) else _ops.convert_to_tensor(param)


def _matched(grads, treedef, op, path):
    """The gradient for each leaf of the parameters' structure `treedef`: None where
    `grads` has None (a parameter the loss does not use, as tape.gradient gives it) for
    a leaf or a whole part. A dict's gradients are found by key, whatever their order."""
    if treedef.kind is None:
        return [grads]
    if grads is None:
        return [None] * treedef.num_leaves
    if treedef.how == DICT and isinstance(grads, dict) and set(grads) == set(treedef.keys):
        children = [(f"{path}[{k!r}]", grads[k]) for k in treedef.keys]
    elif treedef.how == SEQUENCE and isinstance(grads, (list, tuple)) and \
            len(grads) == len(treedef.children):
        children = [(f"{path}[{i}]", g) for i, g in enumerate(grads)]
    elif treedef.how in (NAMEDTUPLE, DATACLASS) and type(grads) is treedef.kind:
        children = [(f"{path}.{k}", getattr(grads, k)) for k in treedef.keys]
    elif treedef.how == REGISTERED and type(grads) is treedef.kind:
        parts = flatten_function(treedef.kind)(grads)[0]
        children = [(f"{path}[{i}]", g) for i, g in enumerate(parts)]
    else:
        leaves, tree = tree_flatten(grads)
        if tree != treedef:
            raise ValueError(f"{op}: the gradients' structure does not match the "
                             f"parameters' at {path} ({tree.num_leaves} gradients for "
                             f"{treedef.num_leaves} parameters there)")
        return leaves
    return [g for (where, grad), child in zip(children, treedef.children)
            for g in _matched(grad, child, op, where)]


def _key(param, position):
    """Slots are keyed by the Variable, or by position for array parameters (which have
    no identity of their own: pass the same structure every step)."""
    if isinstance(param, Variable):
        return ("variable", param._id)
    if position is None:
        raise KeyError("slots of array parameters are found by position, not by value")
    return ("position", position)


def _short_name(param):
    name = getattr(param, "name", None)
    return name.split(":")[0] if isinstance(name, str) else "param"


def _why_none(explanation):
    """tape.explain's reason for a None gradient, on one line."""
    cut = explanation.cut
    return explanation.kind if cut is None else \
        f"{explanation.kind}: {cut.detail} at {cut.step.where}"


def _describe(param):
    if isinstance(param, Variable):
        return f"Variable {param.name!r} of shape {param.shape}"
    shape = param.shape if hasattr(param, "shape") else np.shape(param)
    return f"a {type(param).__name__} of shape {tuple(int(d) for d in shape)}"


def _optional_number(value, what):
    return None if value is None else _number(value, what)


def _number(value, what):
    """A hyperparameter given as a Python or NumPy number, or a one-element tensor."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}") from None
