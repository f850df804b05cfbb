"""GradBench's `ht` (hand tracking, from ADBench): `objective`, the 3c coordinates of the
differences between c observed points and a skinned hand mesh posed by 26 parameters
theta, and `jacobian`, their derivatives (evals/ht/run.py: ADBench's files hand1 to hand12, c = 100 to 100,000
points, a small model of 544 vertices or a big one of 10,000, both of 22 bones;
`simple` takes each point's vertex, `complicated` a point of a triangle at barycentric
coordinates us, which are variables too). The inputs: ht_data.py.

Its Jacobian is (3c, 26) in the simple variant; in the complicated one (3c, 28): each
row's two derivatives in its own point's us (the 3 x 2 blocks of the diagonal, the rest
being zeros), then the 26 in theta, as GradBench's tools lay it out.

GradBench ships PyTorch (per-point Python loops; its Jacobian one backward pass a row)
and TensorFlow 1 graphs for ht, no JAX: the JAX program here is ours, the same math as
the NumPy reference (`_errors` over either namespace). The reference is that NumPy
program's complex-step derivative (Im f(x + ih) / h: exact to rounding)."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module
from benchmarks.gradbench.ht_data import Hand, checkout, hand, seeded

SIZES = tuple((variant, model, i) for variant in ("complicated", "simple")
              for model in ("small", "big") for i in range(1, 13))
# PyTorch's Jacobian (a backward pass a row, through a graph of a node a point) takes
# 4-9 s at hand1's 300 rows on one thread and grows as their square: up to hand3 (600)
TORCH_ROWS = 600


def _bone_angle_index() -> np.ndarray:
    """(bones, 3) indices into theta[6:] + [0]: ADBench's pose layout, its Euler angles
    per bone (the wrist and thumb root fixed; a finger's root bends two ways, its middle
    bones one, its tip none); 20 is the zero."""
    zero = 20
    rows = [[zero] * 3, [zero] * 3]
    for k in range(0, 20, 4):
        rows += [[k, k + 1, zero], [k + 2, zero, zero], [k + 3, zero, zero], [zero] * 3]
    return np.array(rows)


BONE_ANGLES = _bone_angle_index()


# ----- srcxform: as a TensorFlow user writes it, the bones batched where they can be -----


def _rotations(xzy):
    """(bones, 3) Euler angles (x, z, y) -> (bones, 3, 3) rotations Rz Ry Rx."""
    cos, sin = tf.cos(xzy), tf.sin(xzy)
    one, zero = tf.ones_like(xzy[:, 0]), tf.zeros_like(xzy[:, 0])

    def matrix(rows):
        return tf.stack([tf.stack(row, 1) for row in rows], 1)

    cx, cz, cy = cos[:, 0], cos[:, 1], cos[:, 2]
    sx, sz, sy = sin[:, 0], sin[:, 1], sin[:, 2]
    rx = matrix([[one, zero, zero], [zero, cx, -sx], [zero, sx, cx]])
    ry = matrix([[cy, zero, -sy], [zero, one, zero], [sy, zero, cy]])
    rz = matrix([[cz, -sz, zero], [sz, cz, zero], [zero, zero, one]])
    return tf.matmul(tf.matmul(rz, ry), rx)


def _rodrigues(angle_axis):
    """The global rotation; the identity near zero, as GradBench's tools."""
    norm = tf.sqrt(tf.reduce_sum(angle_axis * angle_axis))

    def rotate():
        x, y, z = tf.unstack(angle_axis / norm)
        cross = tf.convert_to_tensor([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]],
                                     dtype=tf.float64)
        axis = angle_axis[:, None] / norm
        return (tf.cos(norm) * tf.eye(3, dtype=tf.float64) + tf.sin(norm) * cross
                + (1.0 - tf.cos(norm)) * axis * tf.transpose(axis))

    return tf.cond(norm < 1e-4, lambda: tf.eye(3, dtype=tf.float64), rotate)


def vertex_positions(theta, model):
    """Linear blend skinning: each bone posed, chained to its parent, weighed per vertex."""
    parents, base_relatives, inverse_base_absolutes, base_positions, weights = model
    angles = tf.gather(tf.concat([theta[6:], tf.zeros(1, tf.float64)], 0), BONE_ANGLES)
    # base_relative @ [[R, 0], [0, 1]]: the rotation acts on the first three columns
    relatives = tf.concat([tf.matmul(base_relatives[:, :, :3], _rotations(angles)),
                           base_relatives[:, :, 3:]], 2)
    absolutes = []
    for i, parent in enumerate(parents):
        absolutes.append(relatives[i] if parent < 0
                         else tf.matmul(absolutes[parent], relatives[i]))
    transforms = tf.matmul(tf.stack(absolutes), inverse_base_absolutes)
    bones = len(parents)
    blended = tf.reshape(tf.matmul(weights, tf.reshape(transforms[:, :3], (bones, 12))),
                         (-1, 3, 4))
    posed = tf.reduce_sum(blended * base_positions[:, None, :], 2)
    return tf.matmul(posed, tf.transpose(_rodrigues(theta[0:3]))) + theta[3:6]


