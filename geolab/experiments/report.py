"""The verdict table: every hypothesis or published number next to what geolab measured.

Read from the result files a protocol run writes (``NAME-SCALE.json``), so data/results/README.md
and notebook 07 show exactly the committed numbers.
"""

from pathlib import Path

from geolab.experiments import NAMES, get_protocol
from geolab.experiments.common import load_result


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
    """The E∆ table: published MSE (mean of 3 seeds, 2000 iterations) vs geolab's per task/model."""
    from geolab.experiments.edelta_benchmarks import LABELS, MODELS

    table, published = result["summary"]["table"], result["summary"]["published"]["mse"]
    tasks = list(dict.fromkeys(key.split("/")[0] for key in table))
    head = "| task | " + " | ".join(LABELS[m] for m in MODELS) + " |"
    lines = [head, "| --- |" + " --- |" * len(MODELS)]
    for task in tasks:
        cells = []
        for m in MODELS:
            ours = table[f"{task}/{m}"]["mse"]["mean"]
            paper = published.get(task, {}).get(m)
            cells.append(f"{ours:.3g}" + (f" (paper {paper:.3g})" if paper is not None else ""))
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def wall_times_markdown(results: dict) -> str:
    """Wall time, threads and reductions count of each protocol run."""
    lines = ["| protocol | wall time | torch threads | seeds | finished (UTC) |", "| --- | ---: | ---: | --- | --- |"]
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
