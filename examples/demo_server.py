"""The `mcpactor demo` server, from a source checkout.

The server itself lives in the package (``mcpactor/demo/server.py``) so that
``mcpactor demo`` also runs from an installed wheel; this file keeps the old ways in:

    python examples/demo_server.py --trace demo.jsonl
    mcpactor run examples/demo_server.py:server
"""

from __future__ import annotations

from mcpactor.demo.server import main, server

__all__ = ["main", "server"]

if __name__ == "__main__":
    main()