def errors(theta, us, model, points, correspondences, triangles):
    """(c, 3): each point less its vertex, or its point on a triangle where us is given."""
    vertices = vertex_positions(theta, model)
    if us is None:
        return points - tf.gather(vertices, correspondences)
    corners = tf.gather(vertices, tf.gather(triangles, correspondences))  # (c, 3, 3)
    barycentric = tf.concat([us, 1.0 - us[:, 0:1] - us[:, 1:2]], 1)
    return points - tf.reduce_sum(barycentric[:, :, None] * corners, 1)


def objective(theta, us, model, points, correspondences, triangles):
    return tf.reshape(errors(theta, us, model, points, correspondences, triangles), [-1])


def jacobian(theta, us, model, points, correspondences, triangles):
    """In theta by tape.jacobian (26 columns); in us by batch_jacobian, a point's error
    depending on its own us only."""
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(theta)
        if us is not None:
            tape.watch(us)
        e = errors(theta, us, model, points, correspondences, triangles)
    blocks = [tape.jacobian(e, theta)]
    if us is not None:
        blocks.insert(0, tape.batch_jacobian(e, us))
    return tf.reshape(tf.concat(blocks, 2), (-1, sum(b.shape[2] for b in blocks)))


def arguments(h: Hand) -> tuple:
    model = (h.parents, h.base_relatives, h.inverse_base_absolutes, h.base_positions,
             h.weights)
    return h.theta, h.us, model, h.points, h.correspondences, h.triangles


def srcxform_builder(function: str, h: Hand):
    def build():
        f = tf.differentiable(objective if function == "objective" else jacobian, wait=True)
        args = arguments(h)
        return lambda: f(*args)
    return build


# ----- NumPy (the reference, complex step) and JAX: one program over either namespace -----


def _errors(xp, theta, us, h: Hand):
    angles = xp.concatenate([theta[6:], xp.zeros(1)])[BONE_ANGLES]
    c, s = xp.cos(angles), xp.sin(angles)
    cx, cz, cy, sx, sz, sy = c[:, 0], c[:, 1], c[:, 2], s[:, 0], s[:, 1], s[:, 2]
    # Rz Ry Rx multiplied out
    rotations = xp.stack([
        xp.stack([cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx], 1),
        xp.stack([sz * cy, cz * cx + sz * sy * sx, -cz * sx + sz * sy * cx], 1),
        xp.stack([-sy, cy * sx, cy * cx], 1)], 1)
    relatives = xp.concatenate([h.base_relatives[:, :, :3] @ rotations,
                                h.base_relatives[:, :, 3:]], 2)
    absolutes = []
    for i, parent in enumerate(h.parents):
        absolutes.append(relatives[i] if parent < 0 else absolutes[parent] @ relatives[i])
    transforms = xp.stack(absolutes) @ h.inverse_base_absolutes
    posed = xp.einsum("vb,bij,vj->vi", h.weights, transforms[:, :3], h.base_positions)
    norm = xp.sqrt(xp.sum(theta[:3] * theta[:3]))
    k = theta[:3] / norm
    cross = xp.stack([xp.stack([0 * norm, -k[2], k[1]]), xp.stack([k[2], 0 * norm, -k[0]]),
                      xp.stack([-k[1], k[0], 0 * norm])])
    rotation = xp.cos(norm) * xp.eye(3) + xp.sin(norm) * cross \
        + (1 - xp.cos(norm)) * k[:, None] * k[None, :]
    rotation = xp.where(xp.real(norm) < 1e-4, xp.eye(3), rotation)
    vertices = posed @ rotation.T + theta[3:6]
    if us is None:
        return h.points - vertices[h.correspondences]
    corners = vertices[h.triangles[h.correspondences]]
    barycentric = xp.concatenate([us, 1 - us[:, :1] - us[:, 1:]], 1)
    return h.points - xp.sum(barycentric[:, :, None] * corners, 1)


def _complex_step(function: str, h: Hand) -> np.ndarray:
    """The NumPy reference: the objective, or each Jacobian column as Im f(x + ih e) / h
    (in us, one column per coordinate for every point at once)."""
    if function == "objective":
        return _errors(np, h.theta, h.us, h).ravel()
    step, columns = 1e-30, []
    for k in range(2 if h.us is not None else 0):
        us = h.us.astype(complex)
        us[:, k] += step * 1j
        columns.append(_errors(np, h.theta, us, h).imag.ravel() / step)
    for k in range(h.theta.size):
        theta = h.theta.astype(complex)
        theta[k] += step * 1j
        columns.append(_errors(np, theta, h.us, h).imag.ravel() / step)
    return np.stack(columns, 1)


