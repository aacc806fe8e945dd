"""The packages ship their annotations (PEP 561), and the build says so."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["mcpactor", "mcpactor.replay"])
def test_the_package_is_marked_typed_and_ships_the_marker(package: str) -> None:
    assert importlib.resources.files(package).joinpath("py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"][package]


def test_every_package_folder_is_listed_and_nothing_generic_is_installed() -> None:
    # The package list is explicit (replay/ installs as mcpactor.replay): a new folder
    # must be added to it, or it would silently be left out of the wheel.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "mcpactor").rglob("*.py")}
    found |= {".".join(("mcpactor", *p.parent.relative_to(ROOT).parts))
              for p in (ROOT / "replay").rglob("*.py")}
    assert listed == found
    assert project["tool"]["setuptools"]["package-dir"] == {"mcpactor.replay": "replay"}
    assert all(name == "mcpactor" or name.startswith("mcpactor.") for name in listed)


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
