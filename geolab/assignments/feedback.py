"""One feedback file per student: status, score, and every check with pass/fail and message."""

from pathlib import Path


def render(row: dict) -> str:
    """The Markdown feedback of one gradebook row."""
    lines = [f"# {row['submission']}", ""]
    lines.append(f"- status: {row['status']}")
    lines.append(f"- checks: {row['score']:g} / {row['max_score']:g} points")
    if row.get("hand") is not None:
        lines.append(f"- hand-graded question: {row['hand']:g}")
    lines.append(f"- total: {row['total']:g} / {row['total_max']:g}")
    lines.append(f"- inputs drawn from seed {row['seed']}")
    if row["error"]:
        lines.append(f"- error: {row['error']}")
    lines += ["", "| check | result | points | message |", "|---|---|---|---|"]
    for c in row["checks"]:
        name = c["name"] + (" (hidden check)" if c.get("hidden") else "")
        message = c["message"].replace("|", "\\|").replace("\n", " ")
        result = "pass" if c["passed"] else "fail"
        lines.append(f"| {name} | {result} | {c['points']:g} | {message} |")
    return "\n".join(lines) + "\n"


def write_feedback(rows: list[dict], folder: Path) -> Path:
    """``folder/<student>.md`` for every row; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for row in rows:
        name = row["submission"].rsplit(".", 1)[0]
        (folder / f"{name}.md").write_text(render(row), encoding="utf-8")
    return folder
