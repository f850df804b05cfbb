"""`srcxform.random`: TensorFlow's tf.random, whose draws are right in compiled functions.

A Generator's state is two int64 Variables, a key and a counter. A draw of n numbers reads
both and adds n to the counter, through the Variable machinery: a compiled function takes
them as inputs and writes the counter back, so each call draws fresh numbers, and the
stream continues across eager and compiled calls alike. The bits are Philox-4x32-10's
(srcxform.ops.random): eager and compiled draws from the same state are equal bit for bit.
The numbers are not TensorFlow's: a seed reproduces srcxform's stream, not TensorFlow's.
Draws have no gradient: to a tape they are constants (None for the generator's state).
"""

import os
import secrets
import threading
import weakref

import numpy as np

from srcxform.core import recording
from srcxform.core.aval import size
from srcxform.core.dtypes import as_dtype, float32
from srcxform.core.errors import TracingError, user_line
from srcxform.ops.elementwise import cast, where
from srcxform.ops.random import philox_p
from srcxform.ops.selection import argsort
from srcxform.ops.shape import gather, reshape, shape_argument
from srcxform.core.tensor import Tensor, Variable, as_value, eager_tensor

__all__ = ["Generator", "get_global_generator", "normal", "set_global_generator", "set_seed",
           "shuffle", "truncated_normal", "uniform"]


def __dir__():
    """tf.random's names, not the modules this one imports (PEP 562)."""
    return sorted(__all__)

_KEY_BITS = (1 << 63) - 1  # keys are non-negative int64s
_ALGORITHMS = (None, "philox", "auto_select")
# The global seed op-level seeds are mixed with before tf.random.set_seed (TensorFlow's).
_DEFAULT_GLOBAL_SEED = 87654321


def _key(seed):
    """A key from a seed: splitmix64's finalizer, so that near seeds give unrelated keys."""
    z = (int(seed) + 0x9E3779B97F4A7C15) % 2**64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 % 2**64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB % 2**64
    return (z ^ (z >> 31)) & _KEY_BITS


def _check_algorithm(alg):
    if alg not in _ALGORITHMS and str(alg).lower() not in _ALGORITHMS:
        raise ValueError(f"Generator: unknown algorithm {alg!r}; srcxform has Philox only")


# Every Generator, whose locks a forked child makes anew (_after_fork).
_GENERATORS: "weakref.WeakSet[Generator]" = weakref.WeakSet()


