"""docs/guide/deployment.md: serving over HTTP from your own Trio program, with a health
check and a clean stop on SIGTERM; the same server as an ASGI app for hypercorn.

    python docs/examples/deployment_example.py            # PORT (default 8000)
    hypercorn --worker-class trio --bind 127.0.0.1:8000 deployment_example:app
"""

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from mcpactor import Client, Context, HttpRequest, Server


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[dict[str, int]]:
    print("deployment-example: starting", file=sys.stderr, flush=True)
    try:
        yield {"requests": 0}
    finally:
        print("deployment-example: stopped", file=sys.stderr, flush=True)


server = Server("deployment-example", version="1.0.0", lifespan=lifespan)


@server.tool
async def hello(name: str, ctx: Context) -> str:
    ctx.lifespan["requests"] += 1
    return f"hello {name}"


@server.custom_route("/health")
async def health(request: HttpRequest) -> dict[str, str]:
    """For the load balancer: 200 while the server runs."""
    return {"status": "ok"}


#: For an ASGI server on Trio: ``hypercorn --worker-class trio deployment_example:app``.
app = server.asgi_app(stateless=False, json_response=None)


async def main() -> None:
    port = int(os.environ.get("PORT", "8000"))
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(lambda task_status: server.serve_http(
                host="127.0.0.1", port=port, task_status=task_status))
            print(f"deployment-example: ready on {url}", file=sys.stderr, flush=True)
            async for _ in signals:  # SIGTERM: stop serving, close the lifespan, exit 0
                nursery.cancel_scope.cancel()
                break


async def demo(client: Client) -> None:
    said = await client.call_tool("hello", {"name": "Ada"})
    assert said.content[0].text == "hello Ada"  # type: ignore[union-attr]


if __name__ == "__main__":
    trio.run(main)
