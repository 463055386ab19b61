"""The verdict table: every hypothesis or published number next to what geolab measured.

Read from the result files a protocol run writes (``NAME-SCALE.json``), so data/results/README.md
and notebook 07 show exactly the committed numbers.
"""

from pathlib import Path

from geolab.experiments import NAMES, get_protocol
from geolab.experiments.runner import load_result


def load_results(directory: str | Path, scale: str = "small") -> dict:
    """``{protocol: result}`` for every ``NAME-SCALE.json`` present in ``directory``."""
    directory = Path(directory)
    out = {}
    for name in NAMES:
        path = directory / f"{name}-{scale}.json"
        if path.is_file():
            out[name] = load_result(path)
    return out


def verdict_rows(results: dict) -> list[dict]:
    """One row per hypothesis: protocol, id, claim, measured, verdict, rule."""
    return [
        {"protocol": name, **{k: h[k] for k in ("id", "claim", "measured", "verdict", "rule")}}
        for name, result in results.items()
        for h in result["hypotheses"]
    ]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict_markdown(results: dict) -> str:
    """The verdict table as GitHub markdown."""
    lines = [
        "| protocol | claim | paper says | geolab measured | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in verdict_rows(results):
        cells = (row["protocol"], row["id"], row["claim"], row["measured"], f"**{row['verdict']}**")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def edelta_markdown(result: dict) -> str:
    """The E∆ table, one row per flavor and task: published MSE (mean of 3 seeds, 2000
    iterations) vs geolab's per model, and GPT/E∆ — how much of E∆'s edge each flavor keeps."""
    from geolab.experiments.edelta_benchmarks import LABELS, MODELS, flavors_of

    table, published = result["summary"]["table"], result["summary"]["published"]["mse"]
    head = "| flavor | task | " + " | ".join(LABELS[m] for m in MODELS) + " | GPT / E∆ |"
    lines = [head, "| --- | --- |" + " --- |" * (len(MODELS) + 1)]
    for flavor in flavors_of(table):
        tasks = dict.fromkeys(k.split("/")[1] for k in table if k.startswith(flavor + "/"))
        for task in tasks:
            cells = []
            for m in MODELS:
                ours = table[f"{flavor}/{task}/{m}"]["mse"]["mean"]
                paper = published.get(task, {}).get(m)
                note = f" (paper {paper:.3g})" if paper is not None else ""
                cells.append(f"{ours:.3g}{note}")
            ratio = result["summary"]["advantage"][flavor][task]
            lines.append(f"| {flavor} | {task} | " + " | ".join(cells) + f" | {ratio:.3g} |")
    return "\n".join(lines)


def wall_times_markdown(results: dict) -> str:
    """Wall time, threads and reductions count of each protocol run."""
    lines = [
        "| protocol | wall time | torch threads | seeds | finished (UTC) |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for name, r in results.items():
        p = r["provenance"]
        lines.append(
            f"| {name} | {p['wall_time_s'] / 60:.1f} min | {p['torch_threads']} | "
            f"{', '.join(map(str, r['seeds']))} | {p['finished_utc']} |"
        )
    return "\n".join(lines)


def reductions_markdown(results: dict) -> str:
    """Every reduction from paper scale, per protocol, as a bullet list."""
    lines = []
    for name, r in results.items():
        lines.append(f"- **{name}**")
        lines += [f"  - {k}: {v}" for k, v in r["reductions"].items()]
    return "\n".join(lines)


def result_figures(result: dict) -> dict:
    """The protocol's figures rebuilt from a result file's numbers (no training)."""
    module = get_protocol(result["protocol"])
    return module.make_figures(result["config"], result["per_seed"], result["summary"])


README_HEAD = """# Small-scale results

Every protocol of docs/design.md §8 run at `--scale small` on a 2-core laptop-class CPU shared with
other jobs (one torch thread per run, deterministic kernels), committed with its provenance: for
each protocol `NAME-small.json` holds the config, seeds, per-seed and mean ± std numbers, the
hypotheses with their verdicts and the verdict rules, every reduction from the papers' sizes,
package versions, git revision, device and wall time; `NAME-small-FIG.html` (plotly, loads
plotly.js from its CDN) and `.png` are its figures. Regenerate one with

    geolab reproduce NAME --scale small --threads 1 --out data/results

(text corpora from `--data-dir` or `$GEOLAB_DATA`); with the same seed on a CPU the numbers come
out identical (tests/test_experiments.py reruns part of rank_evolution and compares), and
`geolab reproduce --readme --out data/results` rewrites this file from the JSON files (and the
hand-written reading of the numbers in NOTES.md) and redraws the figures.

Verdicts are computed from the numbers by the rule written in each result file, never edited by
hand: **reproduced**, **not reproduced at this scale**, or **inconclusive**. "Small" is small —
tens of optimizer steps, widths of 32–64 — so a claim that fails here may still hold after real
training; it is reported as measured, not tuned away.
"""


def readme_text(results: dict, notes: str = "") -> str:
    """data/results/README.md: the verdict table, ``notes`` (hand-written reading of the numbers,
    kept in NOTES.md beside the results), the E∆ table, wall times and reductions."""
    parts = [README_HEAD, "## Verdicts\n", verdict_markdown(results)]
    if notes.strip():
        parts += ["\n## Findings in plain words\n", notes.strip()]
    if "edelta_benchmarks" in results:
        parts += [
            "\n## E∆ table: validation MSE, geolab small scale (paper: 2000 iterations, "
            "mean of 3 seeds)\n",
            edelta_markdown(results["edelta_benchmarks"]),
        ]
    parts += [
        "\n## Wall time of each small-scale protocol on this CPU\n",
        wall_times_markdown(results),
        "\n## Reductions from the papers' sizes\n",
        reductions_markdown(results),
    ]
    return "\n".join(parts) + "\n"
