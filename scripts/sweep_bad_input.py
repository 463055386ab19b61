"""A repeatable bad-input sweep of the geolab command line: every flag of every subcommand, run
with a set of bad values, each case one fresh ``python -m geolab`` process, classified.

    nice -n 15 .venv/bin/python scripts/sweep_bad_input.py --out build/sweep
    nice -n 15 .venv/bin/python scripts/sweep_bad_input.py --only train --jobs 2
    git worktree add /tmp/old 5d4cb66      # an older commit, run with this venv:
    nice -n 15 .venv/bin/python scripts/sweep_bad_input.py --geolab-root /tmp/old --out old
    .venv/bin/python scripts/sweep_bad_input.py --compare old.json build/sweep.json

The cases come from the CLI itself: the script builds geolab's argparse parser
(``geolab.cli.build_parser``; a lazy subcommand's flags are filled first), so a new flag is
swept without editing this file. Each flag gets the bad values of its kind:

    int     -1, 0, 10**30
    float   nan, inf, -1, 1e308, 4.9e-324
    choice  a word not among the choices
    text    the empty string, unicode with control characters, 5000 characters
    path    a file, a folder, a missing path, an unwritable path (/sys/kernel), the empty
            string, a path under a file, a 300-character name
    list    (nargs="+" or repeatable) the empty string, a word, unicode with control characters
    switch  the switch alone, added to the base command

A case is the subcommand's tiniest valid command (``BASES``: train runs 2 steps of a 1-layer
model) with that one flag set to that one value. It runs in its own temporary folder (the cwd,
holding a file ``afile`` and an empty folder ``adir``) with HF_HUB_OFFLINE=1,
HF_DATASETS_OFFLINE=1, OMP_NUM_THREADS=1 and PYTHONPATH=--geolab-root, under a timeout. Each
subcommand's base command alone is a case too (kind ``base``: it must be ``accepted``).

Classes:
    one-line   exit 2 and one stderr line naming the flag (argparse's usage block before its
               error line is not counted: every argparse tool prints it)
    accepted   exit 0, no nan or inf printed
    traceback  "Traceback" on stderr
    nan        nan or inf printed where a number was, with exit 0 or 1
    timeout    still running after --timeout seconds (killed with its children)
    other      any other exit status, or an exit 2 whose error is several lines or does not
               name the flag

Excluded: ``--help``. Nothing needs a browser. ``bench``'s accepted cases take about 12 s each
(its quickest module); ``train --compile`` compiles (tens of seconds) and has a longer
timeout. ``reproduce`` is based on ``--dry-run`` except for the flags in ``REAL_FLAGS``, which a
dry run refuses outright: those run a 1-step, 1-seed rank_evolution.

Output: ``OUT.json`` (every case: command, exit status, class, seconds, the ends of stdout and
stderr) and ``OUT.csv`` (one row per case), then counts per class on stdout and the cases that
are not ``one-line`` or ``accepted``.
"""

import argparse
import csv
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

INT_VALUES = ["-1", "0", str(10**30)]
FLOAT_VALUES = ["nan", "inf", "-1", "1e308", "4.9e-324"]
CHOICE_VALUES = ["abc"]
TEXT_VALUES = ["", "θ\x1b[8m\r", "x" * 5000]
PATH_VALUES = ["afile", "adir", "missing/deeper/x", "/sys/kernel/geolab-sweep", "", "afile/sub"]
PATH_VALUES += ["x" * 300]
LIST_VALUES = ["", "abc", "θ\x1b[8m\r"]
VALUES = {
    "int": INT_VALUES,
    "float": FLOAT_VALUES,
    "choice": CHOICE_VALUES,
    "text": TEXT_VALUES,
    "path": PATH_VALUES,
    "list": LIST_VALUES,
    "switch": [None],
}

# a flag whose dest, metavar or help says so takes a path
PATH_WORDS = r"_dir\b|\bDIR\b|\bCSV\b|folder|directory"

