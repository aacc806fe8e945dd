"""Records a racy session of bank.py over stdio (``python drive.py OUT.jsonl``):
tools/list, then rounds of concurrent withdrawals, deposits and audits."""

import sys
from pathlib import Path

import trio

from mcpactor import connect_stdio

HERE = Path(__file__).resolve().parent


async def main(trace: str, rounds: int = 4) -> None:
    command = [sys.executable, "-m", "mcpactor.cli", "run", f"{HERE / 'bank.py'}:server",
               "--trace", trace]
    async with connect_stdio(command) as client:
        await client.list_tools()
        for _ in range(rounds):
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(client.call_tool, "withdraw", {"amount": 60})
                    nursery.start_soon(client.call_tool, "deposit", {"amount": 40})
                nursery.start_soon(client.call_tool, "audit", {})
                nursery.start_soon(client.call_tool, "audit", {})
            await client.call_tool("audit", {})


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
