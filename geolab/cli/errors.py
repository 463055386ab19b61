"""The one place a user error becomes one line on stderr and exit status 2, for every command.

Everything geolab rejects about its input raises ValueError naming the field or flag, the value
and what is allowed (GeoConfig, TrainConfig, the run folder, the data files, the checkpoint, the
memory estimate, ...). Commands raise; only ``run`` prints, so no command catches on its own.

Under ``torchrun`` every rank validates the same input before joining the process group, so
every rank fails alike; rank 0 alone prints. torchrun stops all ranks as soon as one exits, so
the others wait for that (up to ``RANK_WAIT_S``) rather than race rank 0 and cut its message
off, and answer torchrun's SIGTERM with exit status 2 too.

Ctrl-C is not an error either: it prints ``prog: interrupted`` instead of a traceback and exits
130 (128 + SIGINT), as shells do. ``geolab train`` saves a checkpoint first and says where.
"""

import os
import signal
import sys
import time

RANK_WAIT_S = 30.0


def run(prog: str, func, args) -> int:
    """``func(args)``, or 2 after printing ``prog: error: <message>`` for a ValueError, or 130
    after ``prog: interrupted`` for Ctrl-C."""
    try:
        return func(args)
    except KeyboardInterrupt:
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"{prog}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except ValueError as err:
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"{prog}: error: {err}", file=sys.stderr)
        else:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
            time.sleep(RANK_WAIT_S)
        return 2
