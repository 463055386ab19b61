"""The verdict table: every hypothesis or published number next to what geolab measured.

Read from the result files a protocol run writes (``NAME-SCALE.json``), so data/results/README.md
and notebook 07 show exactly the committed numbers. A variant (``NAME-SCALE-VARIANT.json``,
``runner.result_stem``: the matched-size E∆ table, or some of its tasks at a longer budget) is a
result of its own, keyed NAME-VARIANT right after its published settings' one: its claims are
rows of their own, labelled (``label``), counted apart from the published settings' count, never
added to it.
"""

from collections import Counter
from pathlib import Path

from geolab.experiments import NAMES, convergence, decide, get_protocol, judging, settled
from geolab.experiments import verdicts as v
from geolab.experiments.convergence import trained_runs
from geolab.experiments.runner import (
    MATCHED,
    flavor_subset,
    load_result,
    result_stem,
    task_subset,
    variant,
    variant_key,
)

RESULT_KEYS = ("protocol", "config", "per_seed", "summary", "hypotheses")
# How the tables name a protocol whose variants they show (kept here, not in the protocol
# module, whose text is part of its rules' hash: ``judging``)
TABLE_NAMES = {"edelta_benchmarks": "E∆ table"}


def load_results(directory: str | Path, scale: str = "small") -> dict:
    """``{key: result}`` for every ``NAME-SCALE.json`` present in ``directory`` (key NAME), each
    followed by its variants ``NAME-SCALE-VARIANT.json`` in name order (key NAME-VARIANT,
    ``result_key``); ValueError naming the file for one that is not a result of that protocol
    and variant."""
    directory = Path(directory)
    out = {}
    for name in NAMES:
        stem = f"{name}-{scale}"
        for path in [directory / f"{stem}.json", *sorted(directory.glob(f"{stem}-*.json"))]:
            if path.is_file():
                result = _read(path, name, scale)
                out[result_key(result)] = result
    return out


def _read(path: Path, name: str, scale: str) -> dict:
    """The result at ``path``, checked to be protocol ``name``'s, of the variant its name says."""
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
    stem = result_stem(name, scale, result["config"])
    if path.stem != stem:
        which = variant_label(result) if variant_of(result) else "published settings"
        raise ValueError(
            f"{str(path)!r} holds the result of {name} ({which}), whose file is {stem}.json "
            f"(`geolab reproduce` before its variants had files of their own wrote every one "
            f"as {name}-{scale}.json): move its runs folder to {stem}-runs and run its command "
            "again into that folder (the saved runs are found, nothing trains), or move it away"
        )
    return result


def variant_of(result: dict) -> str:
    """``result``'s variant (``runner.variant``): "" for the published settings."""
    return variant(result["protocol"], result.get("scale"), result["config"])


def is_matched(result: dict) -> bool:
    """Whether ``result`` is a matched-size variant (``settings["match_sizes"]``)."""
    return bool(result["config"].get("match_sizes"))


def result_key(result: dict) -> str:
    """The key of ``result`` in ``load_results``: its protocol, NAME-VARIANT for a variant."""
    return variant_key(result["protocol"], variant_of(result))


def matched_of(results: dict, name: str) -> dict | None:
    """Protocol ``name``'s matched-size variant (all its tasks) among ``results``, if any."""
    return results.get(variant_key(name, MATCHED))


def variants_of(results: dict, name: str) -> list[dict]:
    """Protocol ``name``'s variants among ``results``, in ``load_results``' order."""
    return [r for r in results.values() if r["protocol"] == name and variant_of(r)]


def variant_label(result: dict) -> str:
    """What sets a variant apart, e.g. "E∆ table, matched sizes" or "E∆ table, near_pi only,
    2000 steps, geolab flavor only, 6 seeds" (seeds where they are not the scale's count)."""
    name = result["protocol"]
    parts = [TABLE_NAMES.get(name, name)] + (["matched sizes"] if is_matched(result) else [])
    tasks = task_subset(name, result.get("scale"), result["config"])
    if tasks:
        steps = result["config"].get("train", {}).get("steps")
        parts.append(f"{', '.join(tasks)} only, {steps} steps")
    flavors = flavor_subset(name, result["config"])
    parts += [f"{' and '.join(flavors)} flavor only"] if flavors else []
    seeds = decide.seeds_override(result)
    return ", ".join(parts + ([f"{seeds} seeds"] if seeds else []))


