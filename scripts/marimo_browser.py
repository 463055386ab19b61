"""Serve a marimo notebook on 127.0.0.1 and drive it with Debian's chromium through Playwright.

Shared by the real-browser test (tests/test_browser.py) and the screenshot script
(scripts/screenshots.py). Never downloads a browser: it uses the system chromium only.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager, suppress
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("GEOLAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ENABLE_HINT = (
    "Debian's chromium is needed for the real-browser checks: `sudo apt-get install chromium` "
    "(or point GEOLAB_CHROMIUM at a Chrome/Chromium binary); Playwright never downloads one here."
)

# Every plotly figure marimo shows, as plotted: title, and each trace's name, x and y (plain
# arrays, or plotly's base64 typed arrays {dtype, bdata}, decoded in Python).
PLOTS_JS = """() => Array.from(document.querySelectorAll('marimo-plotly')).map(el => {
  const g = el.shadowRoot && el.shadowRoot.querySelector('.js-plotly-plot');
  if (!g || !g.data) return null;
  const arr = v => (v == null ? null : (v.bdata ? v : Array.from(v)));
  return {title: (g.layout.title && g.layout.title.text) || '',
          traces: g.data.map(t => ({name: t.name, x: arr(t.x), y: arr(t.y)}))};
}).filter(p => p !== null)"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(
    notebook: Path, log: Path, startup_s: float = 90.0, env: dict | None = None, mode: str = "run"
):
    """``marimo run NOTEBOOK`` (``mode="edit"``: ``marimo edit``, without a token) on a free
    127.0.0.1 port; yields its URL; stops it. ``env`` replaces the server's environment
    (default: this process's)."""
    port = free_port()
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "marimo", mode, str(notebook), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--headless"]
    if mode == "edit":
        cmd += ["--no-token", "--skip-update-check"]
    proc = _start(cmd, log, env)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            _check_alive(proc, log)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"marimo did not listen within {startup_s}s") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/"
    finally:
        _stop(proc)


@contextmanager
def make_tour(log: Path, startup_s: float = 120.0):
    """The README's first command, ``make tour`` (set-up check, then ``marimo edit`` of the
    tour), on a free port (the Makefile's PORT); yields the URL with the access token it
    prints; stops make and the server it started (one process group)."""
    port = free_port()
    env = {**os.environ, "BROWSER": "true"}  # marimo would open a browser window: none here
    proc = _start(["make", "--no-print-directory", "tour", f"PORT={port}"], log, env)
    token = re.compile(rf":{port}/?\?access_token=([\w-]+)")
    try:
        deadline = time.monotonic() + startup_s
        while not (found := token.search(re.sub(r"\x1b\[[0-9;]*m", "", log.read_text()))):
            _check_alive(proc, log)
            if time.monotonic() > deadline:
                raise RuntimeError(f"make tour printed no URL within {startup_s}s; see {log}")
            time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/?access_token={found[1]}"
    finally:
        _stop(proc)


def _start(cmd: list[str], log: Path, env: dict) -> subprocess.Popen:
    """``cmd`` in a process group of its own (what it starts is stopped with it), output to
    ``log``."""
    with open(log, "w") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO, start_new_session=True
        )


def _check_alive(proc: subprocess.Popen, log: Path) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}; see {log}")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group ``_start`` made; SIGKILL to what is left of it after 20 s."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        proc.poll()  # reaps the leader, so an empty group is gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def launch(playwright):
    """Headless Debian chromium (no download, no network, no GPU)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def _decode(v):
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape(v["shape"]).tolist() if "shape" in v else a.tolist()
    return v


def plots(page) -> list[dict]:
    found = page.evaluate(PLOTS_JS)
    for fig in found:
        for trace in fig["traces"]:
            trace["x"], trace["y"] = _decode(trace["x"]), _decode(trace["y"])
    return found


def plot(page, title_start: str) -> dict:
    """The plotted figure whose title starts with ``title_start`` (one must exist)."""
    found = [p for p in plots(page) if p["title"].startswith(title_start)]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} plots titled {title_start!r}: {plots(page)!r:.500}")
    return found[0]
