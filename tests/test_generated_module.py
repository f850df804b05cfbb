"""A generated module stands alone: imported by path, as any Python file, its plain call
path (the kernel run as Python) gives what the compiled function gives; it reads no name
it does not define or import."""

import ast
import builtins
import importlib.util
import pathlib
from typing import NamedTuple

import numpy as np
import pytest

import srcxform as tf


@tf.differentiable(wait=True)
def loss(x, w):
    return tf.reduce_sum(tf.tanh(x * w)) + tf.reduce_max(x)


def _module_file(f, *args):
    """The generated file of f's kernel for these arguments."""
    return pathlib.Path(f.kernel(*args).py_func.__code__.co_filename)


def _import(path):
    spec = importlib.util.spec_from_file_location(f"generated_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_generated_file_imported_by_path_computes_the_gradient():
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
    value, grads = loss.value_and_grad(x, w)
    module = _import(_module_file(loss, x, w))
    got_value, got_grad = module.loss_value_and_grad(x, w)
    np.testing.assert_allclose(got_value, value, rtol=1e-12)
    np.testing.assert_allclose(got_grad, grads, rtol=1e-12)


class Params(NamedTuple):
    w: np.ndarray
    b: float


TABLE = np.arange(3.0)  # captured by `captures`
SCALE = tf.Variable(2.0, dtype=tf.float64)


@tf.differentiable(wait=True, has_aux=True)
def captures(p, x):
    """Reads a captured array and a Variable, takes and returns a NamedTuple."""
    return tf.reduce_sum(p.w * x * TABLE) * SCALE + p.b, p


@pytest.mark.parametrize("f, args", [
    (loss, (np.ones(3), np.ones(3))),
    (captures, (Params(np.ones(3), 1.0), np.ones(3))),
], ids=["plain", "captures"])
def test_a_generated_module_reads_only_names_it_defines(f, args):
    tree = ast.parse(_module_file(f, *args).read_text())
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.arg)):
            defined.add(node.name if isinstance(node, ast.FunctionDef) else node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert read <= defined, f"read but never defined: {sorted(read - defined)}"


def test_one_statement_a_line_and_each_note_once():
    x = np.ones(4)

    @tf.differentiable(wait=True)
    def sums(x):
        return tf.reduce_sum(tf.sin(x)) * tf.reduce_sum(tf.cos(x)) + tf.reduce_sum(x * x)

    source = sums.source(x)
    lines = source.splitlines()
    one_liners = [line for line in lines
                  if line.lstrip().startswith("if ") and not line.split("#")[0].rstrip().endswith(":")]
    assert not one_liners, one_liners
    assert source.count("in lanes (codegen/lanes.py)") <= 1
