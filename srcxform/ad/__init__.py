"""Automatic differentiation: the tape and its reverse walk, tracing into the IR, forward
mode, and why a gradient is what it is (explain, NaN checks)."""
