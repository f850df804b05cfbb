"""GradBench's `lstm` (from ADBench): the mean negative log-likelihood of a character
sequence under a stacked LSTM, `objective` and `jacobian` (its gradient in the main and
extra parameters, flattened) (evals/lstm/run.py: l in 2, 4, 6 layers, c in 1,024, 4,096,
8,192 characters, each character its bits; state and parameters uniform in [0, 1)).

evals/lstm/data/lstm_full.txt is not in the snapshot we read (a large blob), so the text
here is c printable ASCII characters from a seeded generator: 7 bits a character, as for
the English text GradBench uses. The parameters are drawn after np.random.seed(31337)
for each size (GradBench's draws continue one stream over the sizes)."""

import math

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case

SIZES = tuple((layers, chars) for layers in (2, 4, 6) for chars in (1024, 4096, 8192))


def inputs(layers: int, chars: int) -> dict:
    text = np.random.default_rng(31337).integers(32, 127, size=chars)
    bits = math.ceil(math.log2(text.max()))
    sequence = ((text[:, None] >> np.arange(bits - 1, -1, -1)) & 1).astype(np.float64)
    np.random.seed(31337)
    state = np.random.random((2 * layers, bits))
    main_params = np.random.random((2 * layers, bits * 4))
    extra_params = np.random.random((3, bits))
    return {"main_params": main_params, "extra_params": extra_params, "state": state,
            "sequence": sequence}


def cell(weight, bias, hidden, memory, x):
    """One LSTM layer's step; ADBench's gates are an elementwise product, not a matmul."""
    gates = tf.concat([x, hidden, x, hidden], 0) * weight + bias
    size = hidden.shape[0]
    forget = tf.sigmoid(gates[:size])
    ingate = tf.sigmoid(gates[size:2 * size])
    outgate = tf.sigmoid(gates[2 * size:3 * size])
    change = tf.tanh(gates[3 * size:])
    memory = memory * forget + ingate * change
    return outgate * tf.tanh(memory), memory


def objective(main_params, extra_params, state, sequence):
    """The srcxform program: the characters as one compiled loop (tf.scan), the layers
    unrolled inside it."""
    layers = state.shape[0] // 2

    def step(carry, pair):
        previous, total = carry
        x, target = pair
        x = x * extra_params[0]
        new = []
        for i in range(0, 2 * layers, 2):
            hidden, memory = cell(main_params[i], main_params[i + 1], previous[i],
                                  previous[i + 1], x)
            new += [hidden, memory]
            x = hidden
        predicted = x * extra_params[1] + extra_params[2]
        # ADBench writes Python's sum(exp(y), 2): the sum starts at 2
        normalized = predicted - tf.math.log(2.0 + tf.reduce_sum(tf.exp(predicted)))
        return tf.stack(new), total + tf.reduce_sum(target * normalized)

    start = (state, tf.constant(0.0, tf.float64))
    totals = tf.scan(step, (sequence[:-1], sequence[1:]), start)[1]
    count = (sequence.shape[0] - 1) * sequence.shape[1]
    return -totals[-1] / count


def srcxform_builder(function: str, data: dict):
    args = tuple(data[k] for k in ("main_params", "extra_params", "state", "sequence"))

    def build():
        f = tf.differentiable(objective, wrt=(0, 1), wait=True)
        if function == "objective":
            return lambda: f(*args)
        return lambda: f.grad(*args)
    return build


# ----- peer: adapted from python/gradbench/gradbench/tools/pytorch/lstm_objective.py -----


def _torch_objective(torch, main_params, extra_params, state, sequence):
    def lstm(weight, bias, hidden, memory, x):
        gates = torch.cat((x, hidden, x, hidden)) * weight + bias
        size = hidden.shape[0]
        memory = (memory * torch.sigmoid(gates[:size])
                  + torch.sigmoid(gates[size:2 * size]) * torch.tanh(gates[3 * size:]))
        return torch.sigmoid(gates[2 * size:3 * size]) * torch.tanh(memory), memory

    total, states, x = 0.0, state, sequence[0]
    for t in range(len(sequence) - 1):
        new, x = states.clone().detach(), x * extra_params[0]
        for i in range(0, len(states), 2):
            new[i], new[i + 1] = lstm(main_params[i], main_params[i + 1], states[i],
                                      states[i + 1], x)
            x = new[i]
        predicted, states = x * extra_params[1] + extra_params[2], new
        normalized = predicted - torch.log(sum(torch.exp(predicted), 2))
        total += sum(sequence[t + 1] * normalized)
        x = sequence[t + 1]
    return -total / ((len(sequence) - 1) * sequence.shape[1])


def torch_builder(function: str, data: dict):
    def build():
        import torch
        main, extra = (torch.tensor(data[k], requires_grad=True)
                       for k in ("main_params", "extra_params"))
        state, sequence = (torch.tensor(data[k]) for k in ("state", "sequence"))
        if function == "objective":
            return lambda: _torch_objective(torch, main, extra, state, sequence).detach()

        def jacobian():
            value = _torch_objective(torch, main, extra, state, sequence)
            return torch.autograd.grad(value, (main, extra))
        return jacobian
    return build


def cases(sizes=((2, 1024), (6, 8192))) -> list:
    out = []
    for layers, chars in sizes:
        data = inputs(layers, chars)
        for function in ("objective", "jacobian"):
            out.append(Case("lstm", function, f"l={layers},c={chars}",
                            srcxform_builder(function, data),
                            {"PyTorch": torch_builder(function, data)}))
    return out
