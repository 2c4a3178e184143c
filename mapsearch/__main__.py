"""``python -m mapsearch`` runs the command line."""

import sys

from mapsearch.cli import main

sys.exit(main())
