"""``python -m mcpactor``: the same command line as the ``mcpactor`` script.

Useful where the script is not on ``PATH`` (a venv not activated) or to pick the
interpreter explicitly, e.g. ``sys.executable -m mcpactor run app.py:server``.
"""

import sys

from mcpactor.cli import main

if __name__ == "__main__":
    sys.exit(main())
