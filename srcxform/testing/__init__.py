"""Testing helpers: `check_grads`, and the `gradcheck` pytest fixture (plugin.py)."""

from srcxform.testing.check import check_grads

__all__ = ["check_grads"]
