"""The scale-out benchmark's deployments work: two ``mcpactor run --redis`` workers
behind HAProxy, round-robin and sticky, answer the driver's sessions (a broken
HAProxy config, a worker refusing the balancer's address or a relay failing would be
a BenchError), the stateless modes answer on any worker, and so does one
``mcpactor run --workers 2``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import scaleout
from benchmarks.core import SERVERS, Config, Target

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def _target(tmp_path: Path) -> Target:
    if scaleout.HAPROXY is None or scaleout.REDIS is None:
        pytest.fail("redis-server and haproxy are needed: run scripts/scaleout-deps.sh install")
    spec = next(s for s in SERVERS if s.name == "mcpactor")
    return Target(spec, Config(duration=0.3, warmup=0.05, http_conns=4), str(tmp_path))


@pytest.mark.parametrize(("mode", "sticky", "supervised"), [
    ("redis", False, False), ("redis", True, False), ("modern", False, False),
    ("stateless", False, False), ("modern", False, True)])
def test_deployments_answer_the_driver(tmp_path: Path, mode: str, sticky: bool,
                                       supervised: bool) -> None:
    target = _target(tmp_path)
    m = scaleout._throughput(target, target.cfg, mode, 2, sticky, supervised)
    assert m.calls > 0
    assert m.protocol_version == ("2026-07-28" if mode == "modern" else "2025-11-25")
    assert "2 workers" in m.extra["note"]
