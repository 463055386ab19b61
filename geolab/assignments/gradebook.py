"""The gradebook files: CSV (a row per student, a 0/1 column per check), JSON (every message),
an LMS CSV (student id, total, maximum) and a feedback folder (``feedback``).

Hand-graded question: the teacher fills in a CSV with columns ``student,points,max`` (student =
the submission's file name without ``.py``); its points are added to the total.
"""

import csv
import json
from pathlib import Path

from geolab.assignments.feedback import write_feedback
from geolab.outputs import check_dir, check_file

HEAD = ["submission", "status", "score", "max_score", "seconds", "seed", "error"]


def student_id(submission: str) -> str:
    """``alice.py`` -> ``alice`` (the id in the LMS file and the hand-graded CSV)."""
    return submission.rsplit(".", 1)[0]


def read_hand_grades(path: Path) -> dict:
    """{student: points} and the question's maximum from the teacher's CSV, as
    ``{"max": float, "points": {...}}``; ValueError naming the row and field for bad input."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"hand_graded={str(path)!r} is not a file")
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"student", "points", "max"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the header must name the columns student,points,max")
        points, top = {}, None
        for line, row in enumerate(reader, 2):
            try:
                value, most = float(row["points"]), float(row["max"])
            except (TypeError, ValueError):
                raise ValueError(
                    f"{path}:{line}: points={row['points']!r}, max={row['max']!r}: not numbers"
                ) from None
            if top is not None and most != top:
                raise ValueError(f"{path}:{line}: max={most:g}, but an earlier row has {top:g}")
            if not 0 <= value <= most:
                raise ValueError(f"{path}:{line}: points={value:g} is not in [0, {most:g}]")
            top, points[row["student"].strip()] = most, value
    if top is None:
        raise ValueError(f"{path}: no rows")
    return {"max": top, "points": points}


def totals(rows: list[dict], hand: dict | None) -> tuple[list[dict], list[str]]:
    """Each row with ``hand``, ``total`` and ``total_max``; warnings for students without a
    hand grade and hand grades without a submission."""
    notes, out = [], []
    names = {student_id(r["submission"]) for r in rows}
    for row in rows:
        sid = student_id(row["submission"])
        got = hand["points"].get(sid) if hand else None
        if hand and got is None:
            notes.append(f"warning: no hand grade for {sid}: counted as 0")
        extra = {"hand": got, "total": row["score"] + (got or 0.0)}
        out.append({**row, **extra, "total_max": row["max_score"] + (hand["max"] if hand else 0)})
    for sid in sorted(set(hand["points"]) - names) if hand else ():
        notes.append(f"warning: hand grade for {sid}, who has no graded submission")
    return out, notes


def gradebook_paths(out: Path) -> tuple[Path, Path, Path, Path]:
    """The CSV, JSON and LMS files and the feedback folder of gradebook ``out``."""
    out = Path(out)
    csv_path, json_path = out.with_suffix(".csv"), out.with_suffix(".json")
    lms_path, feedback = out.with_name(out.stem + "_lms.csv"), out.with_name(out.stem + "_feedback")
    return csv_path, json_path, lms_path, feedback


def check_gradebook(out: Path) -> None:
    """ValueError naming --out when any gradebook file cannot be written: checked before grading,
    so a bad --out does not throw the grading away."""
    *files, feedback = gradebook_paths(out)
    for path in files:
        check_file(path, "--out")
    check_dir(feedback, "--out (its feedback folder)")


def write_gradebook(rows: list[dict], out: Path, hand: dict | None = None):
    """Write ``out`` as CSV (one 0/1 column per check), ``out`` with suffix .json, the LMS CSV
    ``<out>_lms.csv`` and ``<out>_feedback/<student>.md``. Returns (paths, warnings)."""
    csv_path, json_path, lms_path, feedback = gradebook_paths(out)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    rows, notes = totals(rows, hand)
    names = list(dict.fromkeys(c["name"] for row in rows for c in row["checks"]))
    head = HEAD + (["hand"] if hand else []) + ["total", "total_max"]
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(head + names)
        for row in rows:
            passed = {c["name"]: int(c["passed"]) for c in row["checks"]}
            cells = ["" if row[k] is None else row[k] for k in head]
            writer.writerow(cells + [passed.get(n, 0) for n in names])
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1, ensure_ascii=False)
    with open(lms_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student_id", "total", "max"])
        for row in rows:
            writer.writerow([student_id(row["submission"]), row["total"], row["total_max"]])
    folder = write_feedback(rows, feedback)
    return [csv_path, json_path, lms_path, folder], notes
