"""GradBench's evaluations (github.com/gradbench/gradbench) written with srcxform, each
beside the JAX and PyTorch programs GradBench ships for it. `python -m
benchmarks.gradbench.run` prints the table; tests/test_gradbench.py checks each at a tiny
size. One module an evaluation: its input generator (GradBench's, seeded as its eval
seeds it), the srcxform program, and the peers (adapted from GradBench's tools, the file
named in each)."""
