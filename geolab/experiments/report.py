"""The verdict table: every hypothesis or published number next to what geolab measured.

Read from the result files a protocol run writes (``NAME-SCALE.json``), so data/results/README.md
and notebook 07 show exactly the committed numbers.
"""

from collections import Counter
from pathlib import Path

from geolab.experiments import NAMES, get_protocol
from geolab.experiments.convergence import trained_runs
from geolab.experiments.runner import load_result

RESULT_KEYS = ("protocol", "config", "per_seed", "summary", "hypotheses")


def load_results(directory: str | Path, scale: str = "small") -> dict:
    """``{protocol: result}`` for every ``NAME-SCALE.json`` present in ``directory``;
    ValueError naming the file for one that is not a result of that protocol."""
    directory = Path(directory)
    out = {}
    for name in NAMES:
        path = directory / f"{name}-{scale}.json"
        if not path.is_file():
            continue
        try:
            result = load_result(path)
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"{str(path)!r} cannot be read as a result ({err})") from None
        missing = [k for k in RESULT_KEYS if not isinstance(result, dict) or k not in result]
        if missing or result["protocol"] != name:
            why = f"it lacks {missing}" if missing else f"its protocol is {result['protocol']!r}"
            raise ValueError(
                f"{str(path)!r} is not a result of {name} written by `geolab reproduce` ({why}); "
                f"rerun `geolab reproduce {name} --scale {scale}` or move it away"
            )
        out[name] = result
    return out


def evidence_cell(h: dict) -> str:
    """The runs a claim reads: their convergence states and how many learned, e.g.
    "4/4 converged; 2/4 learned"; "untrained" for a claim on no trained run."""
    parts = [
        h[k] + (" learned" if k == "learned" else "")
        for k in ("convergence", "learned")
        if h.get(k)
    ]
    return "; ".join(parts) or "untrained"


def verdict_rows(results: dict) -> list[dict]:
    """One row per hypothesis: protocol, id, claim, measured, baseline, interval, sizes,
    evidence, verdict, rule, and the rule's own verdict (``rule_verdict``; None where the
    gate left it standing)."""
    keys = ("id", "claim", "measured", "verdict", "rule")
    return [
        {
            "protocol": name,
            **{k: h[k] for k in keys},
            **{k: h.get(k) or "—" for k in ("baseline", "interval", "sizes")},
            "rule_verdict": h.get("rule_verdict") if h.get("reasons") else None,
            "evidence": evidence_cell(h),
        }
        for name, result in results.items()
        for h in result["hypotheses"]
    ]


