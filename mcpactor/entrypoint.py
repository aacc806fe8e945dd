"""Loading a server (or any object) from an entry point such as ``path/file.py:server``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


class EntryPointError(Exception):
    """An entry point that cannot be loaded; the message says why and what to do."""


_DEFAULT_ATTRS = ("server", "app", "mcp")


def load_entry_point(spec: str) -> Any:
    """Import ``module:attr`` or ``path/to/file.py:attr`` and return the attribute.

    Without ``:attr`` the module's ``server`` (or ``app``, ``mcp``) is used.
    """
    target, _, attr = spec.partition(":")
    if not target:
        raise EntryPointError(f"empty entry point {spec!r}: use path/to/file.py:server or module:server")
    if target.endswith(".py") or "/" in target:
        path = Path(target)
        if not path.is_file():
            raise EntryPointError(f"no such file: {target} (entry points look like path/to/file.py:server)")
        module_name = f"_mcpactor_entry_{path.stem}"
        file_spec = importlib.util.spec_from_file_location(module_name, path)
        if file_spec is None or file_spec.loader is None:
            raise EntryPointError(f"cannot load {target} as a Python file")
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[module_name] = module
        # Let the file import its neighbours, as `python file.py` would.
        sys.path.insert(0, str(path.resolve().parent))
        try:
            file_spec.loader.exec_module(module)
        except Exception as exc:
            raise EntryPointError(f"importing {target} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise EntryPointError(
                f"cannot import module {target!r}: {exc} (is it installed, or on PYTHONPATH?)"
            ) from exc
        except Exception as exc:
            raise EntryPointError(f"importing {target} failed: {type(exc).__name__}: {exc}") from exc
    names = (attr,) if attr else _DEFAULT_ATTRS
    for name in names:
        obj = module
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        return obj
    if attr:
        raise EntryPointError(f"{target} has no attribute {attr!r}")
    raise EntryPointError(
        f"{target} defines none of {', '.join(_DEFAULT_ATTRS)}; name the object: {target}:NAME"
    )
