"""``python -m geolab.train ...``: the same as ``geolab train``, handy under ``torchrun``."""

import sys

from geolab.cli.train import main

sys.exit(main())
