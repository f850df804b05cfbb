"""TensorFlow's autograph for srcxform: plain Python `if`, `while` and `for` on traced
values become cond, while_loop and fori_loop. rewrite.py rewrites a function's source,
analysis.py finds what each block assigns and reads, runtime.py is what the rewritten
code calls."""

from srcxform.autograph.rewrite import convert, source

__all__ = ["convert", "source"]
