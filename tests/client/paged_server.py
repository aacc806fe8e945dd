"""An mcpactor server with more of everything than fits on one page (page size 2)."""

from __future__ import annotations

from mcpactor import Server

server = Server("paged", "1.0", page_size=2)


def _register() -> None:
    for i in range(5):
        server.tool(name=f"tool{i}", description=f"tool number {i}")(lambda: "ok")
        server.resource(f"paged://r/{i}", name=f"r{i}")(lambda i=i: f"resource {i}")
    for i in range(3):
        server.resource_template(f"paged://t{i}/{{id}}", name=f"t{i}")(lambda id: id)
        server.prompt(name=f"prompt{i}")(lambda: "hello")


_register()
