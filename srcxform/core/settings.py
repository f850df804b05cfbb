"""The environment switches, read by one rule.

A switch (SRCXFORM_CHECK, SRCXFORM_JIT, SRCXFORM_TIERED, SRCXFORM_NUMBA_INTERNALS, ...) is
off when unset and its default is off, or when set to "", "0", "false", "no" or "off" (any
case); any other value turns it on.
"""

import os

_OFF = ("", "0", "false", "no", "off")


def switch(name: str, default: bool = False) -> bool:
    """Whether the environment switch `name` is on; `default` where it is unset."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in _OFF
