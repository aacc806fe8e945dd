"""Tools that read the wall clock and entropy through the standard library's other doors:
``time.strftime``/``ctime``/``asctime``/``localtime``/``gmtime`` without a time argument,
``uuid.uuid1`` and ``os.getrandom`` — in the event loop and in a worker thread."""

import json
import os
import time
import uuid

import trio

from mcpactor import Server

server = Server("clock-forms", version="1.0")


def _stamps(tag: str) -> str:
    return json.dumps({
        "tag": tag,
        "strftime": time.strftime("%Y-%m-%d %H:%M:%S"),
        "ctime": time.ctime(),
        "asctime": time.asctime(),
        "localtime": list(time.localtime()),
        "gmtime": list(time.gmtime()),
        "uuid1": str(uuid.uuid1()),
        "getrandom": os.getrandom(6).hex(),
    })


@server.tool
async def stamps(tag: str, pause: float = 0.0) -> str:
    """The clock's forms and two kinds of entropy, after ``pause`` seconds."""
    await trio.sleep(pause)
    return _stamps(tag)


@server.tool
def stamps_in_thread(tag: str) -> str:
    """The same, read in a worker thread."""
    return _stamps(tag)
