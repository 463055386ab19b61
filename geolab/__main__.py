import sys

from geolab.cli import main

sys.exit(main())
