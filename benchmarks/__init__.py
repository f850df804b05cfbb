"""Benchmarks for srcxform: `python -m benchmarks.run` (see the README's Performance section)."""
