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
