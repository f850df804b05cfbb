"""Python's ast conversions, one thread at a time: CPython 3.11 keeps the recursion depth
of converting between its C trees and Python's ast objects in state every thread shares,
so two threads parsing (or compiling a tree) at once can fail with "SystemError: AST
constructor recursion depth mismatch" (python/cpython#106905). Tracing and code
generation parse and compile trees, and functions compile from several threads."""

import ast
import threading

_LOCK = threading.Lock()


def parse(source, mode="exec", filename="<unknown>"):
    with _LOCK:
        return ast.parse(source, filename, mode)


def compiled(tree, filename, mode, **options):
    """compile() of an ast tree (a string compiles without Python's ast objects)."""
    with _LOCK:
        return compile(tree, filename, mode, **options)
