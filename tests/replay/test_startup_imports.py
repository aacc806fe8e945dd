"""What `mcpactor run` does not load: the replay engine (and with it trio.testing and
pytest) belongs to `mcpactor replay`, not to every start of a server."""

from __future__ import annotations

import subprocess
import sys


def test_building_the_command_line_leaves_the_replay_engine_unloaded() -> None:
    probe = (
        "import sys, mcpactor.cli as c; c.build_parser(); "
        "print(sorted(m for m in ('mcpactor.replay.engine', 'trio.testing', 'pytest', 'jwt') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    assert out == "[]"


def test_the_package_still_offers_its_names() -> None:
    from mcpactor import replay

    assert callable(replay.replay) and replay.Trace.__name__ == "Trace"
    assert set(replay.__all__) <= set(dir(replay)) | set(replay._WHERE)