def jax_builder(function: str, h: Hand):
    """jacfwd in theta; in us two JVPs (along each coordinate of every point at once)."""
    def build():
        jax = jax_module()
        jnp = jax.numpy
        data = {name: jnp.asarray(getattr(h, name)) for name in h._fields
                if name not in ("theta", "us", "parents")}

        def error(theta, us, data):
            return _errors(jnp, theta, us, h._replace(**data))

        def derivatives(theta, us, data):
            blocks = [jax.jacfwd(error)(theta, us, data)]
            if us is not None:
                blocks.insert(0, jnp.stack([
                    jax.jvp(lambda u: error(theta, u, data), (us,),
                            (jnp.zeros_like(us).at[:, k].set(1.0),))[1] for k in (0, 1)], 2))
            blocks = jnp.concatenate(blocks, 2)
            return blocks.reshape(-1, blocks.shape[2])

        f = jax.jit(derivatives if function == "jacobian"
                    else lambda theta, us, data: error(theta, us, data).ravel())
        theta, us = jnp.asarray(h.theta), None if h.us is None else jnp.asarray(h.us)
        return lambda: f(theta, us, data).block_until_ready()
    return build


# ----- peer: adapted from python/gradbench/gradbench/tools/pytorch/ht.py, ht_objective.py -----


def _torch_errors(torch, variables, h: Hand, tensors: dict):
    """GradBench's PyTorch program: bones one at a time, Euler matrices and pose
    parameters by item assignment, each bone's transform of every vertex, a point at a
    time at the end."""
    c = len(h.points)
    us = variables[:2 * c].reshape(c, 2) if h.us is not None else None
    theta = variables[2 * c:] if h.us is not None else variables
    pose = torch.zeros((len(h.parents), 3), dtype=torch.float64)
    for bone, row in enumerate(BONE_ANGLES):
        for j, k in enumerate(row):
            if k < 20:
                pose[bone, j] = theta[6 + k]
    relatives = []
    for bone in range(len(h.parents)):
        rotation = torch.eye(4, dtype=torch.float64)
        rotation[:3, :3] = _torch_euler(torch, pose[bone])
        relatives.append(tensors["base_relatives"][bone] @ rotation)
    absolutes = []
    for i, parent in enumerate(h.parents):
        absolutes.append(relatives[i] if parent < 0 else absolutes[parent] @ relatives[i])
    positions = torch.stack([(absolutes[i] @ tensors["inverse_base_absolutes"][i])
                             @ tensors["base_positions"].T for i in range(len(absolutes))])
    posed = torch.sum(positions.permute(2, 0, 1) * tensors["weights"][:, :, None], 1)[:, :3]
    vertices = posed @ _torch_rodrigues(torch, theta[0:3]).T + theta[3:6]
    points = tensors["points"]
    if us is None:
        return torch.stack([points[i] - vertices[int(v)]
                            for i, v in enumerate(h.correspondences)])
    rows = []
    for i, triangle in enumerate(h.triangles[h.correspondences]):
        a, b, corner = (vertices[int(v)] for v in triangle)
        rows.append(points[i] - (us[i, 0] * a + us[i, 1] * b
                                 + (1.0 - us[i, 0] - us[i, 1]) * corner))
    return torch.stack(rows)


def _torch_euler(torch, xzy):
    def axis(angle, sine_at, cosines_at):
        r = torch.eye(3, dtype=torch.float64)
        for i, j in cosines_at:
            r[i, j] = torch.cos(angle)
        r[sine_at] = torch.sin(angle)
        r[sine_at[::-1]] = -torch.sin(angle)
        return r

    rx = axis(xzy[0], (2, 1), ((1, 1), (2, 2)))
    ry = axis(xzy[2], (2, 0), ((0, 0), (2, 2)))
    rz = axis(xzy[1], (1, 0), ((0, 0), (1, 1)))
    return (rz @ ry) @ rx


def _torch_rodrigues(torch, angle_axis):
    norm = torch.sqrt(torch.sum(angle_axis ** 2))
    if norm < 1e-4:
        return torch.eye(3, dtype=torch.float64)
    x, y, z = angle_axis / norm
    s, c = torch.sin(norm), torch.cos(norm)
    return torch.stack([
        torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
        torch.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
        torch.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])


