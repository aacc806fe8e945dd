"""The packages ship their annotations (PEP 561), and the build says so."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["mcpactor", "replay"])
def test_the_package_is_marked_typed_and_ships_the_marker(package: str) -> None:
    assert importlib.resources.files(package).joinpath("py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"][package]


def test_the_license_file_matches_the_declared_license() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_python_dash_m_mcpactor_is_the_command_line() -> None:
    import subprocess
    import sys

    import mcpactor

    done = subprocess.run([sys.executable, "-m", "mcpactor", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert mcpactor.__version__ in done.stdout
    bad = subprocess.run([sys.executable, "-m", "mcpactor", "no-such-command"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
