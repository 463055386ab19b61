"""The README's and the guides' commands (README.md and docs/*.md): every one uses the venv's
programs (the one convention they state), every `geolab` command line parses with geolab's own
parser, the CPU training examples are CPU-sized (the paper-sized ones are marked GPU), every
output folder they name is one git ignores (so following them leaves `make test` green and
`git status` clean), the "Your own residual rule" example runs as printed and learns its task.
The README is a front page: short, the two commands first, every notebook on the learning path,
every guide linked; every relative link of the pages resolves, #anchors included."""

import os
import re
import runpy
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from conftest import REPO

from geolab.cli import build_parser
from geolab.cli.args import geo_config
from geolab.data import bundled_dir
from geolab.model import param_count
from geolab.rules import unregister
from geolab.tasks import get_task

README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TEXT = "\n".join(page.read_text() for page in PAGES)
PREFIXES = (".venv/bin/", "make ", "scripts/", "bash scripts/", "#")
# steps × batch × positions × parameters: the first CPU example is 1.4e11 (≈ 45 CPU seconds),
# the paper-sized gyroscope run 5.9e13 (about a day on 2 cores)
CPU_BUDGET = 1e12


def blocks(lang: str, text: str = TEXT) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def commands(text: str = TEXT) -> list[tuple[str, str]]:
    """(command, the comment line above it) of every bash block; an indented line continues
    the command above it (after a trailing backslash or not), ``[...]`` marks optional flags
    (left out), ``#`` starts a comment."""
    out = []
    for block in blocks("bash", text):
        comment = ""
        for line in block.splitlines():
            if line.startswith("#"):
                comment = line
            elif line.startswith(" ") and out:
                out[-1] = (out[-1][0].removesuffix("\\").rstrip() + " " + line.strip(), out[-1][1])
            elif line.strip():
                out.append((line, comment))
                comment = ""
    return [(re.sub(r"\[[^]]*\]", "", cmd.split(" #")[0]).strip(), c) for cmd, c in out]


def geolab_argv(cmd: str) -> list[str] | None:
    """The argument list after ``geolab`` / ``-m geolab``, or None for another program."""
    words = shlex.split(cmd)
    for i, w in enumerate(words):
        if w == ".venv/bin/geolab" or (w == "geolab" and i and words[i - 1] == "-m"):
            return words[i + 1 :]
    return None


def test_every_command_uses_the_venv():
    bare = [cmd for cmd, _ in commands() if not cmd.startswith(PREFIXES)]
    assert not bare, f"commands without .venv/bin/ (the pages' convention): {bare}"


def test_every_geolab_command_parses():
    argvs = [a for a in (geolab_argv(cmd) for cmd, _ in commands()) if a is not None]
    assert len(argvs) >= 15
    for argv in argvs:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"`geolab {' '.join(argv)}` does not parse")


def test_cpu_training_examples_are_cpu_sized_and_gpu_ones_are_marked():
    sized = {}
    for cmd, comment in commands():
        argv = geolab_argv(cmd)
        if argv is None or argv[0] != "train":
            continue
        args = build_parser().parse_args(argv)
        options = {k: getattr(args, k) for k in ("seq_len", "n_train", "n_val")}
        options = {k: v for k, v in options.items() if v is not None}
        if args.task in ("shakespeare", "wikitext2"):
            options["data_dir"] = args.data_dir or bundled_dir(args.task)
            if args.task == "wikitext2":  # only its sizes matter here: a stand-in vocabulary
                continue
        task = get_task(args.task, seed=args.seed, **options)
        cfg = geo_config(args, **task.model_fields())
        cost = args.steps * args.batch_size * task.seq_len * param_count(cfg)
        sized[cmd] = cost
        if comment.startswith("# GPU"):
            assert cost > CPU_BUDGET, f"marked GPU but CPU-sized: {cmd}"
        else:
            assert cost <= CPU_BUDGET, f"paper-sized example not marked '# GPU': {cmd}"
            assert re.search(r"≈ \d+ s", comment), f"no stated time above: {cmd}"
    assert sum(c <= CPU_BUDGET for c in sized.values()) >= 3


