"""The rule glossary: one line per rule with its paper, read from the rules' docstrings, shown
verbatim in docs/reference.md ("The residual rules"), and every paper it cites listed in
docs/design.md's References."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import geolab
from geolab.registry import unregister
from geolab.rules import RESIDUALS, glossary, glossary_markdown, register

REPO = Path(__file__).resolve().parents[1]
ARXIV = re.compile(r"arXiv:(\d{4}\.\d{5})")
OWN = [name for name, cls in RESIDUALS.items() if cls.__module__.startswith("geolab.rules.")]


def test_every_geolab_rule_has_an_update_and_an_arxiv_paper():
    rows = glossary(OWN)
    assert len(rows) == 19
    for name, update, paper in rows:
        assert re.search(r"``[^`]+``", update), name  # the update as an equation
        assert ARXIV.search(paper) and re.search(r"\b20\d\d\b", paper), name


def test_every_cited_paper_is_in_the_design_references():
    references = (REPO / "docs" / "design.md").read_text().split("## References", 1)[1]
    cited = {m for _, _, paper in glossary(OWN) for m in ARXIV.findall(paper)}
    assert cited and cited <= set(ARXIV.findall(references))


def test_the_reference_shows_the_glossary_as_the_code_prints_it():
    """One table, under "## The residual rules" of docs/reference.md; after adding a rule, paste
    ``geolab.glossary_markdown()`` there."""
    reference = (REPO / "docs" / "reference.md").read_text()
    section = reference.split("\n## The residual rules\n", 1)[1].split("\n## ", 1)[0]
    assert geolab.glossary_markdown(OWN) in section


def test_glossary_of_a_rule_without_a_paper_and_of_an_unknown_name():
    class Plain(geolab.Rule):
        def forward(self, x, sublayer):
            return x + sublayer(x)

    Plain.__doc__ = "Plain residual |x| + F,\n    no paper.\n\n    More text."
    register("glossary_plain")(Plain)
    try:
        assert glossary(["glossary_plain"]) == [
            ("glossary_plain", "Plain residual |x| + F, no paper.", "")
        ]
        row = glossary_markdown(["glossary_plain"]).splitlines()[-1]
        assert row == "| `glossary_plain` | Plain residual \\|x\\| + F, no paper. |  |"
    finally:
        unregister("glossary_plain")
    with pytest.raises(ValueError, match="'nope' is not registered"):
        glossary(["nope"])


def test_citations_name_papers_not_the_unshipped_seed_documents():
    # the project's seed notes are not in the repository: cite the papers (docs/design.md)
    seed_ref = re.compile(r"seed 00\d|seed documents?|the review's", re.I)
    folders = ["geolab", "notebooks", "assignments", "docs", "scripts", "tests", "bench", "data"]
    paths = [*REPO.glob("*.md")] + [
        p for f in folders for ext in ("*.py", "*.md") for p in (REPO / f).rglob(ext)
    ]
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in paths
        if path.name != "test_glossary.py"
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if seed_ref.search(line)
    ]
    assert len(paths) > 100 and offenders == []


def test_the_registry_imports_nothing_of_geolab():
    """No import circle (config -> registry -> rules -> registry): the rules import the registry,
    never the reverse; the package hands the registry the loader of geolab's own rules."""
    tree = ast.parse((REPO / "geolab" / "registry.py").read_text())
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert imported and not [name for name in imported if name.startswith("geolab")]


def test_a_fresh_config_finds_geolab_s_rules_and_importing_it_loads_no_torch():
    """``import geolab.config`` loads neither torch nor the rules; the first config loads them."""
    code = (
        "import sys\nimport geolab.config\n"
        "early = [m for m in ('torch', 'geolab.rules') if m in sys.modules]\n"
        "cfg = geolab.config.GeoConfig(residual='edelta', vocab_size=8)\n"
        "print(early, cfg.residual, 'geolab.rules' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[] edelta True", done