class Generator:
    """A random number generator whose state is carried like a Variable (tf.random.Generator).

    Inside a `@differentiable` function each call draws fresh numbers and advances the
    state, as eager calls do. Draws are constants to a tape (no gradient flows to the
    state). A draw holds a lock while it reads and advances the state, so threads may
    share a Generator; a thread's own Generator gives a deterministic stream.
    """

    def __init__(self, copy_from=None, state=None, alg=None):
        _check_algorithm(alg)
        if copy_from is not None:
            state = copy_from.state
        if state is None:
            raise ValueError("Generator: give copy_from or state, or use from_seed")
        counter, key = _counter_and_key(state)
        self._counter = Variable(np.int64(counter), trainable=False, name="rng_counter")
        self._key = Variable(np.int64(key), trainable=False, name="rng_key")
        self._lock = threading.Lock()
        self._non_deterministic = False  # from_non_deterministic_state's, until reset
        _GENERATORS.add(self)

    def __getstate__(self):  # a copy or an unpickled one: new Variables at this state
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        _GENERATORS.add(self)

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=(0, _key(seed)), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        made = cls(state=(0, secrets.randbits(63)), alg=alg)
        made._non_deterministic = True  # a global one starts anew in a forked child
        return made

    @classmethod
    def from_state(cls, state, alg=None):
        """A Generator at `state`, a (counter, key) pair as `state` gives."""
        return cls(state=state, alg=alg)

    @property
    def state(self):
        """The state now, (counter, key), as an int64 Tensor (outside compiled functions)."""
        return Tensor._new(np.array([self._counter.numpy(), self._key.numpy()], np.int64))

    @property
    def algorithm(self):
        return "philox"

    def reset(self, state):
        """Moves to `state` (a (counter, key) pair); draws from then on repeat those made
        from that state before."""
        self._non_deterministic = False
        counter, key = _counter_and_key(state)
        self._counter.assign(np.int64(counter))
        self._key.assign(np.int64(key))

    def reset_from_seed(self, seed):
        self.reset((0, _key(seed)))

    # ----- draws -----
    def _draw(self, dist, shape, dtype, op):
        shape = shape_argument(shape, op)
        with self._lock, recording.paused():  # a draw is a constant to the tapes
            counter = self._counter.read_value()
            count = size(shape)
            draw = philox_p.bind(counter, self._key.read_value(), count=count, dist=dist,
                                 dtype=dtype)
            self._counter.assign(counter + count)  # after a draw that did not raise
        return reshape(draw, shape)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        """Normal values (tf.random.Generator.normal)."""
        dtype = _float(dtype, "normal")
        return _scaled(self._draw("normal", shape, dtype, "normal"),
                       *_params((stddev, mean), dtype, "normal"))

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        """Normal values within two standard deviations of the mean: those outside are
        drawn again (tf.random.Generator.truncated_normal)."""
        dtype = _float(dtype, "truncated_normal")
        return _scaled(self._draw("truncated_normal", shape, dtype, "truncated_normal"),
                       *_params((stddev, mean), dtype, "truncated_normal"))

    def uniform(self, shape, minval=0, maxval=None, dtype=float32, name=None):
        """Uniform values in [minval, maxval) (tf.random.Generator.uniform): for floats
        maxval defaults to 1; integer dtypes (int32, int64) need maxval, and give
        minval + (random bits mod (maxval - minval)): 63 bits, or 64 for an int64 range
        wider than 2**63."""
        dtype = as_dtype(dtype)
        if dtype.kind == "f":
            unit = self._draw("uniform", shape, dtype, "uniform")
            low, high = _params((minval, 1 if maxval is None else maxval), dtype, "uniform")
            return _scaled(unit, high - low, low)
        if dtype not in (np.int32, np.int64):
            raise TypeError(f"uniform: dtype must be a float or int32/int64, got {dtype.name}")
        if maxval is None:
            raise ValueError("uniform: an integer dtype needs maxval (TensorFlow's rule)")
        low, high = (as_value(v, "uniform") for v in (minval, maxval))
        if any(v.dtype.kind not in "iu" or v.ndim for v in (low, high)):
            raise TypeError(f"uniform: an integer draw's minval and maxval must be integer "
                            f"scalars, got {low.aval.short()} and {high.aval.short()}")
        info = np.iinfo(dtype)
        for v in (low, high):  # TensorFlow converts them to the draw's dtype, or raises
            if not v.aval.weak and not np.can_cast(v.dtype, dtype) or eager_tensor(v) and \
                    not info.min <= int(v._array) <= info.max:
                shown = int(v._array) if eager_tensor(v) and v.aval.weak else v.aval.short()
                raise TypeError(f"uniform: the bounds of an {dtype.name} draw must be "
                                f"{dtype.name} values, got {shown}")
        if eager_tensor(low) and eager_tensor(high) and high._array <= low._array:
            raise ValueError(f"uniform: need minval < maxval, got [{low._array}, {high._array})")
        # The range as unsigned (maxval - minval wrapped in int32 or int64); an empty one,
        # known only at run time, is 0: its mod raises, as TensorFlow does.
        unsigned = [cast(cast(v, np.int64), np.uint64) for v in (low, high)]
        span = where(high > low, unsigned[1] - unsigned[0], np.uint64(0))
        bits = self._draw("bits", shape, np.dtype(np.uint64), "uniform")
        offset = where(span > np.uint64(2**63), bits % span, bits // np.uint64(2) % span)
        return cast(cast(unsigned[0] + offset, np.int64), dtype)

    def split(self, count=1):
        """`count` new Generators, keyed by draws from this one (eager only)."""
        if recording.CONTEXT.traces:
            raise TracingError(f"{user_line()}\n  Generator.split inside a compiled function: "
                               "a new Generator is new state; split before the function")
        keys = self._draw("integers", (count,), np.dtype(np.int64), "split").numpy()
        return [Generator(state=(0, key), alg=None) for key in keys]


def _counter_and_key(state):
    """A state's (counter, key): srcxform's pair, or TensorFlow's Philox state (counter's
    low and high words, key), whose counter must fit in one word here."""
    words = [int(v) for v in np.asarray(state, np.int64).ravel()]
    if len(words) == 3 and words[1] == 0:
        return words[0], words[2]
    if len(words) != 2:
        raise ValueError(f"Generator: a state is (counter, key), or TensorFlow's (counter, 0, "
                         f"key), got {state!r}")
    return words[0], words[1]


def _float(dtype, op):
    dtype = as_dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"{op}: dtype must be a float dtype, got {dtype.name}")
    return dtype


