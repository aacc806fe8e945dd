"""The client code of `mcpactor demo` (it lives in ``mcpactor/demo/client.py``, so
that the demo runs from an installed wheel): ``main(client)`` lists the demo server's
tools, calls two, reads a resource and gets a prompt."""

from __future__ import annotations

from mcpactor.demo.client import main

__all__ = ["main"]
