"""Benchmarks for srcxform: `python -m benchmarks.run` (see benchmarks/README.md)."""
