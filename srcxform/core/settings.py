"""The environment switches, read by one rule.

A switch (SRCXFORM_CHECK, SRCXFORM_JIT, SRCXFORM_TIERED, SRCXFORM_NUMBA_INTERNALS, ...) is
off when unset and its default is off, or when set to "", "0", "false", "no" or "off" (any
case); any other value turns it on. SRCXFORM_DEVICE names a device instead (`device`).
"""

import os

_OFF = ("", "0", "false", "no", "off")


def switch(name: str, default: bool = False) -> bool:
    """Whether the environment switch `name` is on; `default` where it is unset."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in _OFF


DEVICES = ("cpu", "cuda")


def device(chosen: str | None = None) -> str:
    """The device a compiled function runs on: `chosen`, else SRCXFORM_DEVICE (any case),
    else "cpu". Raises ValueError naming the choices for another name."""
    name = chosen if chosen is not None else \
        os.environ.get("SRCXFORM_DEVICE", "").strip().lower() or "cpu"
    if name not in DEVICES:
        where = f"device={name!r}" if chosen is not None else f"SRCXFORM_DEVICE={name!r}"
        raise ValueError(f"srcxform: {where} is not a device; the choices are "
                         f"{', '.join(repr(d) for d in DEVICES)}")
    return name
