"""Which rules judged a result: a content hash of the judging code, the commit that judged, and
whether those rules are newer than the runs they judged.

A verdict rule may change after results exist, but then every affected result must say under
which rules it was judged and whether that changed a verdict (docs/design.md §8). The rules of a
protocol are the text of the modules its verdicts are computed by: ``RULE_FILES`` (verdicts,
baselines, convergence, stats), those in ``OWN_RULE_FILES`` (the claimed-quantity rule) and the
protocol's own module. ``rules_hash`` is the SHA-256 of
those files (in that order, each prefixed by its path), first 16 hex digits; the same hash read
from ``git show COMMIT:PATH`` (``rules_hash_at``) says whether the rules at the runs' commit equal
today's. The protocol module also holds its training code, so a change there counts as a rule
change too: the record errs towards "newer".

Every result file carries ``"judging"`` (``record``):

* ``rules`` / ``commit`` / ``dirty`` / ``judged_utc``: the rules hash, and the checkout that judged;
* ``runs_commit`` and ``rules_at_runs``: the commit that trained the runs and the rules hash
  there (None when git cannot show it);
* ``newer_than_runs``: True when the rules differ from those at the runs' commit (None unknown);
* ``at_runs``: ``{claim id: verdict}`` as judged when the runs finished (None for a file written
  before this record existed);
* ``first_recorded``: the verdicts the file held when this record began (for an older file,
  those it carried before its first rejudging under the record);
* ``changed``: the claims whose verdict differs from ``at_runs`` (or, where that is unknown, from
  ``first_recorded``; ``compared_with`` says which): ``{"id", "before", "after"}`` each.
"""

import hashlib
import subprocess
import time
from pathlib import Path

from geolab.revision import git_revision

RULE_FILES = (
    "geolab/experiments/verdicts.py",
    "geolab/experiments/baselines.py",
    "geolab/experiments/convergence.py",
    "geolab/experiments/stats.py",
)
# rule modules only some protocols judge by
OWN_RULE_FILES = {
    name: ("geolab/experiments/settled.py",) for name in ("reflection", "ddl_controls")
}
ROOT = Path(__file__).resolve().parents[2]


def rule_files(protocol: str) -> tuple[str, ...]:
    """The repository paths whose text is the rules of ``protocol``."""
    return (*RULE_FILES, *OWN_RULE_FILES.get(protocol, ()), f"geolab/experiments/{protocol}.py")


def _digest(texts: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for path, text in texts:
        h.update(path.encode() + b"\0" + text + b"\0")
    return h.hexdigest()[:16]


def rules_hash(protocol: str) -> str:
    """The hash of the rules of ``protocol`` in this checkout (module docstring)."""
    return _digest([(p, (ROOT / p).read_bytes()) for p in rule_files(protocol)])


def rules_hash_at(commit: str | None, protocol: str) -> str | None:
    """The hash of the rules of ``protocol`` at git ``commit`` (None without git, an unknown
    commit or a rule file missing there)."""
    if not commit:
        return None
    texts = []
    for path in rule_files(protocol):
        try:
            shown = subprocess.run(
                ["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if shown.returncode:
            return None
        texts.append((path, shown.stdout))
    return _digest(texts)


def verdicts_of(hypotheses: list[dict]) -> dict:
    """{claim id: verdict} of a result's hypotheses."""
    return {h["id"]: h["verdict"] for h in hypotheses}


def record(result: dict, before: dict | None = None) -> dict:
    """The ``"judging"`` entry of ``result`` just judged (module docstring). ``before``: for a
    rejudging, the result as it was stored (its ``"judging"`` entry, if any, and its verdicts);
    None for a fresh run, whose verdicts are the verdicts at its runs."""
    protocol = result["protocol"]
    git = git_revision()
    runs_commit = result["provenance"]["git"].get("commit")
    now, at_runs_hash = rules_hash(protocol), rules_hash_at(runs_commit, protocol)
    verdicts = verdicts_of(result["hypotheses"])
    if before is None:
        at_runs = first = verdicts
    else:
        old = before.get("judging") or {}
        at_runs = old.get("at_runs")
        first = old.get("first_recorded") or verdicts_of(before["hypotheses"])
    compare = at_runs if at_runs is not None else first
    newer = None if at_runs_hash is None else at_runs_hash != now
    return {
        "rules": now,
        "rule_files": list(rule_files(protocol)),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "judged_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs_commit": runs_commit,
        "rules_at_runs": at_runs_hash,
        "newer_than_runs": newer,
        "at_runs": at_runs,
        "first_recorded": first,
        "compared_with": "at_runs" if at_runs is not None else "first_recorded",
        "changed": [
            {"id": k, "before": compare[k], "after": v}
            for k, v in verdicts.items()
            if k in compare and compare[k] != v
        ],
    }


def summary_line(name: str, judging: dict | None) -> str:
    """One line for the README: under which rules ``name`` was judged and what they changed."""
    if not judging:
        return f"- **{name}**: no judging record (written before rules were recorded)."
    runs = (judging["runs_commit"] or "?")[:10]
    at = (judging["commit"] or "?")[:10] + (" (dirty)" if judging["dirty"] else "")
    newer = {
        True: "rules newer than the runs",
        False: "the rules of the runs' own commit",
        None: "rules at the runs' commit unknown",
    }[judging["newer_than_runs"]]
    text = f"- **{name}**: runs at {runs}; judged at {at} by rules {judging['rules']}, {newer}"
    if judging["at_runs"] is None:
        text += "; the verdicts at the runs' commit were not recorded"
    changed = judging["changed"]
    if changed:
        since = (
            "the runs"
            if judging["compared_with"] == "at_runs"
            else "the verdicts stored before rules were recorded"
        )
        text += f"; changed since {since}: " + "; ".join(
            f"{c['id']}: *{c['before']}* → *{c['after']}*" for c in changed
        )
    elif judging["newer_than_runs"]:
        text += "; no verdict changed"
    return text + "."
