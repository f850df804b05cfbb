"""srcxform's modules import one way, from the user's surface down to the leaves: each
module imports only modules of its own layer or below, and no import cycle joins two
modules (an import inside a function counts as one at the top)."""

import ast
import math
import pathlib
import subprocess
import sys

import pytest

_ROOT = pathlib.Path(__file__).resolve().parent.parent / "srcxform"

# The layers, lowest first: each a set of the package's folders; a module at the top of
# the package is the surface's. A module's layer is its folder's.
LAYERS = [
    ("core", {"core"}),  # values, dtypes, errors, the IR, the Primitive record
    ("ops", {"ops"}),  # the primitives, declared once
    ("ad", {"ad"}),  # the tape, tracing, forward mode, explain
    ("passes", {"passes"}),  # the IR's passes; control flow's IR ops; rows become loops
    ("codegen", {"codegen"}),  # IR to Python source; the calling convention
    ("runtime", {"runtime", "numba_adapter"}),  # what generated code calls; Numba's internals
    ("jit", {"jit"}),  # from a call to a compiled kernel
    ("cuda", {"cuda"}),  # the CUDA target: codegen's schedule as CUDA kernels (numba-cuda)
    ("surface", {"", "autograph", "keras", "testing"}),  # the public names
]
# The runtime package's own module holds only the list of its modules, which the IR's
# names keep clear of: a constant of the core's.
PLACED = {"srcxform.runtime": "core"}

def _modules():
    """Each module's name and path."""
    found = {}
    for path in sorted(_ROOT.rglob("*.py")):
        parts = path.relative_to(_ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name, path):
    """The srcxform modules that `name` imports, anywhere in it. `from package import x`
    is module package.x where that is a module, else the package."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _folder(module):
    """The package folder a module is in ("" for the package's top)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or MODULES[module].name == "__init__.py" and \
        len(parts) == 2 else ""


def _layers(module):
    folder = PLACED.get(module) or _folder(module)
    return [rank for rank, (name, folders) in enumerate(LAYERS)
            if folder in folders or name == folder]


def _layer(module):
    return _layers(module)[0]


def test_every_module_is_in_one_layer():
    """A new folder is placed in LAYERS by whoever adds it."""
    assert [m for m in MODULES if len(_layers(m)) != 1] == []


def test_no_chain_of_imports_is_deeper_than_twelve_folders_and_modules():
    """The import graph with each folder one node (its modules imported together) and the
    package's top-level modules one each: no chain longer than 12, a newcomer's path from
    a public name down to the leaves."""
    nodes = {m: PLACED.get(m) or _folder(m) or m for m in MODULES}
    folded = {}
    for module, imported in GRAPH.items():
        folded.setdefault(nodes[module], set()).update(
            nodes[m] for m in imported if nodes[m] != nodes[module])
    memo = {}

    def depth(node):
        if node not in memo:
            memo[node] = 0
            memo[node] = 1 + max((depth(n) for n in folded[node]), default=0)
        return memo[node]

    deepest = max(folded, key=depth)
    assert depth(deepest) <= 12, f"{deepest}: {depth(deepest)} levels"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_nothing_from_a_layer_above_its_own(module):
    above = sorted(m for m in GRAPH[module] if _layer(m) > _layer(module))
    assert above == [], f"{module} ({LAYERS[_layer(module)][0]}) imports " + ", ".join(
        f"{m} ({LAYERS[_layer(m)][0]})" for m in above)


def test_no_import_cycle_joins_two_modules():
    """A depth-first walk of the import graph meets no module still on its stack."""
    state, cycles = {}, []

    def visit(module, stack):
        state[module] = "open"
        for m in sorted(GRAPH[module]):
            if state.get(m) == "open":
                cycles.append(" -> ".join(stack[stack.index(m):] + [module, m]))
            elif m not in state:
                visit(m, stack + [module])
        state[module] = "done"

    for module in sorted(MODULES):
        if module not in state:
            visit(module, [])
    assert cycles == []


def test_the_runtime_is_imported_only_by_generated_code():
    """The backend imports srcxform.runtime's compiled modules (runtime.MODULES) by name
    for a first kernel; nothing in srcxform imports one (`import srcxform` never imports
    Numba's runtime helpers). runtime/calls.py, plain Python, the call path's, is not one."""
    from srcxform.runtime import MODULES as COMPILED

    runtime = {f"srcxform.runtime.{m}" for m in COMPILED}
    importers = sorted(m for m, imported in GRAPH.items()
                       if imported & runtime and not m.startswith("srcxform.runtime."))
    assert runtime and importers == []


def test_the_layers_below_the_compiler_never_import_numba():
    """Numba's internals are the numba_adapter's; the runtime uses its extension API."""
    first_numba = next(rank for rank, (name, _) in enumerate(LAYERS) if name == "runtime")
    users = sorted(m for m, path in MODULES.items() if _layer(m) < first_numba
                   and any(isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                       (getattr(node, "module", None) or a.name).startswith(("numba", "llvmlite"))
                       for a in node.names) for node in ast.walk(ast.parse(path.read_text()))))
    assert users == []


def test_import_srcxform_loads_neither_numba_nor_scipy():
    """`import srcxform` costs a program that only uses the tape NumPy alone: a first kernel
    loads Numba, an eager special function scipy.special (0.3 s), and SciPy's ufuncs
    dispatch to srcxform's ops once the program has imported them."""
    code = ("import sys, srcxform as tf\n"
            "print(sorted(m for m in ('numba', 'scipy') if m in sys.modules))\n"
            "print(float(tf.math.erf(tf.constant(0.5, tf.float64))))\n"
            "import scipy.special\n"
            "print(type(scipy.special.erf(tf.constant([0.5]))).__name__)\n")
    loaded, erf, dispatched = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                             text=True, check=True).stdout.split()
    assert (loaded, dispatched) == ("[]", "Tensor")
    assert float(erf) == pytest.approx(math.erf(0.5), rel=1e-15)


# Numba's extension API, which the runtime's intrinsics and overloads are written in, and
# its documented literal_unroll (a loop over a tuple of mixed types: arrays.add_at).
_NUMBA_EXTENSION_API = ("numba.extending", "numba.core.types", "numba.core.cgutils",
                        "numba.core.errors", "numba.types", "numba.cuda", "numba.literal_unroll")


def test_only_the_numba_adapter_imports_numba_internals():
    """Numba's internals (anything of numba.core, numba.np, … beyond its extension API)
    are imported by srcxform/numba_adapter/ alone, so a Numba upgrade touches one folder."""
    found = []
    for module, path in MODULES.items():
        if module.startswith("srcxform.numba_adapter"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):  # from numba.core import types: numba.core.types
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                internal = name.startswith("numba.") and not name.startswith(_NUMBA_EXTENSION_API)
                if internal:
                    found.append(f"{module}: {name}")
    assert found == []


def test_ast_trees_are_made_one_thread_at_a_time():
    """CPython 3.11 shares the recursion depth of its ast conversions between threads: two
    parses at once raised SystemError ("AST constructor recursion depth mismatch", helper
    58, tracing from 3 threads). Every ast.parse goes through core/syntax.py's lock."""
    direct = [f"{path.relative_to(_ROOT)}:{node.lineno}"
              for path in sorted(_ROOT.rglob("*.py")) if path.name != "syntax.py"
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "parse" and getattr(node.func.value, "id", None) == "ast"]
    assert direct == []
