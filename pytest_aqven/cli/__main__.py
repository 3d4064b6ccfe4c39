"""`python -m pytest_aqven.cli`: the `aqven` command."""
import sys

from . import main

if __name__ == "__main__":      # a walk of the package's modules imports this file too
    sys.exit(main())
