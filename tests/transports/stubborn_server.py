"""A server that keeps running after its stdin closes, to test SIGTERM on shutdown."""

import trio

from mcpactor import Server

server = Server("stubborn", "1.0")


async def main() -> None:
    await server.serve_stdio()
    await trio.sleep(3600)  # ignore the end of input; only a signal ends this process


if __name__ == "__main__":
    trio.run(main)
