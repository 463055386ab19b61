"""Figure files: every figure as HTML, and as PNG when kaleido finds a Chrome/Chromium.

The HTML files open offline: they load ``plotly.min.js`` from their own folder, never from a
CDN (``include_plotlyjs="directory"``). Every file is written to a temporary name and renamed
over its own (``outputs.replace_atomically``), so a full disk leaves the earlier file or none,
never a cut one: plotly itself would write ``plotly.min.js`` in place, and then keep a cut copy
forever, since it writes the bundle only when none is there.
"""

import os
import shutil
from pathlib import Path

from geolab.outputs import replace_atomically


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
    if figures:
        write_plotly_bundle(out)
    for name, fig in figures.items():
        html = out / f"{stem}-{name}.html"
        # a fixed div id (plotly draws a random one) keeps a redrawn, unchanged figure's file
        # byte-identical, so regenerating the results README touches only what changed
        replace_atomically(html, lambda tmp, fig=fig, html=html: write_html(fig, tmp, html.stem))
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


def write_plotly_bundle(out: Path) -> None:
    """``out/plotly.min.js``, the plotly.js the HTML files load, written unless the same bundle
    is there (a file of another size, cut short by a full disk or of another plotly version, is
    replaced)."""
    from plotly.offline import get_plotlyjs

    bundle = get_plotlyjs().encode()
    path = out / "plotly.min.js"
    if path.is_file() and path.stat().st_size == len(bundle):
        return
    replace_atomically(path, lambda tmp: tmp.write_bytes(bundle))


def write_html(fig, tmp: Path, div_id: str) -> None:
    """``fig`` as a full HTML page in ``tmp`` that loads plotly.min.js from its folder."""
    fig.write_html(tmp, include_plotlyjs="directory", full_html=True, div_id=div_id)


def write_png(fig, path: Path, tries: int = 3) -> Exception | None:
    """Write ``fig`` as PNG; None when written, else kaleido's last error.

    A busy machine makes kaleido's browser page answer before its scripts load ("kaleido_scopes
    is not defined"), so a failed write is tried again before the PNG is given up.
    """
    err = None
    size = {"width": 900, "height": fig.layout.height or 450, "scale": 1}
    for _ in range(tries):
        try:
            replace_atomically(path, lambda tmp: fig.write_image(tmp, format="png", **size))
            return None
        except OSError:  # the disk, not kaleido: the caller says what it means
            raise
        except Exception as caught:  # noqa: BLE001 (kaleido raises many types; HTML still stands)
            err = caught
    return err