def label(result: dict) -> str:
    """How the tables name ``result``: its protocol, with its variant's label, e.g.
    "edelta_benchmarks (E∆ table, matched sizes)"."""
    name = result["protocol"]
    return f"{name} ({variant_label(result)})" if variant_of(result) else name


def published(results: dict) -> dict:
    """The results of the published settings, without the variants."""
    return {k: r for k, r in results.items() if not variant_of(r)}


def evidence_cell(h: dict) -> str:
    """The runs a claim reads: their convergence states and how many learned, e.g.
    "4/4 converged; 2/4 learned"; "untrained" for a claim on no trained run."""
    parts = [
        h[k] + (" learned" if k == "learned" else "")
        for k in ("convergence", "learned")
        if h.get(k)
    ]
    return "; ".join(parts) or "untrained"


def reach_markdown(result: dict) -> str:
    """What a result's trained runs reached, claim by claim: how many learned and converged
    (the verdict rules' words, docs/design.md §8) and the verdict that allows; a closing line
    says, when no run learned, that its curves show training, not a model that learned."""
    lines = [
        f"- **{h['id']}**: {evidence_cell(h)}; verdict *{h['verdict']}*."
        for h in result["hypotheses"]
    ]
    counts = [h["learned"].split("/") for h in result["hypotheses"] if h.get("learned")]
    if counts and all(int(got) == 0 for got, _ in counts):
        lines.append(
            "\nNo run beat its task's best trivial baseline: these curves show what training"
            " did to the rank of models that had not yet learned the task, not the rank of"
            " models that had."
        )
    return "\n".join(lines)


def verdict_rows(results: dict) -> list[dict]:
    """One row per hypothesis: protocol, id, claim, measured, baseline, interval, sizes,
    margins, evidence, verdict, rule, extra, and the rule's own verdict (``rule_verdict``; None
    where the gate left it standing)."""
    keys = ("id", "claim", "measured", "verdict", "rule")
    return [
        {
            "protocol": label(result),
            **{k: h[k] for k in keys},
            **{k: h.get(k) or "—" for k in ("baseline", "interval", "sizes", "margins")},
            "rule_verdict": h.get("rule_verdict")
            if h.get("rule_verdict") and h["verdict"] != h["rule_verdict"]
            else None,
            "evidence": evidence_cell(h),
            "extra": bool(h.get("extra")),
        }
        for result in results.values()
        for h in result["hypotheses"]
    ]


