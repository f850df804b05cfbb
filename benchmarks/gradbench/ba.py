"""GradBench's `ba` (bundle adjustment, from ADBench): `objective`, the weighted
reprojection errors (p x 2) and the weight errors 1 - w^2 (p), and `jacobian`, their
derivatives: for each observation the 2 x 15 block in its camera (11), point (3) and
weight (1), and the weight errors' diagonal (evals/ba/run.py reads evals/ba/data/baN_*.txt:
n cameras, m points, p observations, one camera, point, weight and feature repeated, the
i-th observation seeing camera i mod n and point i mod m).

GradBench's tools return the Jacobian as a sparse matrix (rows, cols, vals: the same
numbers); here the blocks are compared as a (p, 2, 15) array. The rotation takes the
theta != 0 branch of Rodrigues' formula, the only one GradBench's data reaches."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case

# The first five lines of each data file (ADBench's, evals/ba/data/LICENSE.TXT): only n,
# m and p differ between files.
FILES = {"ba1": (49, 7776, 31843), "ba5": (257, 65132, 225911),
         "ba10": (1197, 126327, 563734), "ba14": (356, 226730, 1255268)}
SIZES = tuple(FILES)
CAM = [-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514,
       5.864426, -8.518870, 0.087812, 0.002739]
POINT, WEIGHT, FEATURE = [7.203245, 0.001144, 3.023326], 0.417022, [271.760969, 834.209256]


def inputs(n: int, m: int, p: int) -> tuple:
    """(cams, points, weights, features, camera index, point index), as the tools tile them."""
    i = np.arange(p)
    return (np.tile(CAM, (n, 1)), np.tile(POINT, (m, 1)), np.full(p, WEIGHT),
            np.tile(FEATURE, (p, 1)), i % n, i % m)


def observation_errors(cam, point, weight, feature):
    """The srcxform program: every observation at once, a row each; weight is (p, 1)."""
    rot, centre = cam[:, 0:3], cam[:, 3:6]
    x = point - centre
    theta = tf.sqrt(tf.reduce_sum(rot * rot, 1, keepdims=True))
    axis = rot / theta
    along = tf.reduce_sum(axis * x, 1, keepdims=True)
    rotated = (x * tf.cos(theta) + tf.linalg.cross(axis, x) * tf.sin(theta)
               + axis * along * (1.0 - tf.cos(theta)))
    projected = rotated[:, 0:2] / rotated[:, 2:3]
    rsq = tf.reduce_sum(projected * projected, 1, keepdims=True)
    distortion = 1.0 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq
    return weight * (projected * distortion * cam[:, 6:7] + cam[:, 7:9] - feature)


def objective(cams, points, weights, features, cam_index, point_index):
    errors = observation_errors(tf.gather(cams, cam_index), tf.gather(points, point_index),
                                weights[:, None], features)
    return errors, 1.0 - weights * weights


def jacobian(cams, points, weights, features, cam_index, point_index):
    """Each observation's block by batch_jacobian in its own rows of the inputs."""
    cam, point = tf.gather(cams, cam_index), tf.gather(points, point_index)
    weight = weights[:, None]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([cam, point, weight])
        errors = observation_errors(cam, point, weight, features)
    blocks = tf.concat([tape.batch_jacobian(errors, source)
                        for source in (cam, point, weight)], 2)
    return blocks, -2.0 * weights


def srcxform_builder(function: str, args: tuple):
    def build():
        f = tf.function(objective if function == "objective" else jacobian, jit_compile=True)
        return lambda: f(*args)  # its first call traces and compiles
    return build


# ----- peer: adapted from python/gradbench/gradbench/tools/pytorch/ba.py, ba_objective.py -----


def _torch_errors(torch, cam, x, w, feat):
    rot, x = cam[0:3], x - cam[3:6]
    theta = torch.sqrt(torch.sum(rot**2))
    axis = rot / theta
    rotated = (x * torch.cos(theta) + torch.linalg.cross(axis, x) * torch.sin(theta)
               + axis * torch.dot(axis, x) * (1.0 - torch.cos(theta)))
    projected = rotated[0:2] / rotated[2]
    rsq = torch.sum(projected**2)
    distorted = projected * (1.0 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (distorted * cam[6] + cam[7:9] - feat)


def torch_builder(function: str, args: tuple):
    def build():
        import torch
        cams, points, weights, features, cam_index, point_index = args
        cams = [torch.tensor(c, requires_grad=True) for c in cams]
        points = [torch.tensor(x, requires_grad=True) for x in points]
        weights = [torch.tensor(w, requires_grad=True) for w in weights]
        features = torch.tensor(features)
        seen = list(zip(cam_index.tolist(), point_index.tolist()))

        def run_objective():
            errors = torch.stack([_torch_errors(torch, cams[c], points[x], weights[j],
                                                features[j]) for j, (c, x) in enumerate(seen)])
            return errors.detach(), torch.stack([1.0 - w**2 for w in weights]).detach()

        def run_jacobian():
            blocks, diagonal = [], []
            for j, (c, x) in enumerate(seen):
                inputs = (cams[c], points[x], weights[j])
                error = _torch_errors(torch, *inputs, features[j])
                rows = [torch.cat([g.reshape(-1) for g in
                                   torch.autograd.grad(e, inputs, retain_graph=True)])
                        for e in error]
                blocks.append(torch.stack(rows))
                diagonal.append(torch.autograd.grad(1.0 - weights[j]**2, weights[j])[0])
            return torch.stack(blocks), torch.stack(diagonal)

        return run_objective if function == "objective" else run_jacobian
    return build


def cases(sizes=("ba1",)) -> list:
    """sizes: names of GradBench's files, or (n, m, p) for other sizes."""
    out = []
    for size in sizes:
        name, (n, m, p) = (size, FILES[size]) if size in FILES else ("ba", size)
        args = inputs(n, m, p)
        for function in ("objective", "jacobian"):
            out.append(Case("ba", function, f"{name} (n={n},m={m},p={p})",
                            srcxform_builder(function, args),
                            {"PyTorch": torch_builder(function, args)}))
    return out
