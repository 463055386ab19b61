"""The gradebook files: CSV (a row per student, a 0/1 column per check), JSON (every message),
an LMS CSV (student id, total, maximum) and a feedback folder (``feedback``).

Hand-graded question: the teacher fills in a CSV with columns ``student,points,max`` (student =
the submission's file name without ``.py``); its points are added to the total.
"""

import csv
import json
import math
import unicodedata
from pathlib import Path

from geolab.assignments.feedback import write_feedback
from geolab.outputs import check_dir, check_file

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a formula
HEAD = ["submission", "status", "score", "max_score", "seconds", "seed", "error", "flag"]


def student_id(submission: str) -> str:
    """``alice.py`` -> ``alice`` (the id in the LMS file and the hand-graded CSV)."""
    return submission.rsplit(".", 1)[0]


def cell(value):
    """A CSV cell no spreadsheet reads as a formula: text starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'`` (OWASP's CSV-injection advice); numbers stay numbers.
    A file named ``=2+5.py`` would otherwise put a live formula in the LMS file."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def printable(text: str) -> str:
    """``text`` with every control or other non-printable character escaped (``\\r``,
    ``\\x1b``), so a file name cannot move the terminal's cursor or hide lines of a summary."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def read_hand_grades(path: Path) -> dict:
    """{student: points} and the question's maximum from the teacher's CSV, as
    ``{"max": float, "points": {...}}``; ValueError naming the row and field for bad input."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"hand_graded={str(path)!r} is not a file")
    try:
        return _read_hand_grades(path)
    except UnicodeDecodeError as err:  # the file, not a row: name it
        raise ValueError(
            f"hand_graded={str(path)!r} is not UTF-8 text (byte 0x{err.object[err.start]:02x}); "
            "save it as UTF-8 CSV"
        ) from None


def _read_hand_grades(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"student", "points", "max"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the header must name the columns student,points,max")
        points, top, seen = {}, None, {}
        for line, row in enumerate(reader, 2):
            try:
                value, most = float(row["points"]), float(row["max"])
            except (TypeError, ValueError):
                raise ValueError(
                    f"{path}:{line}: points={row['points']!r}, max={row['max']!r}: not numbers"
                ) from None
            if not (math.isfinite(value) and math.isfinite(most) and most > 0):
                raise ValueError(
                    f"{path}:{line}: points={value:g}, max={most:g}: both must be finite, max > 0"
                )
            if top is not None and most != top:
                raise ValueError(f"{path}:{line}: max={most:g}, but an earlier row has {top:g}")
            if not 0 <= value <= most:
                raise ValueError(f"{path}:{line}: points={value:g} is not in [0, {most:g}]")
            student = (row["student"] or "").strip()
            if not student:
                raise ValueError(f"{path}:{line}: the student column is empty")
            if student in seen:
                raise ValueError(
                    f"{path}:{line}: student {student!r} is graded twice (first on line "
                    f"{seen[student]}); keep one row per student"
                )
            seen[student] = line
            top, points[student] = most, value
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


def check_gradebook(out: Path, force: bool = False) -> None:
    """ValueError naming --out when the gradebook cannot be written, or would replace an earlier
    one without ``force``: checked before grading, so a bad --out does not throw the grading
    away. --out names the CSV: another suffix, or a folder, would silently become NAME.csv."""
    out = Path(out)
    if out.is_dir():
        raise ValueError(
            f"--out={str(out)!r} is not allowed: it is a folder; name the gradebook CSV, e.g. "
            f"{str(out / 'gradebook.csv')!r}"
        )
    if out.suffix.lower() != ".csv":
        raise ValueError(
            f"--out={str(out)!r} is not allowed: the gradebook is a CSV file; name it "
            f"{str(out.with_suffix('.csv'))!r}"
        )
    *files, feedback = gradebook_paths(out)
    for path in files:
        check_file(path, "--out")
    check_dir(feedback, "--out (its feedback folder)")
    earlier = [p.name for p in files if p.exists()]
    earlier += [feedback.name] if feedback.is_dir() and any(feedback.iterdir()) else []
    if earlier and not force:
        raise ValueError(
            f"--out={str(out)!r} already holds a gradebook ({', '.join(earlier)}); pass --force "
            "to replace it (feedback files of students not in this run are removed), or choose "
            "another --out"
        )


def check_student_ids(submissions) -> None:
    """ValueError when two submissions share a student id (``alice.py`` and ``Alice.PY``, or
    ``José.py`` written in NFC and in NFD): their gradebook rows, LMS line and feedback file
    would collide. Case and Unicode normalisation are ignored, as they are by the file systems
    of macOS and Windows that the feedback folder may be opened on. The names are listed
    escaped (``ascii``), so two that print alike are told apart."""
    owners: dict[str, list[str]] = {}
    for name in submissions:
        key = unicodedata.normalize("NFC", student_id(name)).casefold()
        owners.setdefault(key, []).append(name)
    clashes = [names for names in owners.values() if len(names) > 1]
    if clashes:
        listed = "; ".join(" and ".join(ascii(n) for n in names) for names in clashes)
        raise ValueError(
            f"SUBMISSIONS_DIR holds submissions of one student id (names equal up to case or "
            f"Unicode normalisation): {listed}; rename or remove all but one of each"
        )


def write_gradebook(rows: list[dict], out: Path, hand: dict | None = None):
    """Write ``out`` as CSV (one 0/1 column per check), ``out`` with suffix .json, the LMS CSV
    ``<out>_lms.csv`` and ``<out>_feedback/<student>.md``. Returns (paths, warnings)."""
    csv_path, json_path, lms_path, feedback = gradebook_paths(out)
    check_student_ids(row["submission"] for row in rows)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    rows, notes = totals(rows, hand)
    kept = {f"{student_id(row['submission'])}.md" for row in rows}
    stale = sorted(p for p in feedback.glob("*.md") if p.name not in kept)
    for path in stale:  # an earlier gradebook's feedback to students not graded now
        path.unlink()
    if stale:
        notes.append(
            f"removed {len(stale)} feedback file(s) of an earlier gradebook for students not in "
            f"this run: {', '.join(p.name for p in stale)}"
        )
    names = list(dict.fromkeys(c["name"] for row in rows for c in row["checks"]))
    head = HEAD + (["hand"] if hand else []) + ["total", "total_max"]
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow([cell(name) for name in head + names])
        for row in rows:
            passed = {c["name"]: int(c["passed"]) for c in row["checks"]}
            cells = ["" if row.get(k) is None else row[k] for k in head]
            writer.writerow([cell(v) for v in cells + [passed.get(n, 0) for n in names]])
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1, ensure_ascii=False)
    with open(lms_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student_id", "total", "max"])
        for row in rows:
            writer.writerow([cell(student_id(row["submission"])), row["total"], row["total_max"]])
    folder = write_feedback(rows, feedback)
    return [csv_path, json_path, lms_path, folder], notes
