"""Build Jupyter tutorials from the marimo notebooks 00–05 (with 02b and 03b) and 08:
``python scripts/make_ipynb.py [OUT_DIR]`` (default build/ipynb; ``--no-execute`` skips running).

Each tutorial is Jupyter-native: the notebook's prose as markdown cells (the same text, read from
the marimo file, so the two cannot drift apart), and where the marimo notebook has its sliders a
code cell showing the matching ``geolab.widgets`` explorer (ipywidgets sliders, plotly figures,
the same ``geolab.explore`` numbers). The tutorials are executed here with nbclient, so a saved
file opens with every figure drawn: the explorer's static fallback (plotly's JSON mime type, drawn
offline by JupyterLab). The widget state is not stored: plotly's FigureWidget carries
plotly.js in it (about 5 MB a figure). marimo-only parts (the predict-first
questions, notebook 04's compare-all button) are left out and named in the first cell.
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from traitlets.config import Config

from geolab import explore
from geolab.outputs import replace_atomically
from geolab.terms import term

REPO = Path(__file__).resolve().parents[1]
EXPLORERS = {
    "00_tour": "delta_explorer",
    "01_delta_operator": "delta_explorer",
    "02_mgt_block": "mgt_explorer",
    "02b_mgt_gates": "mgt_explorer",
    "03_cayley_householder": "cayley_explorer",
    "03b_hybrid": "cayley_explorer",
    "04_rank_collapse": "rank_explorer",
    "05_streams": "spectrum_explorer",
    "08_gradients": "gradient_explorer",
}
# what makes a cell the notebook's controls: a slider, or the MGT sliders 02 and 02b share
CONTROLS = ("mo.ui.slider", "explore.mgt_sliders(")
HEADER = (
    "> Jupyter edition of `notebooks/{name}.py`, built by `make notebooks-ipynb`. The explorer "
    "below has the marimo notebook's sliders, readout and plots. The marimo notebook "
    "(`make tour`) also asks you to predict before each plot answers{extra}."
)


def prose(node: ast.expr) -> str | None:
    """The text of ``mo.md``'s argument when it is literal prose: a string, or strings joined
    with ``+`` to glossary hovers ``term("word"[, "Shown"])`` (``geolab.terms``, the same
    definitions as the marimo page), or a prose constant of ``geolab.explore``; None for anything
    computed (an f-string readout)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = prose(node.left), prose(node.right)
        return None if left is None or right is None else left + right
    if (  # shared prose, e.g. explore.BETA0_NOTE (02 and 02b)
        isinstance(node, ast.Attribute)
        and ast.unparse(node.value) == "explore"
        and node.attr.isupper()
        and isinstance(text := getattr(explore, node.attr, None), str)
    ):
        return text
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "term"
        and not node.keywords
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return term(*(a.value for a in node.args))
    return None


def cells_of(path: Path) -> list[tuple[str, str]]:
    """The marimo notebook's prose ("md", text) and the place of its first slider ("explorer", "")
    in cell order. Only literal ``mo.md(r\"\"\"…\"\"\")`` prose is taken, with its glossary
    hovers (``prose``; f-strings are computed readouts, which the explorer shows)."""
    out, placed = [], False
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as err:
        why = getattr(err, "strerror", None) or type(err).__name__
        raise ValueError(f"{path}: cannot be read as a marimo notebook ({why})") from None
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        source = ast.unparse(node)
        if any(c in source for c in CONTROLS) and not placed:
            out.append(("explorer", ""))
            placed = True
        for stmt in node.body:
            call = getattr(stmt, "value", None)
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(call, ast.Call)
                and ast.unparse(call.func) == "mo.md"
                and call.args
                and (text := prose(call.args[0])) is not None
            ):
                out.append(("md", textwrap.dedent(text).strip()))
    return out


def tutorial(name: str) -> nbformat.NotebookNode:
    explorer = EXPLORERS[name]
    extra = (
        "; notebook 04 also compares every rule at once (notebook 09 draws the committed"
        " trained runs)"
        if name == "04_rank_collapse"
        else ""
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(nbformat.v4.new_markdown_cell(HEADER.format(name=name, extra=extra)))
    for kind, text in cells_of(REPO / "notebooks" / f"{name}.py"):
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(text))
        else:
            code = f"from geolab.widgets import {explorer}\n\n{explorer}()"
            nb.cells.append(nbformat.v4.new_code_cell(code))
    return nb


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh kernel with this repository's geolab first on the path."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
    )
    # IPC sockets in a private folder, not TCP on localhost: ipykernel warns that a TCP kernel's
    # traffic is unencrypted, and nothing here needs the network
    with tempfile.TemporaryDirectory(prefix="geolab-kernel-") as sockets:
        ipc = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "k")}})
        NotebookClient(  # it starts the kernel, and shuts it down when done
            nb,
            config=ipc,
            kernel_name="python3",
            timeout=600,
            store_widget_state=False,
            resources={"metadata": {"path": str(REPO)}},
        ).execute()
    return nb


USAGE = "usage: python scripts/make_ipynb.py [--no-execute] [OUT_DIR]"


def parse(argv: list[str], flags: tuple[str, ...], most: int, usage: str) -> tuple[set, list]:
    """(the flags given, the positional arguments); ValueError for an unknown option (never a
    folder named --bogus) or more than ``most`` positional arguments."""
    given = {a for a in argv if a.startswith("-")}
    unknown = sorted(given - set(flags))
    if unknown:
        raise ValueError(f"{unknown[0]} is not an option; {usage}")
    args = [a for a in argv if not a.startswith("-")]
    if len(args) > most:
        raise ValueError(f"{' '.join(args)}: at most {most} folder(s); {usage}")
    return given, args


def write_all(pages: dict[Path, str]) -> None:
    """Write every page (path -> text), each through a temporary file renamed over it; a write
    that fails (a full disk) removes its temporary file and raises ValueError naming it."""
    for path, text in pages.items():
        try:
            replace_atomically(path, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))
        except OSError as err:
            raise ValueError(f"cannot write {path} ({err.strerror})") from None
        print(f"wrote {path}")


def run(prog: str, build, argv: list[str]) -> int:
    """``build(argv)``, or one line ``prog: error: ...`` and exit status 2 for a ValueError."""
    try:
        return build(argv)
    except ValueError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2


def main(argv: list[str]) -> int:
    """Check the flags and every output path, build (and run) every page, then write them: a
    bad flag, output or source costs one line before anything is written."""
    from geolab.outputs import check_dir, check_file

    given, args = parse(argv, ("--no-execute",), 1, USAGE)
    out = check_dir(Path(args[0]) if args else REPO / "build" / "ipynb", "OUT_DIR")
    paths = {name: check_file(out / f"{name}.ipynb", "OUT_DIR") for name in EXPLORERS}
    pages = {}
    for name, path in paths.items():
        nb = tutorial(name)
        if "--no-execute" not in given:
            try:
                execute(nb)
            except Exception as err:  # noqa: BLE001 (nbclient raises its own kinds; named here)
                last = (str(err).strip().splitlines() or [type(err).__name__])[-1]
                raise ValueError(f"{name}: a cell failed while running ({last[-300:]})") from None
        pages[path] = nbformat.writes(nb)
    out.mkdir(parents=True, exist_ok=True)
    write_all(pages)
    return 0


if __name__ == "__main__":
    raise SystemExit(run("make_ipynb", main, sys.argv[1:]))
