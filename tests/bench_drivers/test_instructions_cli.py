"""``python -m benchmarks.instructions``: mistakes are one line and exit status 2."""

from __future__ import annotations

import pytest

from benchmarks import instructions


@pytest.mark.parametrize("argv", [["--workloads", "pipelined,bogus"], ["--calls", "0"],
                                  ["--workloads", ","]])
def test_a_bad_option_names_the_fix(argv: list[str], capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/" + name)
    assert instructions.main(argv) == 2
    err = capsys.readouterr().err
    assert "use --workloads pipelined,sequential and --calls N >= 1" in err
    assert err.count("\n") == 1


def test_without_valgrind_it_says_how_to_get_it(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main([]) == 2
    assert "valgrind is not installed (Debian: apt-get install valgrind)" in capsys.readouterr().err
