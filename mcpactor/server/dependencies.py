"""Dependency injection: parameters a handler gets from a function of yours, per request.

``db: Db = Depends(get_db)`` (or ``db: Annotated[Db, Depends(get_db)]``) on a tool,
resource, resource template or prompt: the parameter is left out of the input schema
(the client never sees it) and filled, on every call, with what ``get_db`` gives.

A dependency is a function (``def`` or ``async def``) or a generator (sync or async)
that yields once: the code after its ``yield`` runs when the request is done, whether
the handler returned or raised (the exception is thrown in at the ``yield``, as
:func:`contextlib.contextmanager` does), in the reverse order of setting up. In
2026-07-28 a handler runs again for each input round (``ctx.elicit``, ``ctx.sample``,
``ctx.list_roots`` with no answer yet end the run, and the client's retry starts it
over): its dependencies run again each time, and a round's end is thrown in as
:class:`~mcpactor.protocol.mrtr.InputRequired`, the run being unfinished (roll back;
a dependency cannot swallow it). Its own
parameters are filled the same way: another ``Depends(...)``, a ``Context`` (typed
``Context[State]`` for the lifespan's state), or an argument of the handler by name
(a tool's validated argument, a template's URI variable, a prompt's converted
argument); anything else needs a default. Within one request a dependency runs once
however many parameters ask for it (``use_cache=False`` runs it for each).

Everything is checked at registration: a parameter that cannot be filled, a cycle.
A dependency that raises ends the request as the handler would have (a tool's
``ToolError`` is an ``isError`` result, an :class:`~mcpactor.McpError` its error).
Plain ``def`` dependencies run in the event loop: make a blocking one ``async`` and
hand its work to ``trio.to_thread.run_sync``.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

from mcpactor.protocol.mrtr import InputRequired

__all__ = ["Dependency", "DependencyPlan", "Depends", "plan_dependencies"]


class Dependency:
    """What :func:`Depends` returns: the function and whether its value is shared
    within a request."""

    __slots__ = ("fn", "use_cache")

    def __init__(self, fn: Callable[..., Any], *, use_cache: bool = True) -> None:
        if not callable(fn):
            raise TypeError(f"Depends() needs a function to call, got {fn!r}")
        self.fn = fn
        self.use_cache = use_cache

    def __repr__(self) -> str:
        return f"Depends({getattr(self.fn, '__qualname__', self.fn)!r})"


def Depends(fn: Callable[..., Any], *, use_cache: bool = True) -> Any:
    """Mark a parameter as filled by ``fn`` per request (see the module).

    Typed ``Any`` so that ``db: Db = Depends(get_db)`` type-checks as a default."""
    return Dependency(fn, use_cache=use_cache)


def _dependency_of(param: inspect.Parameter, hint: Any) -> Dependency | None:
    if isinstance(param.default, Dependency):
        return param.default
    if typing.get_origin(hint) is typing.Annotated:
        for meta in hint.__metadata__:
            if isinstance(meta, Dependency):
                return meta
    return None


def _is_context(hint: Any) -> bool:
    from mcpactor.server.context import Context

    while typing.get_origin(hint) is typing.Annotated:
        hint = hint.__origin__
    hint = typing.get_origin(hint) or hint
    return isinstance(hint, type) and issubclass(hint, Context)


def _target(fn: Any) -> Any:
    """Where ``fn``'s signature and kind are read: a class's ``__init__``, a callable
    object's ``__call__``, else ``fn`` itself."""
    if isinstance(fn, type):
        return _from_mro(fn, "__init__", fn)
    if inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, functools.partial):
        return fn
    return _from_mro(type(fn), "__call__", fn)


def _from_mro(cls: type, name: str, default: Any) -> Any:
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return default


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target: Any = _target(fn)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        return dict(getattr(target, "__annotations__", {}))


def dependency_params(fn: Callable[..., Any]) -> dict[str, Dependency]:
    """The parameters of ``fn`` that are dependencies, by name."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    hints = _hints(fn)
    found: dict[str, Dependency] = {}
    for name, param in sig.parameters.items():
        dep = _dependency_of(param, hints.get(name))
        if dep is not None:
            found[name] = dep
    return found


# How one parameter of a dependency is filled.
_CONTEXT, _ARGUMENT, _DEPENDENCY = 0, 1, 2


class _Step:
    """One dependency function, its kind and how each of its parameters is filled."""

    __slots__ = ("dep", "kind", "params")

    def __init__(self, dep: Dependency, kind: str,
                 params: tuple[tuple[str, int, Any], ...]) -> None:
        self.dep = dep
        self.kind = kind
        self.params = params


def _kind(fn: Callable[..., Any]) -> str:
    if isinstance(fn, type):
        return "sync"  # a class: built by calling it
    target = _target(fn)
    if inspect.isasyncgenfunction(target):
        return "asyncgen"
    if inspect.isgeneratorfunction(target):
        return "gen"
    if inspect.iscoroutinefunction(target):
        return "async"
    return "sync"


class DependencyPlan:
    """How to fill a handler's dependency parameters; built once at registration."""

    __slots__ = ("targets",)

    def __init__(self, targets: tuple[tuple[str, _Step], ...]) -> None:
        self.targets = targets

    async def fill(self, stack: AsyncExitStack, kwargs: dict[str, Any],
                   make_context: Callable[[], Any]) -> None:
        """Run the dependencies (their cleanups joined to ``stack``) and put their values
        into ``kwargs``, which holds the handler's other arguments."""
        arguments = dict(kwargs)
        cache: dict[Any, Any] = {}
        context: list[Any] = []

        def ctx() -> Any:
            if not context:
                context.append(make_context())
            return context[0]

        for name, step in self.targets:
            kwargs[name] = await _run(step, stack, arguments, cache, ctx)


