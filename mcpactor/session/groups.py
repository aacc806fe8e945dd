"""Exception groups of one, unwrapped at the edges of the API.

A session is a tree of Trio nurseries, and a nursery wraps whatever leaves it in an
exception group, even a lone exception. Inside the tree that is what lets several
failures travel together; at the edges a caller wants the one that happened: its own
``ValueError`` raised in a ``connect_*`` block, a ``ConnectionClosed``, the ``OSError``
of a port already in use. Groups of several stay groups.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["plain_errors", "sole_exception"]


def sole_exception(error: BaseException) -> BaseException | None:
    """The one exception inside ``error`` and any groups nested in it, or None when
    there are several."""
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1:
            return None
        error = error.exceptions[0]
    return error


@contextmanager
def plain_errors() -> Iterator[None]:
    """Let a lone exception out of the enclosed block as itself (see the module): a
    group of one, at any depth, is unwrapped; a group of several is left as it is."""
    lone: BaseException | None = None
    try:
        yield
    except BaseExceptionGroup as group:
        lone = sole_exception(group)
        if lone is None:
            raise
    if lone is not None:
        # Raised outside the handler, so the exception keeps its own context and cause
        # rather than gaining the group as its context.
        raise lone