def verdict_cell(row: dict) -> str:
    """The verdict in bold, and what the rule alone said when the evidence gate overruled it,
    e.g. "**inconclusive: fewer than 3 seeds** (the rule alone: reproduced)"."""
    alone = f" (the rule alone: {row['rule_verdict']})" if row["rule_verdict"] else ""
    extra = " — *extra, outside the claim count*" if row.get("extra") else ""
    return f"**{row['verdict']}**{alone}{extra}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict_markdown(results: dict) -> str:
    """The verdict table as GitHub markdown."""
    lines = [
        "| protocol | claim | paper says | geolab measured | ratio to the best trivial baseline "
        "| 95 % interval | sizes (parameters) | runs | margins (gain vs 2 %, ratio vs the learned "
        "line) | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
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
            row["margins"],
            verdict_cell(row),
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def verdict_counts(results: dict) -> dict:
    """{"claims", "extras", kind: count} over every result's hypotheses (``verdicts.kind``;
    labelled extras counted apart)."""
    hyps = [h for r in results.values() for h in r["hypotheses"]]
    claims = v.counted(hyps)
    kinds = (v.REPRODUCED, v.NOT_REPRODUCED, v.INCONCLUSIVE, v.UNDECIDABLE)
    out = {"claims": len(claims), "extras": len(hyps) - len(claims)}
    out |= {k: sum(v.kind(h["verdict"]) == k for h in claims) for k in kinds}
    return out


def counts_markdown(results: dict) -> str:
    """One sentence: how many claims of the published settings, and how many of each verdict
    kind; with variants, one more per variant (``variant_counts_markdown``)."""
    line = _counts_sentence(verdict_counts(published(results)))
    variants = [variant_counts_markdown(r, results) for r in results.values() if variant_of(r)]
    return "\n\n".join([f"Published settings: {line}", *variants]) if variants else line


def _counts_sentence(c: dict) -> str:
    kinds = (v.REPRODUCED, v.NOT_REPRODUCED, v.INCONCLUSIVE, v.UNDECIDABLE)
    parts = ", ".join(f"**{c[k]} {k}**" for k in kinds)
    extra = f" ({c['extras']} labelled extras outside the count)" if c["extras"] else ""
    return f"{c['claims']} claims{extra}: {parts}."


def decided(hyps: list[dict]) -> int:
    """How many counted claims of ``hyps`` a verdict decides (reproduced or not reproduced)."""
    return sum(v.kind(h["verdict"]) in (v.REPRODUCED, v.NOT_REPRODUCED) for h in v.counted(hyps))


def variant_counts_markdown(result: dict, results: dict) -> str:
    """A variant's counts, apart from the published settings' (the same claims judged on other
    runs), and how many of its claims it decides next to how many of the same claims the
    published settings decide."""
    name, hyps = result["protocol"], result["hypotheses"]
    c = verdict_counts({name: result})
    text = (
        f"{variant_label(result)} (`{decide.variant_flags(result)}`, not added to the count "
        "above): " + _counts_sentence(c)[:-1] + f" — it decides {decided(hyps)} of its "
        f"{c['claims']} claims"
    )
    if name in results:
        ids = {h["id"] for h in v.counted(hyps)}
        same = [h for h in results[name]["hypotheses"] if h["id"] in ids]
        text += f"; the published settings decide {decided(same)} of the same {len(same)}"
    return text + "."


def undecided_rows(results: dict, folder=None) -> list[dict]:
    """One row per counted claim that is not decided: protocol, id, verdict, what would decide
    it and its cost (``decide.remedy``; paper plans kept in ``folder``)."""
    rows = []
    for result in results.values():
        for h in v.counted(result["hypotheses"]):
            fix = decide.remedy(result["protocol"], result, h, folder)
            if fix is not None:
                row = {"protocol": label(result), "id": h["id"], "verdict": h["verdict"]}
                rows.append(row | fix)
    return rows


def undecided_markdown(results: dict, folder=None) -> str:
    """The undecided claims as a table: what would decide each, and its cost."""
    lines = [
        "| protocol | claim | verdict | what would decide it | cost |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in undecided_rows(results, folder):
        cells = (row["protocol"], row["id"], row["verdict"], row["what"], decide.cost_text(row))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def established_markdown(results: dict) -> str:
    """What the lab established: every decided claim (reproduced or not reproduced, labelled
    extras and variants included, each marked), then every reason a claim is undecidable on its
    task, once, with the claims it covers: a finding about the task or the published numbers
    that holds whatever a larger run would show."""
    decided_rows = sorted(
        (r for r in verdict_rows(results) if v.kind(r["verdict"]) in DECIDED),
        key=lambda r: r["extra"],  # counted claims first
    )
    lines = [
        f"- **{r['verdict']}**{' (a labelled extra)' if r['extra'] else ''} — {r['protocol']}, "
        f"{r['id']}: {r['claim']}. Measured: {r['measured']}."
        for r in decided_rows
    ] or ["- No claim is decided yet at this scale."]
    found: dict[str, list[str]] = {}
    for result in results.values():
        for h in result["hypotheses"]:
            if v.kind(h["verdict"]) == v.UNDECIDABLE:
                why = h["verdict"][len(v.UNDECIDABLE) + 2 :]
                found.setdefault(why, []).append(f"{label(result)}: {h['id']}")
    if found:
        lines += [
            "",
            "Findings about the tasks and the published numbers (no run changes them):",
            "",
        ]
        lines += [
            f"- **{_claims(len(ids))} undecidable on their task**: {why}. Claims: {'; '.join(ids)}."
            for why, ids in found.items()
        ]
    return "\n".join(lines)


# Why a claim stays open, per gate reason (``verdicts.REASONS``), in a student's words
OPEN_WHY = {
    v.NOT_LEARNED: "a run it reads did not beat its task's best trivial predictor by the learned "
    "line: the CPU-sized model is too small for the task, so a larger model is the test",
    convergence.NOT_CONVERGED: "a run it reads was still improving (its last quarter gained ≥ "
    "2 %): a longer run is the test",
    convergence.COLLAPSED: "a run it reads got worse late in training",
    convergence.DID_NOT_TRAIN: "a run it reads never moved from its start",
    v.SIZES_DIFFER: "the compared models' sizes differ by more than 3 %, so a difference could "
    "come from size",
    v.FEW_SEEDS: "fewer than three seeds",
}
SETTLED_WHY = (
    "the claimed quantity is not settled on one side of its line, or its interval over seeds "
    "covers the line (the claimed-quantity rule)"
)
RULE_WHY = "the evidence is sound, but the 95 % interval over seeds covers the line"
DECIDED = (v.REPRODUCED, v.NOT_REPRODUCED)


def _claims(n: int) -> str:
    return f"{n} claim" if n == 1 else f"{n} claims"


def open_why(reason: str) -> str:
    """Why a gate or rule ``reason`` keeps a claim open, in words (a protocol's own reason, e.g.
    "no model learned the rotation", stands as it is)."""
    if reason in OPEN_WHY:
        return OPEN_WHY[reason]
    return SETTLED_WHY if settled.is_rule_reason(reason) else reason


def open_markdown(results: dict) -> str:
    """What is open, and why: the undecided counted claims grouped by what keeps each open (a
    gate reason, the claimed-quantity rule, the interval, or no run at all), one sentence per
    group and the claims it holds; the table below prices each."""
    groups: dict[str, list[str]] = {}
    for result in results.values():
        for h in v.counted(result["hypotheses"]):
            kind = v.kind(h["verdict"])
            if kind in DECIDED:
                continue
            name = f"{label(result)}: {h['id']}"
            if kind == v.UNDECIDABLE:
                groups.setdefault(
                    "no run of any size can pass its gate on this task (see the findings above)",
                    [],
                ).append(name)
                continue
            reasons = h.get("reasons") or []
            whys = [open_why(r) for r in reasons] or [RULE_WHY]
            for why in dict.fromkeys(whys):
                groups.setdefault(why, []).append(name)
    if not groups:
        return "Every counted claim is decided."
    lines = [
        "A claim can stay open for more than one reason; each reason below lists its claims.",
        "",
    ]
    for why, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- **{_claims(len(names))}: {why}.** {'; '.join(names)}.")
    return "\n".join(lines)


def echo_markdown(result: dict) -> str:
    """Why echo decides nothing, once, with the numbers of the committed E∆ result: its noise
    floor against the best trivial baseline, the published MSEs in units of the floor, and the
    noise level at which they would separate under a gate on the excess over the floor."""
    from geolab.experiments.edelta_benchmarks import LABELS

    found = result["summary"].get("baselines", {}).get("tasks", {})
    echo = [b for k, b in found.items() if k.endswith("/echo") and "floor" in b]
    if not echo:
        return ""
    floor = sum(b["floor"] for b in echo) / len(echo)
    value = sum(b["value"] for b in echo) / len(echo)
    copy = sum(b["values"]["copy-the-input"] for b in echo) / len(echo)
    # mHC's published 8650e-6 is its instability claim, not a fit: left out of the ranges
    published = {m: x for m, x in result["summary"]["published"]["mse"]["echo"].items() if x < 1e-3}
    sigma2 = 1e-6  # the published setting's σ = 1e-3 (E∆ README), the floor there
    lo, hi = min(published.values()), max(published.values())
    excess = value / floor - 1  # the running mean's excess over the floor, relative
    need = {m: (2 * (x - sigma2) / excess) ** 0.5 for m, x in published.items()}
    return (
        f"**Echo decides no claim.** Its targets carry fresh noise no predictor can know: on the "
        f"committed validation batches that floor is {floor:.3g} (σ² at σ = 1e-3), and the best "
        f"trivial baseline, the running mean of the inputs, reaches {value:.3g} — the floor is "
        f"{floor / value:.2f} × it, above the learned line ({v.fmt(0.5)} ×), so no run of any size "
        "can count as learned. Both scale with σ², so no noise level changes that: the six echo "
        "claims read *undecidable on this task*. The published echo MSEs (mHC's aside) "
        f"({lo:.3g} … {hi:.3g}) are {lo / sigma2:.3g}–{hi / sigma2:.3g} × the floor and "
        f"{lo / (copy / floor * sigma2):.2g}–{hi / (copy / floor * sigma2):.2g} × copy-the-input: "
        "at σ = 1e-3 they rank how far each model stays from a trivial predictor. Judged instead "
        "on the excess over the floor — (MSE − σ²) ≤ ½ (running mean − σ²), the running mean "
        f"{excess:.3g} σ² above the floor at this scale's 63 steps — a model whose excess stayed "
        "as published would count as learned from σ ≈ "
        + ", ".join(f"{x:.2g} ({LABELS[m]})" for m, x in sorted(need.items(), key=lambda kv: kv[1]))
        + f": the published claims separate from the trivial predictor only at σ ≳ "
        f"{max(need.values()):.2g}, over {max(need.values()) / 1e-3:.0f}× the published noise."
    )


def walkthrough_markdown(name: str, h: dict) -> str:
    """One claim worked through, step by step: the claim, what was measured, the rule and what it
    alone says, each check of the evidence (seeds, sizes, convergence, learning, with their
    margins) and the verdict that follows."""
    steps = [
        f"**The claim** ({name}, *{h['id']}*): {h['claim']}",
        f"**What geolab measured:** {h['measured']}",
        f"**The rule, written before the runs:** {h['rule']}"
        + (f" — the 95 % interval it reads: {h['interval']}" if h.get("interval") else ""),
        f"**What the rule alone says:** *{h.get('rule_verdict') or h['verdict']}*.",
    ]
    checks = []
    if h.get("sizes"):
        checks.append(f"sizes compared (within 3 %?): {h['sizes']}")
    if h.get("convergence"):
        gated = "converged" in h.get("gated_on", [])
        checks.append(
            f"convergence ({'gates' if gated else 'shown, does not gate'}): {h['convergence']}"
        )
    if h.get("learned"):
        checks.append(f"learned (beat the best trivial baseline by the margin): {h['learned']}")
    if h.get("baseline"):
        checks.append(f"ratio to the best trivial baseline per model: {h['baseline']}")
    if h.get("margins"):
        checks.append(f"margins against the lines: {h['margins']}")
    if checks:
        steps.append("**Is the evidence sound?** " + "; ".join(checks) + ".")
    why = "; ".join(h.get("reasons") or []) or "every check passed"
    steps.append(f"**So the verdict is** *{h['verdict']}* ({why}).")
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


def cpu_plan_markdown(results: dict) -> str:
    """The CPU reruns that settle claims, as commands with their measured cost
    (``decide.cpu_plan``); one line once every planned rerun has landed."""
    rows = decide.cpu_plan(results)
    if not rows:
        return (
            "Every planned CPU rerun has landed (`decide.CPU_PLAN`); what would decide the "
            "claims still open, and what it costs, is in the table above."
        )
    lines = [
        "Each from a clean checkout (the fused rule maths, which changed training's rounding, "
        "are in: these numbers come from the code that stays), one packed command at a time "
        "(`--jobs 2`: one core per worker), each into its own `--out` (one writer holds a "
        "folder); a packed command picks up where it stopped when run again, and its "
        "NAME-small.json then replaces the committed one (`--force`; a variant's "
        "NAME-small-VARIANT.json, matched sizes or some tasks only, goes beside the published "
        "one). Costs are the committed runs' recorded seconds scaled by the steps (one CPU "
        "thread each).",
        "",
        "| protocol | settles | command | one-thread CPU-hours |",
        "| --- | --- | --- | ---: |",
    ]
    for row in rows:
        cells = (row["protocol"], row["settles"], f"`{row['command']}`", f"{row['cpu_hours']:.2f}")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    total = sum(r["cpu_hours"] for r in rows)
    lines.append(f"| total | | | {total:.2f} |")
    return "\n".join(lines)


def before_fused_markdown(results: dict) -> str:
    """The results trained before the fused rule maths (``decide.before_fused``), with the
    command that trains each again and its cost; one line when there are none."""
    rows = decide.before_fused(results)
    commit, when = decide.FUSED_MATHS
    if not rows:
        return f"Every result finished after the fused rule maths landed ({commit}, {when})."
    lines = [
        f"These finished before the fused rule maths landed ({commit}, {when}), so they were "
        "trained by the forms those replaced: the same equations in more operations, equal "
        "to the fused ones to float32 round-off in values and gradients "
        "(tests/test_fast_paths.py), so only training's rounding differs. They are listed so "
        "that every committed number comes from the code that stays once they are trained "
        "again; their claims need the paper scale (the table above).",
        "",
        "| result | commit | finished (UTC) | command | one-thread CPU-hours |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for row in rows:
        cells = (
            label(results[row["protocol"]]),
            row["commit"][:10],
            row["finished"],
            f"`{row['command']}`",
            f"{row['cpu_hours']:.2f}",
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    total = sum(r["cpu_hours"] for r in rows)
    lines.append(f"| total | | | | {total:.2f} |")
    return "\n".join(lines)


def judging_markdown(results: dict) -> str:
    """Per protocol: the commit of its runs, the rules that judged it and what they changed,
    and the other commits that trained runs a resumed sweep found saved."""
    lines = []
    for r in results.values():
        line = judging.summary_line(label(r), r.get("judging"))
        wrote = r["provenance"]["git"].get("commit")
        found = (r["provenance"].get("runs") or {}).get("found_at_commits") or []
        earlier = [c[:10] for c in found if c != wrote]
        if earlier:
            line += f" Some of its runs were trained at {', '.join(earlier)} and found saved."
        lines.append(line)
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


def matched_sizes_markdown(result: dict) -> str:
    """The parameter counts of a matched-size E∆ result per task and model, with each model's
    MLP hidden width (first seed's runs) and the largest spread, (max − min) / min, that the 3 %
    size check reads (``verdicts.size_spread``)."""
    from geolab.experiments.edelta_benchmarks import LABELS, MODELS

    table, runs = result["summary"]["table"], result["per_seed"][str(result["seeds"][0])]
    lines = [
        "| flavor | task | " + " | ".join(LABELS[m] for m in MODELS) + " | spread |",
        "| --- | --- |" + " ---: |" * (len(MODELS) + 1),
    ]
    for key in (k for k in table if k.endswith("/preln")):
        flavor, task, _ = key.split("/")
        keys = [f"{flavor}/{task}/{m}" for m in MODELS]
        cells = [f"{table[k]['n_params']:,} (MLP {runs[k]['d_mlp']})" for k in keys]
        spread = v.size_spread([table[k]["n_params"] for k in keys])
        lines.append(f"| {flavor} | {task} | " + " | ".join(cells) + f" | {spread:.2%} |")
    return "\n".join(lines)


def findings_markdown(results: dict) -> str:
    """Findings per protocol, every number computed from the result file: how many trained runs
    converged (and which did not), the verdict counts, and the protocol's own ``findings``."""
    lines = []
    for r in results.values():
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
        extra = getattr(get_protocol(r["protocol"]), "findings", None)
        if extra is not None:
            text += " " + " ".join(extra(r))
        lines.append(f"- **{label(r)}**: {text}")
    return "\n".join(lines)


def flavors_markdown() -> str:
    """The two flavors of the E∆ table's models side by side (docs/design.md §12)."""
    from geolab.rules.reference import DIFFERENCES

    lines = ["| component | reference (public E∆ code) | geolab |", "| --- | --- | --- |"]
    lines += [f"| {c} | {r} | {g} |" for c, r, g in DIFFERENCES]
    return "\n".join(lines)


def wall_times_markdown(results: dict) -> str:
    """Per result: the wall time of the invocation that wrote it (a resumed sweep's last one
    only), the recorded training time of all its runs (one thread each, whichever invocation
    trained them), threads, seeds and the commit that wrote it."""
    lines = [
        "| protocol | wall time (the writing invocation) | training time of its runs (sum) | "
        "torch threads | seeds | commit | dirty | finished (UTC) |",
        "| --- | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in results.values():
        p = r["provenance"]
        commit = (p["git"].get("commit") or "?")[:10]
        trained = sum(run.get("seconds", 0.0) for run in trained_runs(r["per_seed"]).values())
        lines.append(
            f"| {label(r)} | {p['wall_time_s'] / 60:.1f} min | {trained / 60:.1f} min | "
            f"{p['torch_threads']} | {', '.join(map(str, r['seeds']))} | {commit} | "
            f"{p['git'].get('dirty')} | {p['finished_utc']} |"
        )
    return "\n".join(lines)


def budget_note(result: dict) -> str | None:
    """The longer (or shorter) budget a result was trained with (``--steps``), against its
    scale's own step count (``decide.steps_override``); None when it trained the scale's."""
    steps = decide.steps_override(result)
    if steps is None:
        return None
    got, want = steps
    return f"every run trained {got} steps (`--steps {got}`), not the {want} of this scale"


def reductions_markdown(results: dict) -> str:
    """Every reduction from paper scale, per protocol, as a bullet list, and the budget a run
    took instead of its scale's (``budget_note``)."""
    lines = []
    for r in results.values():
        lines.append(f"- **{label(r)}**")
        lines += [f"  - {k}: {v}" for k, v in r["reductions"].items()]
        note = budget_note(r)
        if note:
            lines.append(f"  - budget: {note}")
        if is_matched(r):
            lines.append(
                "  - sizes: every model's MLP hidden width moved until its parameter count is "
                "GPT's on the same task (`--match-sizes`; the sizes are in the matched-size table)"
            )
    return "\n".join(lines)


def result_figures(result: dict) -> dict:
    """The protocol's figures rebuilt from a result file's numbers (no training)."""
    module = get_protocol(result["protocol"])
    return module.make_figures(result["config"], result["per_seed"], result["summary"])


README_HEAD = """# Small-scale results

Every protocol of docs/design.md §8 run at `--scale small` on a CPU (one torch thread per run,
deterministic kernels), committed with its provenance; judged again without training by
`geolab reproduce --readme --rejudge --out data/results` (text corpora from `--data-dir` or
`$GEOLAB_DATA`), which rewrites this file from the JSON files.
"""

README_RULES = """## How a verdict is reached (the exact rules are in each result file)

- **Trivial baselines** (`geolab.experiments.baselines`), computed from the training split or
  the inputs alone and scored on the validation batches each run is scored on: predict-zero,
  copy-the-input and the task-aware closed forms — gyroscope: the plane known with the mean
  rotation, the plane known with the angle of the last two states, nothing known (plane and
  angle from the last two states), per-trajectory least squares on the previous states; echo:
  the running mean of the inputs; near-π: the rotation by π in the task's planes; text: add-one
  unigram and Witten–Bell 2- to 5-grams (4-grams on WikiText-2's vocabulary) with the window's
  own tokens as context. A run has **learned** when its MSE is at most ½ of the *best* (the
  strongest) baseline's, or its perplexity at most 0.9 × the best's: "ratio to the best trivial
  baseline" is the run's number over that best one, and the *learned line* is ½ or 0.9.
- **Converged** (one function, `geolab.experiments.convergence.judge`): the last quarter of
  training gains less than 2 % (in log-MSE for the regressions, in loss for text) and did not
  collapse (worse than before by ln 2 in log-MSE, 5 % in text loss); a run whose validation
  value never moves **did not train**. The *gain* in the margins column is that last-quarter
  gain, next to the 2 % line.
- **Claims**: a claim read over seeds rests on ≥ 3 seeds and a 95 % interval (Welch's t for two
  models, Student's t for one quantity); every comparison, failure claims included, needs the
  compared parameter counts within 3 %. Otherwise, or when a run it reads collapsed, did not
  converge, did not train or did not learn, the verdict reads **inconclusive: REASONS**, and
  what the rule alone said is kept beside it. A claim no run of any size can pass on its task
  reads **undecidable on this task: REASON**. The E∆ table compares one fixed budget, as
  published, and is gated on learning, not convergence; its inversion rows (transformers, where
  the published claims on bare operators cannot be tested) are labelled extras outside the
  count.
- **Reflection** is judged on the quantities its claims name (the *claimed-quantity rule*,
  `geolab.experiments.settled`, fixed before its runs): the cosine to −x, DDL's β and E∆'s γ,
  recorded at every doubling of the steps. A run is *settled* when its margin to the line is
  positive at T/2 and T, at least 4× its last drift toward the line, and that drift is not
  speeding up. A claim is reproduced when every seed is settled on its side and the 95 %
  interval lies there. Its MSE never converges (with no schedule it falls like a power of the
  steps), so the claims are gated on learning only; the convergence state is still shown.
- **Reruns.** With the same seed, torch build and host, a rerun is bit-identical (deterministic
  kernels, one thread). On another host (other SIMD, e.g. AVX-512) the curves drift from the
  committed ones at ≈ 1e-6 relative within the first steps and the final metrics agree within
  4e-6 relative; the tests compare reruns with that tolerance (`RERUN_RTOL`).

Verdicts are computed from the numbers, never edited by hand — **reproduced**, **not
reproduced at this scale**, **inconclusive: REASONS** or **undecidable on this task: REASON**.
A claim that fails at this scale may still hold at the papers' sizes
(`geolab reproduce NAME --scale paper --dry-run` prints what that costs).
"""


def readme_text(results: dict, folder=None) -> str:
    """data/results/README.md: what the lab established, what is open and why, the counts and
    what would decide each undecided claim first, then
    the rules, the verdict table, the judging record, the findings, the E∆ table (and its
    variants', with the sizes of a matched-size one, when ``results`` holds them), wall times and
    provenance, and reductions. ``folder``: the results folder, where the paper plans that price
    the undecided claims are kept (``decide.paper_gpu_hours``)."""
    parts = [
        README_HEAD,
        "## What the lab established\n",
        established_markdown(results),
        "\n## What is open, and why\n",
        open_markdown(results),
        "\n## Counts\n",
        counts_markdown(results),
    ]
    parts += [
        "\n## What would decide each undecided claim, and what it costs\n",
        undecided_markdown(results, folder),
    ]
    if "edelta_benchmarks" in results:
        parts += ["", echo_markdown(results["edelta_benchmarks"])]
    parts += ["\n## The CPU reruns that settle claims\n", cpu_plan_markdown(results)]
    parts += ["\n## Results from before the fused rule maths\n", before_fused_markdown(results)]
    parts += [
        "\n" + README_RULES,
        "## Verdicts\n",
        verdict_markdown(results),
        "\n## Under which rules each result was judged\n",
        judging_markdown(results),
        "\n## Findings, computed from the numbers\n",
        findings_markdown(results),
    ]
    if "edelta_benchmarks" in results:
        parts += [
            "\n## E∆ table: validation MSE, geolab small scale (paper: 2000 iterations, "
            "mean of 3 seeds)\n",
            edelta_markdown(results["edelta_benchmarks"]),
        ]
    for variant_result in variants_of(results, "edelta_benchmarks"):
        sized = is_matched(variant_result)
        parts += [
            f"\n## {variant_label(variant_result)}: validation MSE"
            + (", every model at GPT's parameter count" if sized else "")
            + f" (`{decide.variant_flags(variant_result)}`)\n",
            edelta_markdown(variant_result),
        ]
        if sized:
            parts += [
                "\nParameters (MLP hidden width) per model, and their spread against the 3 % "
                "check:\n",
                matched_sizes_markdown(variant_result),
            ]
    parts += [
        "\n## Wall time and provenance of each small-scale protocol\n",
        wall_times_markdown(results),
        "\n## Reductions from the papers' sizes\n",
        reductions_markdown(results),
    ]
    return "\n".join(parts) + "\n"
