"""Code generation: IR (with its fusion schedule) → Python source a person can read."""

from srcxform.codegen.lower import generate  # noqa: F401