def test_the_own_rule_example_runs_as_printed(tmp_path, monkeypatch, capsys):
    """Both Python blocks of "Your own residual rule", written and run as a user would."""
    rule, script = (b for b in blocks("python") if "scaled_preln" in b)
    assert rule.startswith("# my_rules.py\n")
    (tmp_path / "my_rules.py").write_text(rule)
    (tmp_path / "run.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        env = runpy.run_path(str(tmp_path / "run.py"))
    finally:
        unregister("scaled_preln")
        sys.modules.pop("my_rules", None)
    assert env["result"].metrics["acc"] == 1.0  # what the README's comment promises
    assert "'acc': 1.0" in capsys.readouterr().out


def test_the_first_example_runs_as_written_on_one_thread(tmp_path):
    """The README's first command after `make`, as a user types it, at 3 steps instead of 200
    (its time is quoted for one thread, geolab's default: docs/reference.md "Threads")."""
    first = next(cmd for cmd, _ in commands(README) if (geolab_argv(cmd) or [""])[0] == "train")
    argv = geolab_argv(first)
    assert (
        argv[argv.index("--steps") + 1] == "200" and argv[argv.index("--out") + 1] == "runs/first"
    )
    argv[argv.index("--steps") + 1] = "3"
    venv = REPO / ".venv" / "bin" / "geolab"
    program = [str(venv)] if venv.exists() else [sys.executable, "-m", "geolab"]
    env = {k: v for k, v in os.environ.items() if k not in ("GEOLAB_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run(
        [*program, *argv, "--no-progress"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "with 1 CPU thread -> runs/first" in done.stdout
    assert "done: step 3  mse " in done.stdout
    assert (tmp_path / "runs" / "first" / "ckpt.pt").exists()


# --- where the examples write ------------------------------------------------------------------

# Outputs inside the repository that are committed on purpose: a command writing there rewrites
# them deliberately (the `git diff` is the point), each with the words that say so.
DELIBERATE = {
    "data/results": ("--force", "--readme"),  # the committed small-scale results
    "notebooks/assignments": ("release",),  # the student release built from the instructor's
    "bench": ("bench",),  # bench/RESULTS.md, the committed benchmark table
    "docs": ("screenshots",),  # the front page's picture
}
OUT_FLAG = re.compile(r"--out[ =](\S+)")


def output_path(cmd: str) -> str | None:
    """Where a command writes inside the repository (its ``--out``, or the default of geolab's
    own parser when it names none), relative to the root; None for a read-only command or a
    path outside the repository."""
    argv = geolab_argv(cmd)
    if argv is not None:
        args = build_parser().parse_args(argv)
        out = getattr(args, "out", None)
        if argv[0] == "train" and out is None:  # the trainer's default run folder
            out = f"runs/{args.task}-{args.residual}-s{args.seed}"
        elif argv[0] == "bench" and out is None:
            out = "bench"
        if argv[0] == "reproduce" and (args.list or args.dry_run):
            out = None  # lists or estimates, writes nothing
    elif "python -m bench " in cmd + " " and not cmd.split()[2:3] == ["-m", "bench.profile"]:
        match = OUT_FLAG.search(cmd)
        out = match.group(1) if match else "bench"
    elif cmd.startswith("make screenshots"):
        out = "docs"
    else:
        match = OUT_FLAG.search(cmd)
        out = match.group(1) if match else None
    if out is None or Path(out).is_absolute():
        return None
    return Path(out).as_posix().rstrip("/")


def ignored(path: str) -> bool:
    """Whether git ignores ``path`` (a file or a folder: a file inside it is asked about)."""
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", f"{path}/x", path],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: none ignored; 128: git failed
    return done.returncode == 0


def test_every_example_writes_where_git_ignores_it_or_says_it_rewrites_committed_files():
    """Following the pages leaves `git status` clean and the tests green (issue 53): a user's
    outputs land in ignored folders (runs/, build/, ...), and only the listed commands rewrite
    committed files, each with the flag or command that makes it deliberate."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    outs = [(cmd, output_path(cmd)) for cmd, _ in commands()]
    outs = [(cmd, out) for cmd, out in outs if out is not None]
    assert len(outs) >= 15
    stray, deliberate = [], set()
    for cmd, out in outs:
        if ignored(out):
            continue
        home = next((d for d in DELIBERATE if out == d or out.startswith(d + "/")), None)
        if home and any(word in cmd for word in DELIBERATE[home]):
            deliberate.add(home)
        else:
            stray.append(f"{out}  <- {cmd}")
    assert stray == [], "outputs git does not ignore:\n" + "\n".join(stray)
    assert deliberate == {"data/results", "notebooks/assignments", "bench", "docs"}


def test_the_output_check_tells_ignored_from_tracked_folders():
    assert ignored("runs/first") and ignored("results") and ignored("build/ipynb")
    assert not ignored("data/results") and not ignored("geolab")
    train = ".venv/bin/geolab train --task copy --residual preln"
    assert output_path(train) == "runs/copy-preln-s42"
    assert output_path(".venv/bin/geolab reproduce ablation --scale tiny") == "results"
    assert output_path(".venv/bin/geolab reproduce --list") is None
    assert output_path(".venv/bin/python -m bench --quick --out /tmp/b") is None


# --- the front page -----------------------------------------------------------------------------


def test_the_readme_is_a_front_page():
    """≤ 250 lines; `make tour` and `make test` before any text; every notebook of notebooks/ on
    the learning path (one table row each); the three doors, each linking its guide."""
    lines = README.splitlines()
    assert len(lines) <= 250
    opening = "\n".join(lines[:8])
    assert "make tour" in opening and "make test" in opening
    path = README.split("## The learning path", 1)[1].split("\n## ", 1)[0]
    for notebook in sorted((REPO / "notebooks").glob("[0-9]*.py")):
        assert re.search(rf"^\| \S+ \| `{notebook.stem}` \|", path, re.M), notebook.name
    for door, guides in {
        "Learn": ["docs/learning.md"],
        "Teach": ["docs/teaching.md"],
        "Research": ["docs/training.md", "docs/reproducing.md"],
    }.items():
        section = README.split(f"\n## {door}\n", 1)[1].split("\n## ", 1)[0]
        for guide in guides:
            assert f"]({guide})" in section, (door, guide)


# --- links ---------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation and symbols dropped, spaces to
    hyphens (``## The grader's sandbox`` -> ``the-graders-sandbox``)."""
    kept = "".join(
        c for c in heading.strip().lower() if c in " -_" or unicodedata.category(c)[0] in "LNM"
    )
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a markdown page (outside code blocks; repeats get -1, -2, ...)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file or #anchor does not exist."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not relative
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            bad.append(f"{page.name}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            bad.append(f"{page.name}: {target} (no such heading)")
    return bad


def test_every_relative_link_resolves():
    assert len(PAGES) >= 6
    assert [bad for page in PAGES for bad in broken_links(page)] == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## The grader's sandbox\n\n## Two\n\n## Two\n")
    page.write_text(
        "[ok](other.md#the-graders-sandbox) [ok](other.md#two-1) [x](https://example.org/#y)\n"
        "[gone](nope.md) [bad](other.md#threads) ![pic](other.md)\n"
        "```bash\n# [not a link](nope.md)\n```\n"
    )
    assert broken_links(page) == [
        "page.md: nope.md (no such file)",
        "page.md: other.md#threads (no such heading)",
    ]
    assert slug("Two flavors of the E∆ table's models") == "two-flavors-of-the-e-tables-models"
