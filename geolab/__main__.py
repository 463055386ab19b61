"""``python -m geolab`` and the ``geolab`` command: ``geolab.cli.main`` behind a Ctrl-C guard.

A Ctrl-C while the command line itself loads (before ``main`` runs, so before ``errors.run``
can turn it into one line) ends the same way: one line and exit status 130, nothing done.
"""

import sys


def run() -> int:
    """Load the command line and run it; 130 after one line for a Ctrl-C while it loads."""
    try:
        from geolab.cli import main
    except KeyboardInterrupt:
        print("geolab: interrupted while starting: nothing was done", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
