"""Load a submitted marimo notebook: the names it defines (what ``worker`` runs, and what the
tests use to check a notebook in place)."""

import importlib.util
import sys
import traceback
from pathlib import Path


def load_submission(path: Path, stubs) -> dict:
    """The names a submitted marimo notebook defines.

    Stubs written as marimo top-level functions/classes (``@app.function``) are module
    attributes, found by importing the file without running its cells. If a stub became an
    ordinary cell (it reads another cell's variable), the notebook is run once with ``app.run()``
    and its definitions are added.
    """
    spec = importlib.util.spec_from_file_location("submission", path)
    if spec is None:
        raise ValueError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # marimo's app.run() looks the notebook module up here
    spec.loader.exec_module(module)
    names = dict(vars(module))
    app = names.get("app")
    if hasattr(app, "run") and any(stub not in names for stub in stubs):
        try:
            _, defs = app.run()
            names = {**dict(defs.items()), **names}
        except Exception:  # a crashing cell must not hide the stubs already found
            traceback.print_exc()
    return names
