"""Figure files: every figure as HTML, and as PNG when kaleido finds a Chrome/Chromium.

The HTML files open offline: they load ``plotly.min.js`` from their own folder, written there
once by plotly (``include_plotlyjs="directory"``), never from a CDN.
"""

import os
import shutil
from pathlib import Path


def chrome_path() -> str | None:
    """A Chrome/Chromium binary kaleido can drive, or None."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def save_figures(figures: dict, out: Path, stem: str, png: bool, log) -> dict:
    """Write each figure as HTML (always, with ``out/plotly.min.js`` beside it) and PNG (when
    possible); returns file names and notes."""
    written, note = [], None
    chrome = chrome_path() if png else None
    if png and chrome is None:
        note = "PNG skipped: no Chrome/Chromium found for kaleido (HTML written)"
    if chrome is not None:
        try:
            import kaleido  # noqa: F401 (only probing that it is installed)
        except ImportError:
            chrome, note = None, "PNG skipped: kaleido is not installed (HTML written)"
    if note:
        log(note)
    for name, fig in figures.items():
        html = out / f"{stem}-{name}.html"
        # a fixed div id (plotly draws a random one) keeps a redrawn, unchanged figure's file
        # byte-identical, so regenerating the results README touches only what changed
        fig.write_html(html, include_plotlyjs="directory", full_html=True, div_id=html.stem)
        written.append(html.name)
        if chrome is not None:
            os.environ.setdefault("BROWSER_PATH", chrome)
            path = out / f"{stem}-{name}.png"
            err = write_png(fig, path)
            if err is None:
                written.append(path.name)
            else:
                note = f"PNG skipped: kaleido failed ({type(err).__name__}: {err})"[:300]
                log(note)
                chrome = None
    return {"files": written, "png_note": note}


def write_png(fig, path: Path, tries: int = 3) -> Exception | None:
    """Write ``fig`` as PNG; None when written, else kaleido's last error.

    A busy machine makes kaleido's browser page answer before its scripts load ("kaleido_scopes
    is not defined"), so a failed write is tried again before the PNG is given up.
    """
    err = None
    for _ in range(tries):
        try:
            fig.write_image(path, width=900, height=fig.layout.height or 450, scale=1)
            return None
        except Exception as caught:  # noqa: BLE001 (kaleido raises many types; HTML still stands)
            err = caught
    return err
