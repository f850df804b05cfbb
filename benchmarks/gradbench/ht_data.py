"""The inputs of GradBench's `ht`: ADBench's hand files read from a GradBench checkout
(evals/ht/data/{variant}_{model}/, the layout evals/ht/run.py and io.py read), or, where
none is given, a seeded hand of the same sizes (the bone tree GradBench's, everything
else drawn), so that the tests and a machine without the data run the same shapes.

    GRADBENCH_DIR=/path/to/gradbench python -m benchmarks.gradbench.run --only ht
"""

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

# hand{i}_t26_c{CORRESPONDENCES[i - 1]}.txt: 26 pose parameters, c points
CORRESPONDENCES = (100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100000)
VERTICES = {"small": 544, "big": 10000}
TRIANGLES = 1084  # both models' triangles.txt (over the first 544 vertices)
# bones.txt's parents: wrist, five fingers of four bones from the wrist, forearm
PARENTS = (-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19, 0)


class Hand(NamedTuple):
    """One input: pose and (complicated variant) the points' barycentric coordinates us,
    then the model and the observed points. us is None in the simple variant."""
    theta: np.ndarray  # (26,)
    us: np.ndarray | None  # (c, 2)
    parents: tuple  # Python ints: the bone tree is static
    base_relatives: np.ndarray  # (bones, 4, 4)
    inverse_base_absolutes: np.ndarray  # (bones, 4, 4)
    base_positions: np.ndarray  # (vertices, 4), homogeneous
    weights: np.ndarray  # (vertices, bones)
    triangles: np.ndarray  # (triangles, 3)
    correspondences: np.ndarray  # (c,): a vertex (simple) or a triangle (complicated)
    points: np.ndarray  # (c, 3)


def checkout() -> Path | None:
    """The GradBench checkout named by GRADBENCH_DIR, if one is."""
    root = os.environ.get("GRADBENCH_DIR")
    return Path(root) if root else None


def hand(variant: str, model: str, i: int) -> Hand:
    """GradBench's input `hand{i}` of `{variant}_{model}`; seeded without a checkout."""
    if checkout():
        folder = checkout() / "evals/ht/data" / f"{variant}_{model}"
        return read(folder, folder / f"hand{i}_t26_c{CORRESPONDENCES[i - 1]}.txt",
                    variant == "complicated")
    return seeded(variant == "complicated", VERTICES[model], CORRESPONDENCES[i - 1])


def read(folder: Path, path: Path, complicated: bool) -> Hand:
    bones = np.loadtxt(folder / "model/bones.txt", delimiter=":", usecols=range(1, 34))
    count = len(bones)
    weights, positions = [], []
    for line in (folder / "model/vertices.txt").read_text().splitlines():
        atoms = line.split(":")
        positions.append([float(a) for a in atoms[:3]] + [1.0])
        row = np.zeros(count)
        for k in range(int(atoms[8])):  # bone, weight pairs after the count
            row[int(atoms[9 + 2 * k])] = float(atoms[10 + 2 * k])
        weights.append(row)
    lines = path.read_text().split("\n")
    c, n_theta = map(int, lines[0].split())
    observed = np.array([line.split() for line in lines[1:c + 1]], dtype=np.float64)
    rest = lines[c + 1:]
    us = np.array([r.split() for r in rest[:c]], dtype=np.float64) if complicated else None
    theta = np.array(rest[c if complicated else 0:][:n_theta], dtype=np.float64)
    return Hand(theta, us, tuple(int(p) for p in bones[:, 0]),
                bones[:, 1:17].reshape(count, 4, 4), bones[:, 17:].reshape(count, 4, 4),
                np.array(positions), np.array(weights),
                np.loadtxt(folder / "model/triangles.txt", int, delimiter=":"),
                observed[:, 0].astype(np.int64), observed[:, 1:])


def seeded(complicated: bool, vertices: int, c: int, triangles: int = TRIANGLES) -> Hand:
    """Random rigid bones (the inverse base absolutes consistent with them), each vertex
    weighted to up to four bones, theta normal as in the files."""
    rng = np.random.default_rng(31337)
    bones = len(PARENTS)
    relatives = np.tile(np.eye(4), (bones, 1, 1))
    relatives[:, :3, :3] = np.linalg.qr(rng.normal(size=(bones, 3, 3)))[0]
    relatives[:, :3, 3] = rng.normal(scale=0.05, size=(bones, 3))
    absolutes = []
    for i, parent in enumerate(PARENTS):
        absolutes.append(relatives[i] if parent < 0 else absolutes[parent] @ relatives[i])
    weights = rng.random((vertices, bones)) * (rng.random((vertices, bones)) < 4 / bones)
    weights[np.arange(vertices), rng.integers(0, bones, vertices)] += 0.1
    positions = np.concatenate([rng.normal(scale=0.1, size=(vertices, 3)),
                                np.ones((vertices, 1))], 1)
    n_triangles = min(triangles, vertices)
    return Hand(rng.normal(size=26), rng.random((c, 2)) * 0.5 if complicated else None,
                PARENTS, relatives, np.linalg.inv(np.array(absolutes)), positions,
                weights / weights.sum(1, keepdims=True),
                rng.integers(0, min(vertices, 544), (n_triangles, 3)),
                rng.integers(0, n_triangles if complicated else vertices, c),
                rng.normal(size=(c, 3)))
