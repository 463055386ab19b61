"""Pasted reference code: which functions of a submission reproduce geolab's own reference.

The sandbox hides the code of the functions an A3/A4 student re-creates (``Assignment.hidden``),
but students have the package: its source can be pasted into the notebook, and a pasted copy
passes every check. The grader cannot tell it from the student's own work by its outputs, so it
compares the code: each function of the submission against each hidden reference function, by
structure — the sequence of syntax nodes, attribute names and numeric constants, with local
names, comments and docstrings left out, so renaming variables or rewording comments does not
hide a copy. A submission whose function is at least ``SIMILAR`` alike (difflib's ratio) to a
reference function of at least ``MIN_NODES`` nodes is flagged for the teacher to read; its
score is not changed (a short function can only be written a few ways). The instructor's own
solutions are at most 0.63 alike (measured; ``tests/test_grade_adversarial.py`` keeps them
below the line), a copy with renamed names is 1.0.
"""

import ast
import difflib
import importlib
import inspect
import textwrap
import threading
from functools import cache

from geolab.assignments.catalog import get

SIMILAR = 0.8
MIN_NODES = 60  # a reference this short is written the same way by anyone who writes it


def shape(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The structure of one function's body (its docstring left out): each node's type,
    attribute names and non-string constants, in breadth-first order per statement."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:] if isinstance(body[0].value.value, str) else body
    tokens = []
    for statement in body:
        for node in ast.walk(statement):
            tokens.append(type(node).__name__)
            if isinstance(node, ast.Attribute):
                tokens.append("." + node.attr)
            elif isinstance(node, ast.Constant) and not isinstance(node.value, str):
                tokens.append(repr(node.value))
    return tokens


def _functions(tree: ast.AST) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _resolve(dotted: str):
    """The object a dotted name (module path, then attributes) names in the real package."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


_PARSING = threading.Lock()


def parse(text: str) -> ast.Module:
    """``ast.parse(text)``, one thread at a time. CPython 3.11 keeps the count of the AST
    converter's recursion in the interpreter, shared by every thread, so two grading threads
    parsing at once can unbalance each other's count: the parse then fails with SystemError
    ("AST constructor recursion depth mismatch") on an honest file."""
    with _PARSING:
        return ast.parse(text)


@cache
def references(assignment: str) -> dict[str, list[str]]:
    """{dotted name: structure} of the reference functions ``assignment`` hides, long enough
    to compare."""
    found = {}
    for name in get(assignment).hidden:
        source = textwrap.dedent(inspect.getsource(_resolve(name)))
        tokens = shape(_functions(parse(source))[0])
        if len(tokens) >= MIN_NODES:
            found[name] = tokens
    return found


def pasted(text: str, assignment: str) -> list[str]:
    """One line per function of the submission ``text`` that reproduces a hidden reference
    function of ``assignment`` ("`forward` is 0.97 alike to geolab's …"); [] for none, or
    when the text does not parse (the load reports that)."""
    refs = references(assignment)
    if not refs:
        return []
    try:
        tree = parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # a file nested too deeply to parse is refused by grade.unparsable
    lines = []
    for fn in _functions(tree):
        tokens = shape(fn)
        for name, ref in refs.items():
            if not 0.5 * len(ref) <= len(tokens) <= 2 * len(ref):
                continue  # difflib's ratio cannot reach SIMILAR across this size gap
            match = difflib.SequenceMatcher(None, tokens, ref, autojunk=False)
            if match.quick_ratio() < SIMILAR:  # an upper bound of ratio(), in linear time
                continue
            if (ratio := match.ratio()) >= SIMILAR:
                lines.append(f"`{fn.name}` (line {fn.lineno}) is {ratio:.2f} alike to geolab's "
                             f"`{name}`: pasted reference code? read it")  # fmt: skip
    return lines
