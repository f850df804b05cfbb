"""No text of the user's becomes code: file names, source lines, function and argument
names, dict keys and Variable names reach generated source only through
errors.source_text (comments, docstrings) or names.identifier (names), and a property
test over arbitrary text, line breaks of every kind and quotes finds the generated module
unchanged but for its comments, or defining the names it should and no others.
"""

import ast
import io
import keyword
import linecache
import os
import tokenize
import types
import unicodedata

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import srcxform as tf
from srcxform.jit import compiler
from srcxform.core.errors import cut, source_text, user_line
from srcxform.core.names import identifier
from srcxform.core.tree import tree_flatten

# Text with what ends a line or a literal in any of Python's readers overrepresented.
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\t\"'\\#"
TEXT = st.text(st.one_of(st.sampled_from(BREAKS), st.characters()), max_size=40)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
INJECTION = "x\n        0\nimport os;os.environ['X']=open('PWNED','w').name\ndef _():\n    if 1:\n#"


def _comments(source):
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.COMMENT]


# ----- the escaping functions -----

@SETTINGS
@given(TEXT)
@example(INJECTION)
def test_comment_text_is_one_printable_line(text):
    line = source_text(text)
    assert line.isprintable() and len(line.splitlines()) <= 1
    source = f"x = 1  # {line}\n"
    assert _comments(source) == [f"# {line}"]
    assert ast.dump(ast.parse(source)) == ast.dump(ast.parse("x = 1\n"))


@SETTINGS
@given(TEXT, st.integers(8, 100))
def test_a_cut_comment_is_one_printable_line(text, width):
    line = cut(text, width)
    assert line.isprintable() and len(line) <= width


@SETTINGS
@given(TEXT)
@example('"""')
@example("ends in a quote\"")
@example("ends in a backslash\\")
@example("\\N{bad name} \\x \\u12")
def test_docstring_text_cannot_close_its_literal_and_reads_back(text):
    inside = source_text(text, quote='"')
    assert inside.isprintable()
    for quotes in ('"""', '"'):
        module = ast.parse(f"def f():\n    {quotes}{inside}{quotes}\n    return 1\n")
        assert [node.name for node in module.body] == ["f"]
        assert module.body[0].body[0].value.value == text
        assert len(module.body[0].body) == 2


@SETTINGS
@given(TEXT)
@example("\u0303x")  # v + a combining tilde is ṽ once Python normalizes it
@example("ﬁ")
def test_identifier_is_the_name_python_reads(text):
    name = identifier(text)
    assert name.isidentifier() and not keyword.iskeyword(name)
    assert unicodedata.normalize("NFKC", name) == name
    assert ast.parse(f"{name} = 1").body[0].targets[0].id == name


@SETTINGS
@given(TEXT, TEXT)
def test_a_users_line_is_quoted_on_one_line(filename, line):
    linecache.cache[filename] = (len(line), None, ["first\n", line], filename)
    try:
        for lineno in (1, 2, 3):
            assert user_line((filename, lineno)).isprintable()
    finally:
        linecache.cache.pop(filename, None)


# ----- the generated module -----

def _f(x, y):
    a = tf.tanh(x) * y
    return tf.reduce_sum(a)


def _with_file(fn, filename, name=None):
    """fn, its code naming `filename` (as compile(source, filename) makes it)."""
    copy = types.FunctionType(fn.__code__.replace(co_filename=filename), fn.__globals__,
                              fn.__name__)
    copy.__name__ = name if name is not None else fn.__name__
    return copy


def _spec(fn, *args):
    """fn's value-and-gradient module, traced and generated (not compiled)."""
    leaves = tree_flatten((args, {}))[0]
    _, generate = compiler.trace_kernel(fn, "value_and_grad", args, {}, leaves, None, wrt=0,
                                        parallel=False, as_eager=False)
    return generate()


def _generated(fn, *args):
    return _spec(fn, *args).source


def _defined(source):
    """The names the module binds at its top level (and, through exec, nothing else)."""
    module = ast.parse(source)
    names = []
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [a.asname or a.name.split(".")[0] for a in node.names]
        else:
            names.append(type(node).__name__)
    return names


X, Y = np.linspace(-1.0, 1.0, 3), np.ones(3)
PLAIN = _generated(_with_file(_f, "plain.py"), X, Y)


@SETTINGS
@given(TEXT)
@example(INJECTION)
def test_a_file_name_changes_comments_only(filename):
    linecache.cache.pop(filename, None)  # no source lines: the comment quotes the name
    source = _generated(_with_file(_f, filename), X, Y)
    assert ast.dump(ast.parse(source)) == ast.dump(ast.parse(PLAIN))
    assert len(_comments(source)) == len(_comments(PLAIN))


@SETTINGS
@given(TEXT, TEXT)
@example("<odd>", INJECTION.replace("\n", "\r"))
def test_a_source_line_stays_in_its_comment(filename, line):
    linecache.cache[filename] = (len(line), None, ["def _f(x, y):\n", line, line], filename)
    try:
        source = _generated(_with_file(_f, filename), X, Y)
    finally:
        linecache.cache.pop(filename, None)
    compile(source, "<generated>", "exec")
    assert _defined(source) == _defined(PLAIN)
    assert len(_comments(source)) == len(_comments(PLAIN))


@SETTINGS
@given(TEXT)
@example(INJECTION)
@example('""" + ')
def test_a_function_name_becomes_identifiers(name):
    spec = _spec(_with_file(_f, "plain.py", name=name), X, Y)
    compile(spec.source, "<generated>", "exec")
    base, plain = spec.func_name.removesuffix("__value_and_grad"), identifier(_f.__name__)
    assert base.isidentifier() and unicodedata.normalize("NFKC", base) == base
    assert _defined(spec.source) == [base + n[len(plain):] if n.startswith(plain + "_")
                                     else n for n in _defined(PLAIN)]
    kernel = next(node for node in ast.parse(spec.source).body
                  if isinstance(node, ast.FunctionDef) and node.name == spec.func_name)
    assert ast.get_docstring(kernel).startswith(f"srcxform: {base}(")


def _g(x, d, v):
    return tf.reduce_sum(tf.tanh(x) * d["k"] * v)


@SETTINGS
@given(TEXT, TEXT)
@example(INJECTION, INJECTION)
def test_dict_keys_and_variable_names_stay_data(key, variable_name):
    def reading(key):  # g reads key from its closure: the warm entry checks it (a probe)
        def g(x, d, v):
            return tf.reduce_sum(tf.tanh(x) * d[key] * v)
        return g

    variable = tf.Variable(np.ones(3), name=variable_name or "v")
    source = _generated(reading(key), X, {key: Y}, variable)
    compile(source, "<generated>", "exec")
    assert _defined(source) == _defined(_generated(reading("k"), X, {"k": Y}, variable))
    assert key in {node.value for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Constant)}


# ----- end to end: the reproducer, compiled -----

def test_a_file_name_that_is_code_is_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("X", raising=False)
    namespace = {"tf": tf}
    exec(compile("def f(x):\n    return tf.tanh(x) * 3.0\n", INJECTION, "exec"), namespace)  # noqa: S102
    f = tf.differentiable(namespace["f"], wait=True)
    np.testing.assert_array_equal(np.asarray(f(np.zeros(3))), np.zeros(3))
    assert not os.path.exists("PWNED") and "X" not in os.environ
