"""Ceiling: framework-free stdio echo with blocking I/O.

One loop: ``os.read`` whatever is available, answer every complete line in it, write
all the answers with one ``os.write``. Batching per read is what lets a pipelined
client be served with one syscall pair per burst; it is the fastest a Python process
can do this job, so it bounds everything else in the suite.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bare import answer_line


def main() -> None:
    """Serve stdin/stdout until stdin closes."""
    buf = b""
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out = [r for line in lines if line and (r := answer_line(line)) is not None]
        if out:
            data = memoryview(b"".join(out))
            while data:
                data = data[os.write(1, data) :]


if __name__ == "__main__":
    main()