# The tiniest valid command of each subcommand: positionals, then {flag: value}; None is a
# switch. "{root}" is --geolab-root.
TINY_MODEL = {"--layers": "1", "--d-model": "16", "--heads": "2"}
BASES = {
    "info": ([], {}),
    "tasks": ([], {}),
    "rank": ([], {**TINY_MODEL, "--seq-len": "4"}),
    "train": (
        [],
        {
            "--task": "gyroscope",
            **TINY_MODEL,
            "--steps": "2",
            "--warmup": "1",
            "--batch-size": "4",
            "--n-train": "16",
            "--n-val": "4",
            "--device": "cpu",
            "--no-progress": None,
            "--out": "run",
        },
    ),
    "grade": (["subs"], {"--assignment": "A1", "--out": "gb.csv", "--timeout": "5"}),
    "release": ([], {"--src": "{root}/assignments/instructor", "--out": "rel"}),
    "reproduce": (["ablation"], {"--scale": "tiny", "--dry-run": None, "--out": "res"}),
    "bench": ([], {"--quick": None, "--only": "memory", "--out": "bench-out"}),
}
# flags a dry run refuses whatever their value: swept on a real 1-step reproduce instead
REAL_FLAGS = {"--time-limit", "--fresh", "--force", "--yes", "--jobs", "--threads", "--data-dir"}
REAL_REPRODUCE = (
    ["rank_evolution"],
    {"--scale": "tiny", "--seeds": "1", "--steps": "1", "--no-png": None, "--out": "res"},
)
# flags that only matter with a text task: swept on tiny-shakespeare
TEXT_TASK_FLAGS = {"--data-dir", "--seq-len"}
SLOW = {("train", "--compile"): 240}  # seconds: a first compile on a CPU


def subparsers(root: Path) -> dict:
    """{name: its argparse parser, flags filled}, from geolab under ``root``."""
    sys.path.insert(0, str(root))
    from geolab.cli import build_parser

    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for sub in action.choices.values():
        if hasattr(sub, "_filled"):  # a LazyParser adds its flags on first use
            sub._filled()
    return dict(action.choices)


def flag_kind(action: argparse.Action) -> str | None:
    """The kind of values a flag takes (a key of VALUES), None for --help."""
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return None
    if action.nargs == 0:
        return "switch"
    if action.choices is not None:
        return "choice"
    if action.type in (int, float):
        return action.type.__name__
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):
        return "list"
    words = f"{action.dest} {action.metavar or ''} {action.help or ''}"
    if action.dest in ("out", "src") or re.search(PATH_WORDS, words):
        return "path"
    return "text"


def flag_name(action: argparse.Action) -> str:
    """What the user types: the long option, or a positional's metavar (else its dest)."""
    longs = [s for s in action.option_strings if s.startswith("--")]
    return longs[0] if longs else (action.metavar or action.dest)


def base_of(sub: str, flag: str) -> tuple[list, dict]:
    positionals, flags = BASES[sub]
    if sub == "reproduce" and flag in REAL_FLAGS:
        positionals, flags = REAL_REPRODUCE
    if sub == "train" and flag in TEXT_TASK_FLAGS:  # a text task takes no sample counts
        flags = {**flags, "--task": "shakespeare"}
        del flags["--n-train"], flags["--n-val"]
    return list(positionals), dict(flags)


def cases_of(sub: str, parser: argparse.ArgumentParser) -> list[dict]:
    """The base case and one case per (flag, bad value) of the subcommand ``sub``."""
    if sub not in BASES:
        raise SystemExit(f"sweep: subcommand {sub!r} has no base command in BASES; add one")
    cases = [{"sub": sub, "flag": "", "kind": "base", "value": None, "argv": argv(*BASES[sub])}]
    index = 0
    for action in parser._actions:
        kind = flag_kind(action)
        if kind is None:
            continue
        name = flag_name(action)
        for value in VALUES[kind]:
            pos, flg = base_of(sub, name)
            if action.option_strings:
                flg[name] = value
            else:
                pos[index] = value
            names = action.option_strings or [name, action.dest]
            case = {"sub": sub, "flag": name, "kind": kind, "value": value, "names": names}
            cases.append({**case, "argv": argv(pos, flg)})
        index += not action.option_strings
    return cases


