"""``python -m pyrt``: see pyrt.cli."""

import sys

from pyrt.cli import main

if __name__ == "__main__":
    sys.exit(main())
