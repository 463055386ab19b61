"""The one place a user error becomes one line on stderr and exit status 2, for every command.

Everything geolab rejects about its input raises ValueError naming the field or flag, the value
and what is allowed (GeoConfig, TrainConfig, the run folder, the data files, the checkpoint, the
memory estimate, ...). Commands raise; only ``run`` prints, so no command catches on its own, and
it names a config field set by a flag as that flag (``GeoConfig.n_layer=0`` -> ``--layers 0``).

Under ``torchrun`` every rank validates the same input before joining the process group, so
every rank fails alike; rank 0 alone prints. torchrun stops all ranks as soon as one exits, so
the others wait for that (up to ``RANK_WAIT_S``) rather than race rank 0 and cut its message
off, and answer torchrun's SIGTERM with exit status 2 too.

Ctrl-C is not an error either: it prints ``prog: interrupted`` instead of a traceback and exits
130 (128 + SIGINT), as shells do. ``geolab train`` saves a checkpoint first and says where; a
packed sweep (``geolab reproduce --jobs N``) stops its workers on SIGINT or SIGTERM, keeps its
finished runs and exits 130 or 143 with its own line.
"""

import os
import re
import signal
import sys
import time

from geolab.outputs import check_names

RANK_WAIT_S = 30.0
# config fields whose flag is not named after them (the others: --field-name)
FIELD_FLAGS = {"n_layer": "--layers", "n_head": "--heads", "out_dir": "--out"}


def flag_names(message: str, args) -> str:
    """``message`` with every ``GeoConfig.FIELD=VALUE`` / ``TrainConfig.FIELD=VALUE`` that a
    flag of this command sets written as the flag the user typed, ``--FLAG VALUE`` (a switch's
    ``=True`` dropped): the configs name their fields, the command line names its flags."""
    flags = {"--" + dest.replace("_", "-") for dest in vars(args)}

    def swap(m: re.Match) -> str:
        flag = FIELD_FLAGS.get(m[2], "--" + m[2].replace("_", "-"))
        if flag not in flags:
            return m[0]
        return flag if m[3] in ("", "=True") else f"{flag} {m[3][1:]}"

    message = re.sub(r"\b(GeoConfig|TrainConfig)\.(\w+)(=True\b|=|)", swap, message)
    return _path_flag_names(message, args)


def _path_flag_names(message: str, args) -> str:
    """``message`` with a path flag's field written as its flag: ``hand_graded='x'`` (the
    grader's and release's own names) as ``--hand-graded 'x'``, and a message about the file a
    flag gave (``hand.csv:4: ...``) led by that flag, for the flags of this command."""
    for dest, flag in PATH_FLAGS.items():
        if flag.startswith("--") and dest in vars(args):
            message = re.sub(rf"(?<![\w.-]){dest}=(?=['\"])", f"{flag} ", message)
            value = getattr(args, dest)
            if isinstance(value, str) and value and message.startswith(f"{value}:"):
                message = f"{flag} {message}"
    return message


# Path flags (argparse dest -> what the user typed): an empty one names no file or folder;
# pathlib would quietly read it as ".", the current folder.
PATH_FLAGS = {
    "out": "--out",
    "src": "--src",
    "data_dir": "--data-dir",
    "hand_graded": "--hand-graded",
    "hidden": "--hidden",
    "submissions": "SUBMISSIONS_DIR",
}


def check_path_flags(args) -> None:
    """A path flag that names nothing (empty), or holds a name longer than the file system
    allows, is refused before any command reads or writes it."""
    for dest, flag in PATH_FLAGS.items():
        value = getattr(args, dest, None)
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{flag} {value!r} is not allowed: it names no file or folder")
        if isinstance(value, str):
            check_names(value, flag)


def run(prog: str, func, args) -> int:
    """``func(args)``, or 2 after printing ``prog: error: <message>`` for a ValueError, or 130
    after ``prog: interrupted`` for Ctrl-C."""
    try:
        check_path_flags(args)
        return func(args)
    except KeyboardInterrupt as stop:  # Ctrl-C, or a command's own stop (``signum``, a line)
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"{prog}: {str(stop) or 'interrupted'}", file=sys.stderr)
        return 128 + getattr(stop, "signum", signal.SIGINT)
    except BrokenPipeError:  # `geolab info | head`: the reader left, which is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second one at exit
        return 0
    except ValueError as err:
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"{prog}: error: {flag_names(str(err), args)}", file=sys.stderr)
        else:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
            time.sleep(RANK_WAIT_S)
        return 2
