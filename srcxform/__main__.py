"""`python -m srcxform config`: what this process runs with (srcxform.show_config()).
`python -m srcxform cache info|clear|prune`: what srcxform's cache folder holds, how
big and how old; clear it; prune it to its limit (SRCXFORM_CACHE_MAX; cachesize.py).
`python -m srcxform docs OUT`: the API reference, built from the public namespaces'
docstrings by pdoc (the `docs` extra), as HTML in the folder OUT."""

import argparse
import os
import pathlib
import pkgutil
import time

from srcxform.config import show_config
from srcxform.numba_adapter import cachefiles, cachesize

ACTIONS = {
    "info": "what the cache holds, how big and how old",
    "clear": "remove everything in it (other processes' loads then miss, and rebuild)",
    "prune": "remove what was used least recently, until it is within its limit",
}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m srcxform")
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser(
        "cache", help="srcxform's cache folder of compiled kernels",
        description="srcxform's cache folder of compiled kernels: " +
        "; ".join(f"{action}: {text}" for action, text in ACTIONS.items()))
    cache.add_argument("action", choices=ACTIONS)
    docs = commands.add_parser("docs", help="build the API reference (needs pdoc)")
    docs.add_argument("out", help="the folder to write its HTML into")
    commands.add_parser("config", help="the versions, CPU, BLAS and settings srcxform runs with")
    args = parser.parse_args(argv)
    if args.command == "config":
        show_config()
        return
    if args.command == "docs":
        print(f"the API reference is in {build_docs(pathlib.Path(args.out))}")
        return
    root = cachefiles.cache_dir()
    if args.action == "info":
        print(info(root))
    elif args.action == "clear":
        files, freed = cachesize.clear(root)
        print(f"removed {files:,} files ({_bytes(freed)}) from {root}")
    else:
        removed, freed = cachesize.prune(root)
        print(f"removed {removed:,} entries ({_bytes(freed)}); {root} holds "
              f"{_bytes(_size(cachesize.measure(root)))} of its {_bytes(cachesize.limit())}")


def build_docs(out):
    """Writes the API reference of srcxform and its public namespaces (srcxform's
    `_NAMESPACES`) into the folder `out`, leaving the implementation's modules out; returns
    the page to open."""
    import pdoc

    import srcxform

    public = {f"srcxform.{name}" for name in srcxform._NAMESPACES}
    internal = [f"!{module.name}" for module in pkgutil.iter_modules(srcxform.__path__,
                                                                     "srcxform.")
                if module.name not in public]
    pdoc.pdoc("srcxform", *internal, output_directory=out)
    return out / "srcxform.html"


def info(root):
    """The cache folder, its size in files and entries of each kind, its limit, and when
    its entries were last used, most and least recently."""
    entries = cachesize.measure(root)
    kinds = {kind: sum(e.kind == kind for e in entries.values())
             for kind in ("kernel", "index", "runtime", "other")}
    files = sum(len(e.files) for e in entries.values())
    setting = " (SRCXFORM_CACHE_MAX)" if os.environ.get("SRCXFORM_CACHE_MAX") else ""
    lines = [
        f"srcxform's cache: {root}",
        (f"  {_bytes(_size(entries))} in {files:,} files: {kinds['kernel']:,} kernels, "
         f"{kinds['index']:,} index entries, {kinds['runtime']:,} runtime modules' helpers, "
         f"{kinds['other']:,} other files"),
        f"  limit {_bytes(cachesize.limit())}{setting}",
    ]
    if entries:
        used = sorted(e.used for e in entries.values())
        lines.append(f"  last used {_ago(used[-1])}; least recently used {_ago(used[0])}")
    return "\n".join(lines)


def _size(entries):
    return sum(entry.size for entry in entries.values())


def _bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def _ago(when):
    seconds = max(0, time.time() - when)
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= length:
            count = int(seconds // length)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


if __name__ == "__main__":
    main()