def _params(values, dtype, op):
    """A draw's mean and scale, or bounds, of its dtype (TensorFlow converts them so: a
    float64 NumPy scalar made float32 draws float64); Python numbers as they are."""
    return [v if type(v) in (int, float) else cast(as_value(v, op), dtype) for v in values]


def _is(value, number):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == number


def _scaled(x, scale, shift):
    """x * scale + shift, leaving out a scale of 1 and a shift of 0 (they change no value,
    and a compiled function drops them)."""
    if not _is(scale, 1):
        x = x * scale
    return x if _is(shift, 0) else x + shift


# ----- the global generator and op-level seeds -----

_global_generator = Generator.from_non_deterministic_state()
_global_seed = None
_seeded = {}  # op seed -> its Generator, made at first use
_seeded_lock = threading.Lock()


def _after_fork():
    """In a forked child: a global generator of a non-deterministic state (not seeded
    since) starts a stream of its own (the parent's would repeat in every worker of a
    process pool, as Python's random module avoids by the same hook), and the locks a
    parent's thread may have held are new."""
    # Made anew in place: a compiled function's entry holds the Variables' lock objects.
    _seeded_lock._at_fork_reinit()
    for generator in list(_GENERATORS):  # a draw's assign held its Variables' locks
        for lock in (generator._lock, generator._counter._lock, generator._key._lock):
            lock._at_fork_reinit()
    if _global_generator._non_deterministic:
        _global_generator.reset((0, secrets.randbits(63)))
        _global_generator._non_deterministic = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def get_global_generator():
    """The Generator the module's functions draw from where no seed is given."""
    return _global_generator


def set_global_generator(generator):
    """Replaces the global generator. Functions compiled before keep the one they read."""
    global _global_generator
    _global_generator = generator


def set_seed(seed):
    """Makes later draws reproducible (tf.random.set_seed): resets the global generator
    from `seed`, and each op-level seed's stream from (seed, op seed). They are reset in
    place, so compiled functions see the new state too."""
    global _global_seed
    if seed is None:  # TensorFlow's: draws unseeded again
        _global_seed = None
        _global_generator.reset((0, secrets.randbits(63)))
        _global_generator._non_deterministic = True
    else:
        _global_seed = int(seed)
        _global_generator.reset_from_seed(seed)
    with _seeded_lock:
        for op_seed, generator in _seeded.items():
            generator.reset_from_seed(_op_seed(op_seed))


def _op_seed(op_seed):
    global_seed = _DEFAULT_GLOBAL_SEED if _global_seed is None else _global_seed
    return _key(global_seed) ^ int(op_seed)


def _generator(seed):
    """The global generator, or the stream of an op-level seed: its draws repeat from
    run to run, and differ from call to call (TensorFlow's op seeds)."""
    if seed is None:
        return _global_generator
    with _seeded_lock:
        if seed not in _seeded:
            _seeded[seed] = Generator.from_seed(_op_seed(seed))
        return _seeded[seed]


def normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Normal values (tf.random.normal), from the global generator or seed's stream."""
    return _generator(seed).normal(shape, mean, stddev, dtype)


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (tf.random.uniform); see Generator.uniform."""
    return _generator(seed).uniform(shape, minval, maxval, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Normal values within two standard deviations of the mean (tf.random.truncated_normal)."""
    return _generator(seed).truncated_normal(shape, mean, stddev, dtype)


def shuffle(value, seed=None, name=None):
    """value with its first axis in a random order (tf.random.shuffle): the order that
    sorts one random int64 per row."""
    x = as_value(value, "shuffle")
    if x.ndim == 0:
        raise ValueError("shuffle: the value must have at least one axis, got a scalar")
    keys = _generator(seed)._draw("integers", x.aval.shape[:1], np.dtype(np.int64), "shuffle")
    return gather(x, argsort(keys))