def verdict_cell(row: dict) -> str:
    """The verdict in bold, and what the rule alone said when the evidence gate overruled it,
    e.g. "**inconclusive: fewer than 3 seeds** (the rule alone: reproduced)"."""
    alone = f" (the rule alone: {row['rule_verdict']})" if row["rule_verdict"] else ""
    return f"**{row['verdict']}**{alone}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict_markdown(results: dict) -> str:
    """The verdict table as GitHub markdown."""
    lines = [
        "| protocol | claim | paper says | geolab measured | ratio to the best trivial baseline "
        "| 95 % interval | sizes (parameters) | runs | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in verdict_rows(results):
        cells = (
            row["protocol"],
            row["id"],
            row["claim"],
            row["measured"],
            row["baseline"],
            row["interval"],
            row["sizes"],
            row["evidence"],
            verdict_cell(row),
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def smoke_markdown(fresh: dict, committed: dict | None) -> str:
    """What a tiny rerun (notebook 07's button) found, worded as a smoke run: the same code ran,
    but at sizes too small for its verdicts to mean anything, so each is shown as "not
    comparable" next to the committed verdict of the same claim (``committed``: that protocol's
    committed result, if any)."""
    committed_hyps = (committed or {}).get("hypotheses", [])
    before = {h["id"]: h["verdict"] for h in committed_hyps}
    # ids may name the corpus (a tiny run reads tiny-shakespeare, the committed one WikiText-2):
    # fall back to the claim's wording where it names one committed claim only
    claims = [h.get("claim") for h in committed_hyps]
    by_claim = {
        h["claim"]: h["verdict"]
        for h in committed_hyps
        if "claim" in h and claims.count(h["claim"]) == 1
    }
    lines = [
        f"**Smoke run at tiny scale ({fresh['scale']}): the code ran end to end. Its verdicts"
        " are not comparable** with the committed small-scale ones — the models are far"
        " smaller and shorter-trained than the claims need (reductions below)."
    ]
    for h in fresh["hypotheses"]:
        verdict = before.get(h["id"], by_claim.get(h.get("claim")))
        was = f"; committed: **{verdict}**" if verdict is not None else ""
        lines.append(
            f"- {h['id']}: tiny run says *{h['verdict']}* (not comparable) — {h['measured']}{was}"
        )
    return "\n".join(lines)


def edelta_markdown(result: dict) -> str:
    """The E∆ table, one row per flavor and task: published MSE (mean of 3 seeds, 2000
    iterations) vs geolab's per model, GPT/E∆ — how much of E∆'s edge each flavor keeps — and
    the task's best trivial baseline on the first seed's validation batches."""
    from geolab.experiments.edelta_benchmarks import LABELS, columns, flavors_of

    table, published = result["summary"]["table"], result["summary"]["published"]["mse"]
    models = columns(table)
    found = result["summary"].get("baselines", {}).get("tasks", {})
    head = "| flavor | task | " + " | ".join(LABELS[m] for m in models) + " | GPT / E∆ |"
    head += " best trivial baseline |"
    lines = [head, "| --- | --- |" + " --- |" * (len(models) + 2)]
    for flavor in flavors_of(table):
        tasks = dict.fromkeys(k.split("/")[1] for k in table if k.startswith(flavor + "/"))
        for task in tasks:
            cells = []
            for m in models:
                if f"{flavor}/{task}/{m}" not in table:
                    cells.append("—")
                    continue
                ours = table[f"{flavor}/{task}/{m}"]["mse"]["mean"]
                paper = published.get(task, {}).get(m)
                note = f" (paper {paper:.3g})" if paper is not None else ""
                cells.append(f"{ours:.3g}{note}")
            ratio = result["summary"]["advantage"][flavor][task]
            base = found.get(f"{result['seeds'][0]}/{flavor}/{task}")
            best = f"{base['best']} {base['value']:.3g}" if base else "—"
            lines.append(
                f"| {flavor} | {task} | " + " | ".join(cells) + f" | {ratio:.3g} | {best} |"
            )
    return "\n".join(lines)


def findings_markdown(results: dict) -> str:
    """Findings per protocol, every number computed from the result file: how many trained runs
    converged (and which did not), the verdict counts, and the protocol's own ``findings``."""
    lines = []
    for name, r in results.items():
        conv = r["convergence"]
        text = f"{conv['converged']} of {conv['runs']} trained runs converged"
        missed = conv["not_converged"]
        if missed:
            text += " (not: " + ", ".join(missed[:8]) + (", …" if len(missed) > 8 else "") + ")"
        if conv.get("collapsed"):
            text += f"; {len(conv['collapsed'])} collapsed"
        learned = [x for x in trained_runs(r["per_seed"]).values() if "learned" in x]
        if learned:
            text += f"; {sum(x['learned'] for x in learned)} of {len(learned)} learned"
        counts = Counter(h["verdict"] for h in r["hypotheses"])
        text += "; verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + "."
        extra = getattr(get_protocol(name), "findings", None)
        if extra is not None:
            text += " " + " ".join(extra(r))
        lines.append(f"- **{name}**: {text}")
    return "\n".join(lines)


def flavors_markdown() -> str:
    """The two flavors of the E∆ table's models side by side (docs/design.md §12)."""
    from geolab.rules.reference import DIFFERENCES

    lines = ["| component | reference (public E∆ code) | geolab |", "| --- | --- | --- |"]
    lines += [f"| {c} | {r} | {g} |" for c, r, g in DIFFERENCES]
    return "\n".join(lines)


def wall_times_markdown(results: dict) -> str:
    """Wall time, threads and reductions count of each protocol run."""
    lines = [
        "| protocol | wall time | torch threads | seeds | commit | dirty | finished (UTC) |",
        "| --- | ---: | ---: | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        p = r["provenance"]
        commit = (p["git"].get("commit") or "?")[:10]
        lines.append(
            f"| {name} | {p['wall_time_s'] / 60:.1f} min | {p['torch_threads']} | "
            f"{', '.join(map(str, r['seeds']))} | {commit} | {p['git'].get('dirty')} | "
            f"{p['finished_utc']} |"
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

Every protocol of docs/design.md §8 run at `--scale small` on a 2-core CPU (one torch thread per
run, two protocols at a time, deterministic kernels), committed with its provenance: for each
protocol `NAME-small.json` holds the config, seeds, every trained run's validation curve,
convergence state, ratio to its task's best trivial baseline and learned flag, the trivial
baselines themselves, per-seed and mean ± std numbers, the hypotheses with their verdicts,
95 % intervals and verdict rules, every reduction from the papers' sizes, package versions, git
revision (and whether the tree was dirty), device and wall time. `NAME-small-FIG.html` are its
figures (they load `plotly.min.js` from this folder, so they open offline) with a `.png` beside
each, and `NAME-small-learning-curves` shows the validation curves. Regenerate everything with

    scripts/reproduce_small.sh          # all protocols, in the background, from a clean checkout

or one protocol with `geolab reproduce NAME --scale small --threads 1 --out data/results` (text
corpora from `--data-dir` or `$GEOLAB_DATA`); `geolab reproduce --readme --rejudge --out
data/results` judges the JSON files again by the current rules (no training), rewrites this
file from them and redraws the figures.

**The rules** (the exact text is in each result file):

- *Trivial baselines* (`geolab.experiments.baselines`), scored on the validation batches each
  run is scored on: predict-zero, copy-the-input and the best task-aware predictor that learns
  nothing (gyroscope: the plane known, the mean rotation applied; echo: the running mean of the
  inputs; near-π: the rotation by π in the task's planes); unigram and Witten–Bell bigram
  perplexity from the training split for text. A run has **learned** when its MSE is at most
  ½ of the best baseline's (perplexity at most 0.9 × for text).
- *Convergence* (one function, `geolab.experiments.convergence.judge`): **collapsed** when the
  last quarter's best validation value is worse than the best before it by more than ln 2 in
  log-MSE (5 % in text loss); **not converged** when the last quarter still gains ≥ 2 % (in
  log-MSE for the regressions, in loss for text); **converged** otherwise.
- *Claims*: a claim read over seeds (a comparison, or a trained model's trend) rests on ≥ 3
  seeds; a comparison on a 95 % interval (Welch's t for two models, Student's t for one
  quantity), and the compared models' parameter counts agree within 3 %. Otherwise, or when a
  run it reads collapsed, did not converge or did not learn, the verdict reads
  **inconclusive: REASONS**, followed by what the rule alone said (kept in the file as
  `rule_verdict`). The E∆ table's claims compare one fixed budget, as published, and are gated
  on learning, not convergence.

Verdicts are computed from the numbers, never edited by hand — **reproduced**, **not
reproduced at this scale** or **inconclusive**. A claim that fails at this scale may still hold
at the papers' sizes (`geolab reproduce NAME --scale paper --dry-run` prints what that costs).
"""


def readme_text(results: dict) -> str:
    """data/results/README.md: the verdict table, the findings (computed from the numbers), the
    E∆ table, wall times and provenance, and reductions."""
    parts = [
        README_HEAD,
        "## Verdicts\n",
        verdict_markdown(results),
        "\n## Findings, computed from the numbers\n",
        findings_markdown(results),
    ]
    if "edelta_benchmarks" in results:
        parts += [
            "\n## E∆ table: validation MSE, geolab small scale (paper: 2000 iterations, "
            "mean of 3 seeds)\n",
            edelta_markdown(results["edelta_benchmarks"]),
        ]
    parts += [
        "\n## Wall time and provenance of each small-scale protocol\n",
        wall_times_markdown(results),
        "\n## Reductions from the papers' sizes\n",
        reductions_markdown(results),
    ]
    return "\n".join(parts) + "\n"