def argv(positionals: list, flags: dict) -> list[str]:
    """The words after ``python -m geolab SUB``: a valued flag as ``--flag=value`` (so that
    "-inf" or "" stay its value)."""
    words = list(positionals)
    for flag, value in flags.items():
        words.append(flag if value is None else f"{flag}={value}")
    return words


def run_case(case: dict, root: Path, timeout: float) -> dict:
    """Run one case in a fresh temporary folder and classify it."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(root),
    }
    env.pop("GEOLAB_DATA", None)
    env.pop("GEOLAB_CACHE", None)
    limit = SLOW.get((case["sub"], case["flag"]), timeout)
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        (Path(tmp) / "afile").write_text("a file, not a folder\n")
        (Path(tmp) / "adir").mkdir()
        (Path(tmp) / "subs").mkdir()
        (Path(tmp) / "subs" / "alice.py").write_text("x = 1\n")
        words = [w.replace("{root}", str(root)) for w in case["argv"]]
        command = [sys.executable, "-m", "geolab", case["sub"], *words]
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout kills its children too
        )
        try:
            out, err = proc.communicate(timeout=limit)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            rc = None
        seconds = time.monotonic() - start
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    result = {**case, "rc": rc, "seconds": round(seconds, 2), "stdout": out[-2000:]}
    result["stderr"] = err[:1000] + err[1000:][-9000:]
    result["class"] = classify(rc, out, err, case.get("names", []))
    return result


CLASSES = ("one-line", "accepted", "traceback", "nan", "timeout", "other")
GOOD = ("one-line", "accepted")
NAN = re.compile(r"(?<![\w.])[-+]?(nan|inf)(?![\w])", re.IGNORECASE)


def error_lines(err: str) -> list[str]:
    """stderr's non-empty lines, without argparse's usage block (its first line starts with
    "usage:", the rest are indented)."""
    lines = [line for line in err.splitlines() if line.strip()]
    if lines and lines[0].startswith("usage:"):
        lines = [line for line in lines if not line.startswith(("usage:", " "))]
    return lines


# a config field whose flag is named otherwise (geolab.cli.errors.FIELD_FLAGS)
FIELDS = {"layers": "n_layer", "heads": "n_head", "out": "out_dir"}


def names_flag(line: str, names: list[str]) -> bool:
    """Whether ``line`` names the flag as typed (``--d-model``) or as its config field with a
    value (``d_model=1e+30``, ``batch 7``)."""
    flags = [n for n in names if n.startswith("-") or n.isupper()]
    fields = [n.lstrip("-").replace("-", "_") for n in names]
    fields += [FIELDS[f] for f in fields if f in FIELDS]
    flags += [f"argument {n}:" for n in names]  # argparse's words for a positional
    return any(re.search(re.escape(n) + r"(?![\w-])", line) for n in flags) or any(
        re.search(rf"(?<![\w-]){re.escape(f)}[= ]\S", line) for f in fields
    )


def classify(rc: int | None, out: str, err: str, names: list[str]) -> str:
    if rc is None:
        return "timeout"
    if "Traceback" in err:
        return "traceback"
    if rc in (0, 1) and NAN.search(out + err):
        return "nan"
    if rc == 0:
        return "accepted"
    lines = error_lines(err)
    if rc == 2 and len(lines) == 1 and (not names or names_flag(lines[0], names)):
        return "one-line"
    return "other"


def shown(value, kind: str = "") -> str:
    if kind == "base":
        return ""
    if value is None:
        return "(switch)"
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}…({len(value)} chars)"


def summary_line(r: dict) -> str:
    lines = error_lines(r["stderr"]) or r["stdout"].splitlines() or [""]
    where = f"{r['sub']} {r['flag']} {shown(r['value'], r['kind'])}".strip()
    return f"  {r['class']:<9} rc={r['rc']} {r['seconds']:>6.1f}s {where}: {lines[-1][:150]}"


def write_tables(results: list[dict], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    columns = ["sub", "flag", "kind", "value", "class", "rc", "seconds", "last_line"]
    with out.with_suffix(".csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for r in results:
            last = (error_lines(r["stderr"]) or [""])[-1]
            row = {**r, "value": shown(r["value"], r["kind"]), "last_line": last[:200]}
            writer.writerow([row[c] for c in columns])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--geolab-root", type=Path, default=REPO, help="checkout to sweep")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--only", action="append", metavar="SUBCMD", help="repeatable")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--out", type=Path, default=Path("build/sweep_bad_input"))
    parser.add_argument("--list", action="store_true", help="print the cases, run none")
    parser.add_argument(
        "--reclassify", type=Path, help="classify the cases of an earlier OUT.json again"
    )
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar="JSON", help="counts of two earlier tables"
    )
    args = parser.parse_args()
    if args.compare:
        compare(*[json.loads(path.read_text()) for path in args.compare], args.compare)
        return 0
    if args.reclassify:
        results = json.loads(args.reclassify.read_text())
        for r in results:
            if r["class"] not in ("timeout", "traceback"):  # stdout and stderr are cut
                r["class"] = classify(r["rc"], r["stdout"], r["stderr"], r.get("names", []))
        report(results, args.reclassify.with_suffix(""), None)
        return 0
    root = args.geolab_root.resolve()
    subs = subparsers(root)
    names = args.only or list(subs)
    unknown = sorted(set(names) - set(subs))
    if unknown:
        parser.error(f"--only {' '.join(unknown)}: not a subcommand; choose from {', '.join(subs)}")
    cases = [c for s in names for c in cases_of(s, subs[s])]
    if args.list:
        for c in cases:
            print(c["sub"], shlex.join(c["argv"]))
        return 0
    print(f"{len(cases)} cases over {', '.join(names)} against {root}", flush=True)
    start = time.monotonic()
    done = []

    def one(case: dict) -> dict:
        result = run_case(case, root, args.timeout)
        done.append(result)
        print(f"[{len(done)}/{len(cases)}]{summary_line(result)[1:]}", flush=True)
        return result

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one, cases))
    report(results, args.out, time.monotonic() - start)
    return 0


def case_key(r: dict) -> tuple:
    return r["sub"], r["flag"], json.dumps(r["value"])


def compare(old: list[dict], new: list[dict], names: list[Path]) -> None:
    """Counts per class of two sweeps side by side, per subcommand too, and every case (sub,
    flag, value) whose class changed."""
    subs = sorted({r["sub"] for r in old + new})
    print(f"{'class':<10} {names[0].stem:>16} {names[1].stem:>16}")
    for name in CLASSES:
        counts = [sum(r["class"] == name for r in rs) for rs in (old, new)]
        print(f"{name:<10} {counts[0]:>16} {counts[1]:>16}")
    print(f"{'cases':<10} {len(old):>16} {len(new):>16}")
    print("\nper subcommand, not one-line or accepted (before -> after):")
    for sub in subs:
        bad = [sum(r["sub"] == sub and r["class"] not in GOOD for r in rs) for rs in (old, new)]
        print(f"  {sub:<10} {bad[0]:>4} -> {bad[1]}")
    before = {case_key(r): r for r in old}
    print("\nchanged:")
    for r in new:
        was = before.get(case_key(r))
        if was is not None and was["class"] != r["class"]:
            print(f"  {was['class']:>9} -> {r['class']:<9} {r['sub']} {r['flag']} "
                  f"{shown(r['value'], r['kind'])}")  # fmt: skip


def report(results: list[dict], out: Path, wall: float | None) -> None:
    """Write the tables, print the counts per class and the cases to look at."""
    write_tables(results, out)
    counts = Counter(r["class"] for r in results)
    took = "" if wall is None else f" in {wall / 60:.1f} min"
    print(f"\n{len(results)} cases{took}; tables {out}.json and .csv")
    for name in CLASSES:
        print(f"  {name:<9} {counts.get(name, 0)}")
    bad = [r for r in results if r["class"] not in GOOD]
    bad += [r for r in results if r["kind"] == "base" and r["class"] != "accepted"]
    if bad:
        print("\nto look at:")
        for r in bad:
            print(summary_line(r))


if __name__ == "__main__":
    sys.exit(main())