async def _run(step: _Step, stack: AsyncExitStack, arguments: dict[str, Any],
               cache: dict[Any, Any], ctx: Callable[[], Any]) -> Any:
    dep = step.dep
    if dep.use_cache and dep.fn in cache:
        return cache[dep.fn]
    call: dict[str, Any] = {}
    for pname, how, what in step.params:
        if how == _CONTEXT:
            call[pname] = ctx()
        elif how == _ARGUMENT:
            name, default = what
            if name in arguments:
                call[pname] = arguments[name]
            elif default is not inspect.Parameter.empty:
                call[pname] = default  # the handler's default, for an argument left out
        else:
            call[pname] = await _run(what, stack, arguments, cache, ctx)
    kind = step.kind
    if kind == "asyncgen":
        value = await stack.enter_async_context(
            _KeepsRounds(asynccontextmanager(dep.fn)(**call)))
    elif kind == "gen":
        value = await stack.enter_async_context(
            _KeepsRounds(contextmanager(dep.fn)(**call)))
    elif kind == "async":
        value = await dep.fn(**call)
    else:
        value = dep.fn(**call)
    if dep.use_cache:
        cache[dep.fn] = value
    return value


class _KeepsRounds:
    """A generator dependency as the exit stack holds it: the code after its ``yield``
    runs as :mod:`contextlib` runs it, except that it cannot swallow a 2026-07-28 input
    round (``InputRequired``): the run ends asking the client whatever a dependency
    does with the exception (the ones set up before it see it too)."""

    __slots__ = ("cm",)

    def __init__(self, cm: Any) -> None:
        self.cm = cm

    async def __aenter__(self) -> Any:
        enter = self.cm.__aenter__ if hasattr(self.cm, "__aenter__") else None
        return await enter() if enter is not None else self.cm.__enter__()

    async def __aexit__(self, typ: Any, exc: Any, tb: Any) -> bool:
        if hasattr(self.cm, "__aexit__"):
            suppressed = await self.cm.__aexit__(typ, exc, tb)
        else:
            suppressed = self.cm.__exit__(typ, exc, tb)
        return bool(suppressed) and not isinstance(exc, InputRequired)


def plan_dependencies(fn: Callable[..., Any], what: str) -> DependencyPlan | None:
    """The plan for ``fn``'s dependency parameters (None: it has none).

    A dependency may take the handler's own arguments by name (the other parameters
    of ``fn`` but its Context). TypeError names a parameter that cannot be filled, or
    a cycle."""
    targets = dependency_params(fn)
    if not targets:
        return None
    hints = _hints(fn)
    arguments = {
        name: param.default
        for name, param in inspect.signature(fn).parameters.items()
        if name not in targets and not _is_context(hints.get(name))
    }
    steps: dict[Any, _Step] = {}

    def step_for(dep: Dependency, chain: tuple[Any, ...]) -> _Step:
        if dep.fn in chain:
            names = " -> ".join(getattr(f, "__qualname__", repr(f)) for f in (*chain, dep.fn))
            raise TypeError(f"{what}: dependency cycle {names}")
        known = steps.get(dep.fn)
        if known is not None:
            return _Step(dep, known.kind, known.params)
        label = getattr(dep.fn, "__qualname__", repr(dep.fn))
        try:
            sig = inspect.signature(dep.fn)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what}: cannot read the signature of dependency {label}: "
                            f"{exc}") from exc
        hints = _hints(dep.fn)
        params: list[tuple[str, int, Any]] = []
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.kind is param.POSITIONAL_ONLY:
                raise TypeError(f"{what}: dependency {label} has a positional-only "
                                f"parameter {pname!r}, which cannot be filled by name")
            hint = hints.get(pname)
            sub = _dependency_of(param, hint)
            if sub is not None:
                params.append((pname, _DEPENDENCY, step_for(sub, (*chain, dep.fn))))
            elif hint is not None and _is_context(hint):
                params.append((pname, _CONTEXT, None))
            elif pname in arguments:
                params.append((pname, _ARGUMENT, (pname, arguments[pname])))
            elif param.default is param.empty:
                raise TypeError(
                    f"{what}: dependency {label} has a parameter {pname!r} that nothing "
                    f"fills: make it Depends(...), a Context, one of the handler's "
                    f"arguments ({', '.join(sorted(arguments)) or 'none'}), or give it a "
                    "default")
        step = _Step(dep, _kind(dep.fn), tuple(params))
        steps[dep.fn] = step
        return step

    return DependencyPlan(tuple((name, step_for(dep, ())) for name, dep in targets.items()))