def torch_builder(function: str, h: Hand):
    def build():
        import torch
        tensors = {name: torch.tensor(getattr(h, name)) for name in
                   ("base_relatives", "inverse_base_absolutes", "base_positions", "weights",
                    "points")}
        flat = h.theta if h.us is None else np.concatenate([h.us.ravel(), h.theta])
        variables = torch.tensor(flat, requires_grad=function == "jacobian")
        c = len(h.points)

        def run_objective():
            return _torch_errors(torch, variables, h, tensors).detach().flatten()

        def run_jacobian():
            """A backward pass a row, as GradBench's torch_jacobian; then its us block."""
            rows = _torch_errors(torch, variables, h, tensors).flatten()
            out = []
            for r, row in enumerate(rows):
                grad = torch.autograd.grad(row, variables, retain_graph=True)[0]
                point = r // 3
                out.append(grad if h.us is None else
                           torch.cat([grad[2 * point:2 * point + 2], grad[2 * c:]]))
            return torch.stack(out)

        return run_objective if function == "objective" else run_jacobian
    return build


def numpy_builder(function: str, h: Hand):
    return lambda: lambda: _complex_step(function, h)


def _input(size: tuple) -> tuple:
    """(Hand, its label) of (variant, "small" or "big", i): GradBench's hand{i} (seeded
    without a checkout: the label says so); or of (variant, vertices, points): a seeded
    hand that small (the tests)."""
    variant, model, i = size
    if isinstance(model, str):
        h = hand(variant, model, i)
        seeded_note = "" if checkout() else ", seeded"
        return h, f"{variant} {model} hand{i} (c={len(h.points)}{seeded_note})"
    return seeded(variant == "complicated", model, i, triangles=model), \
        f"{variant} v={model} c={i}"


def cases(sizes=(("simple", "small", 1), ("complicated", "big", 1),
                 ("complicated", "big", 12))) -> list:
    out = []
    for size in sizes:
        h, label = _input(size)
        for function in ("objective", "jacobian"):
            peers = {"JAX": jax_builder(function, h)}
            if function == "objective" or 3 * len(h.points) <= TORCH_ROWS:
                peers["PyTorch"] = torch_builder(function, h)
            out.append(Case("ht", function, label, srcxform_builder(function, h), peers,
                            reference=("NumPy complex step", numpy_builder(function, h))))
    return out


def profile(function: str = "jacobian", size: tuple = ("simple", "small", 1)) -> dict:
    """Where one blocking first call goes, in CPU seconds of this thread (a loaded
    machine's wall time is mostly other processes'): the trace (with the derivatives and
    the passes), code generation, then Numba's typing, lowering and LLVM by Numba's own
    events (gradbench_gmm.profile's stages), each exclusive of those nested in it. A
    fresh cache folder; Numba started first by a trivial program."""
    import os
    import re
    import tempfile
    import time

    from numba.core import event

    from benchmarks.gradbench_gmm import _NumbaStages
    from srcxform.jit import compiler

    os.environ["SRCXFORM_CACHE_DIR"] = tempfile.mkdtemp(prefix="ht-profile-")
    tf.differentiable(lambda x: tf.reduce_sum(x * x), wait=True).grad(np.ones(3))
    stages = {"trace + passes": 0.0, "codegen": 0.0}
    sources = []

    def timed(stage, inner):
        def run(*args, **kwargs):
            start = time.thread_time()
            try:
                result = inner(*args, **kwargs)
            finally:
                stages[stage] += time.thread_time() - start
            if stage == "codegen":
                sources.append(result[0])
            return result
        return run

    saved = compiler.trace_function, compiler.generate_source
    compiler.trace_function = timed("trace + passes", saved[0])
    compiler.generate_source = timed("codegen", saved[1])
    numba = _NumbaStages()
    event.register("numba:run_pass", numba)
    event.register("numba:llvm_lock", numba)
    h, _ = _input(size)
    args = arguments(h)
    f = tf.differentiable(objective if function == "objective" else jacobian, wait=True)
    try:
        start, cpu = time.perf_counter(), time.thread_time()
        f(*args)
        stages["first call, wall"] = time.perf_counter() - start
        stages["first call, CPU"] = time.thread_time() - cpu
    finally:
        compiler.trace_function, compiler.generate_source = saved
        event.unregister("numba:run_pass", numba)
        event.unregister("numba:llvm_lock", numba)
    stages.update(sorted(numba.stages.items(), key=lambda kv: -kv[1]))
    stages["kernel lines"] = len(sources[0].splitlines())
    stages["IR"] = re.search(r"\d+ equations", sources[0]).group()
    return stages


if __name__ == "__main__":  # python -m benchmarks.gradbench.ht profile [objective|jacobian]
    import sys

    for stage, value in profile(*sys.argv[2:3]).items():
        print(f"{stage}: {value:.2f}" if isinstance(value, float) else f"{stage}: {value}")
