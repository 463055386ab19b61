"""The results page's first two sections: what the lab established, what is open and why."""

from geolab.experiments import report
from geolab.experiments import verdicts as v


def _result(hyps, protocol="ablation"):
    return {"protocol": protocol, "config": {}, "hypotheses": hyps}


def _h(id_, verdict, reasons=(), extra=False):
    return {
        "id": id_,
        "claim": f"claim {id_}",
        "measured": f"measured {id_}",
        "verdict": verdict,
        "rule": "rule",
        "reasons": list(reasons),
        "extra": extra,
    }


RESULTS = {
    "ablation": _result(
        [
            _h("A", v.REPRODUCED),
            _h(
                "B",
                v.inconclusive([v.NOT_LEARNED, v.SIZES_DIFFER]),
                [v.NOT_LEARNED, v.SIZES_DIFFER],
            ),
            _h("C", v.undecided("its floor is above the line")),
            _h("D", v.undecided("its floor is above the line")),
            _h("E", v.NOT_REPRODUCED, extra=True),
            _h("F", v.INCONCLUSIVE),
            _h(
                "G",
                v.inconclusive(["cos: seed 2001 not settled: (b) …"]),
                ["cos: seed 2001 not settled: (b) …"],
            ),
            _h(
                "H",
                v.inconclusive(["no model learned the rotation"]),
                ["no model learned the rotation"],
            ),
        ]
    )
}


def test_established_lists_decided_claims_first_then_each_undecidable_reason_once():
    text = report.established_markdown(RESULTS)
    lines = text.splitlines()
    assert lines[0].startswith("- **reproduced** — ablation, A: claim A. Measured: measured A.")
    assert lines[1].startswith(
        "- **not reproduced at this scale** (a labelled extra) — ablation, E"
    )
    assert text.count("its floor is above the line") == 1
    assert "**2 claims undecidable on their task**" in text and "ablation: C; ablation: D" in text
    assert "ablation, B" not in text


def test_open_groups_every_undecided_counted_claim_by_why():
    text = report.open_markdown(RESULTS)
    assert "ablation: A" not in text and "ablation: E" not in text  # decided, extra
    assert f"**1 claim: {report.OPEN_WHY[v.NOT_LEARNED]}.** ablation: B" in text
    assert f"{report.OPEN_WHY[v.SIZES_DIFFER]}.** ablation: B" in text  # both reasons of B
    assert "**2 claims: no run of any size" in text
    assert f"{report.RULE_WHY}.** ablation: F" in text
    assert f"{report.SETTLED_WHY}.** ablation: G" in text
    assert "no model learned the rotation.** ablation: H" in text
    assert report.open_markdown({"x": _result([_h("A", v.REPRODUCED)])}) == (
        "Every counted claim is decided."
    )
