"""The ``mcpactor`` command: ``run``, ``replay``, ``trace``, ``bench``, ``demo``.

A user's mistake (a bad entry point, a missing file, a bad option) ends with one line
naming the problem and the fix, and exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import socket
import stat
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcpactor import __version__
from mcpactor.entrypoint import EntryPointError, load_entry_point

if TYPE_CHECKING:
    from mcpactor.tracing.recorder import Rotation


class CliError(Exception):
    """A user-facing error: printed as ``mcpactor: <message>``, exit status 2."""


def _configure_logging(level: str) -> None:
    # stdout may carry MCP messages (stdio transport): logs only ever go to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _load_server(spec: str) -> object:
    from mcpactor.server.app import Server

    try:
        obj = load_entry_point(spec)
    except EntryPointError as exc:
        raise CliError(str(exc)) from None
    if not isinstance(obj, Server):
        raise CliError(
            f"{spec} is a {type(obj).__name__}, not an mcpactor Server "
            "(point at the object created with Server(...))"
        )
    return obj


def cmd_run(args: argparse.Namespace) -> int:
    """Serve an entry point over stdio or HTTP."""
    from mcpactor.scaleout.workers import WORKER_ENV

    worker = os.environ.get(WORKER_ENV)
    if args.workers is not None and worker is None:
        return _run_workers(args)
    if worker is not None and args.trace:
        from mcpactor.scaleout.workers import worker_trace_path

        _, index, generation = (int(p) for p in worker.split(","))
        args.trace = worker_trace_path(args.trace, index, generation)
    if args.trace:
        from mcpactor.tracing import entropy
        from mcpactor.tracing.seeds import run_with_hash_seed

        # A fixed string-hash seed (set iteration order), recorded in the header: this
        # starts the command again with one unless PYTHONHASHSEED is set already.
        if args.restartable:
            run_with_hash_seed(None)
        # Before the server's code is imported: its modules then see the recorded clock
        # and entropy functions however they import them (mcpactor.tracing.entropy).
        entropy.install()
    if not args.trace and args.transport == "stdio" and os.environ.get("MCPACTOR_REPLAY_FOLLOW"):
        from mcpactor.tracing import entropy

        # `replay --against` will have this process follow a recording (Server.run):
        # the capture goes in before the server's code is imported, as for --trace.
        entropy.install()
    server = _load_server(args.target)
    from mcpactor.server.app import Server

    assert isinstance(server, Server)
    options = _http_options(args)
    from mcpactor.cli_auth import resource_server
    from mcpactor.extras import MissingExtra, require

    try:
        auth = resource_server(args)
        if args.http_server == "hypercorn":
            require("hypercorn", "--server hypercorn")
    except (ValueError, MissingExtra) as exc:
        raise CliError(str(exc)) from None
    if auth is not None:
        options["auth"] = auth
    if args.metrics is not None:
        options["metrics_path"] = args.metrics
    options.update(_scaleout_options(args))
    if worker is not None:
        from mcpactor.scaleout.workers import inherited_listener

        options["listen_socket"] = inherited_listener(worker)[0]
        options["quiet"] = True
    if options and args.transport != "http":
        raise CliError("the HTTP options (--json-response, --sse-response, --server, "
                       "--stateless, --allow-*, the session and connection limits, "
                       "--redis, --state-key, --metrics) need --transport http")
    rotation = _trace_rotation(args)
    if args.trace:
        _check_trace_path(args.trace)
    from mcpactor.cli_observability import start

    stop_observing = start(args, server.info.name)
    try:
        server.run(
            args.transport,
            host=args.host,
            port=args.port,
            path=args.path,
            trace=args.trace,
            entry_point=args.target,
            rotation=rotation,
            **options,
        )
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a bind that fails: Server.run raises it as itself
        raise CliError(_serve_error(exc, args)) from None
    finally:
        stop_observing()
    return 0


def _scaleout_options(args: argparse.Namespace) -> dict[str, object]:
    """``--redis``, ``--redis-prefix`` and ``--state-key`` as ``serve_http`` options."""
    from mcpactor.scaleout.signing import StateSigner, state_key

    options: dict[str, object] = {}
    if args.redis is not None:
        from mcpactor.extras import MissingExtra, require
        from mcpactor.scaleout.redis_state import parse_redis_url

        try:
            parse_redis_url(args.redis)
            require("coredis", "--redis")
        except (ValueError, MissingExtra) as exc:
            raise CliError(f"--redis: {exc}") from None
        if args.stateless:
            raise CliError("--redis shares sessions, and --stateless has none: use one of them")
        options["redis"] = args.redis
        if args.redis_prefix is not None or args.worker_timeout is not None:
            from mcpactor.scaleout.cluster import ClusterOptions

            idle = args.session_timeout if args.session_timeout is not None else 1800.0
            tuned: dict[str, object] = {"session_ttl": idle + 60.0}
            if args.redis_prefix is not None:
                tuned["prefix"] = args.redis_prefix
            if args.worker_timeout is not None:
                if not args.worker_timeout > 0:
                    raise CliError("--worker-timeout must be a positive number of seconds")
                tuned["worker_ttl"] = args.worker_timeout
                tuned["heartbeat"] = args.worker_timeout / 3
            options["scaleout"] = ClusterOptions(**tuned)  # type: ignore[arg-type]
    elif args.redis_prefix is not None or args.worker_timeout is not None:
        raise CliError("--redis-prefix and --worker-timeout need --redis URL")
    key = state_key(args.state_key)
    if key is not None:
        try:
            StateSigner(key)
        except ValueError as exc:
            raise CliError(f"--state-key: {exc}") from None
        if args.transport == "http":
            options["state_key"] = key
    return options


def _run_workers(args: argparse.Namespace) -> int:
    """``--workers N``: the supervisor (see mcpactor.scaleout.workers)."""
    if args.transport != "http":
        raise CliError("--workers needs --transport http (stdio serves one client; use "
                       "--transport http to share a port among worker processes)")
    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    _load_server(args.target)  # a bad entry point is one line here, not N crash loops
    _http_options(args)
    _scaleout_options(args)
    import trio

    from mcpactor.scaleout.signing import STATE_KEY_ENV, state_key
    from mcpactor.scaleout.workers import WorkerPlan, bind_listener, supervise

    # One key for all the workers, so that any of them accepts state another signed.
    os.environ[STATE_KEY_ENV] = state_key(args.state_key, generate=True) or ""
    try:
        sock = bind_listener(args.host, args.port)
    except OSError as exc:
        raise CliError(_serve_error(exc, args)) from None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"mcpactor: serving {args.target} on http://{shown}:{port}{args.path} with "
          f"{args.workers} worker{'s' if args.workers != 1 else ''} (supervisor pid "
          f"{os.getpid()})", file=sys.stderr, flush=True)
    argv = list(args.argv)
    plan = WorkerPlan(count=args.workers,
                      command=lambda index, generation: [sys.executable, "-m", "mcpactor", *argv])
    return trio.run(supervise, plan, sock)


def _trace_rotation(args: argparse.Namespace) -> Rotation | None:
    if args.trace_max_bytes is None and args.trace_max_seconds is None:
        return None
    if not args.trace:
        raise CliError("--trace-max-bytes and --trace-max-seconds need --trace FILE")
    from mcpactor.tracing.recorder import Rotation

    return Rotation(max_bytes=args.trace_max_bytes, max_seconds=args.trace_max_seconds)


def _check_trace_path(path: str) -> None:
    # A trace that cannot be written would otherwise only show up once the server runs.
    # Found now, it is one line.
    from mcpactor.tracing.recorder import Recorder, RecordingError, TraceHeader

    try:
        Recorder.at(path, TraceHeader(role="server", transport="check"), writer="thread")
    except RecordingError as exc:
        # A FIFO (or device) is refused for what it is, not for the user's rights.
        hint = "" if _special_file(path) else "; pick a path this user can write"
        raise CliError(f"--trace {exc}{hint}") from None


def _special_file(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _serve_error(exc: OSError, args: argparse.Namespace) -> str:
    """What to tell a user whose server could not start (or stopped on an I/O error)."""
    if args.transport == "stdio":
        return f"cannot serve: {exc}"
    where = f"{args.host}:{args.port}"
    if isinstance(exc, socket.gaierror):
        return f"cannot listen on {where}: unknown host {args.host!r} (--host takes an " \
               "address or name of this machine, e.g. 127.0.0.1)"
    if exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {where}: the port is in use (stop the other server or " \
               "pick another port with --port; --port 0 picks a free one)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: {args.host} is not an address of this machine " \
               "(--host 127.0.0.1 for local clients, 0.0.0.0 for every interface)"
    if exc.errno == errno.EACCES:
        return f"cannot listen on {where}: permission denied (ports below 1024 need " \
               "privileges: pick a higher --port)"
    return f"cannot serve on {where}: {exc.strerror or exc}"


def _size(text: str) -> int:
    """argparse type: a size in bytes, with an optional K, M or G suffix."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b")
    scale = units.get(t[-1:], 1)
    if scale != 1:
        t = t[:-1]
    try:
        value = int(float(t) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 50M, 2G)") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"{text} is too small for a trace file (at least 1K)")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number from 1 up."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: it must be at least 1")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def _port(text: str) -> int:
    """argparse type of ``--port``: a TCP port number (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range: ports are 0-65535")
    return port


def _http_options(args: argparse.Namespace) -> dict[str, object]:
    from mcpactor.transports.security import LOCAL_HOSTS

    options: dict[str, object] = {}
    if args.json_response and args.sse_response:
        raise CliError("--json-response and --sse-response exclude each other")
    if args.json_response:
        options["json_response"] = True
    if args.sse_response:
        options["json_response"] = False
    if args.http_server is not None:
        options["http_server"] = args.http_server
    if args.stateless:
        options["stateless"] = True
    if args.allow_host:
        hosts = {h.lower() for h in args.allow_host} | {args.host.lower()}
        options["allowed_hosts"] = frozenset(LOCAL_HOSTS | hosts)
    if args.allow_origin:
        options["allowed_origins"] = frozenset(args.allow_origin)
    if args.session_timeout is not None:
        if args.session_timeout <= 0:
            raise CliError("--session-timeout must be a positive number of seconds")
        options["session_idle_timeout"] = args.session_timeout
    if args.max_sessions is not None:
        if args.max_sessions < 1:
            raise CliError("--max-sessions must be at least 1")
        options["max_sessions"] = args.max_sessions
    if args.max_sessions_per_peer is not None:
        if args.max_sessions_per_peer < 0:
            raise CliError("--max-sessions-per-peer must be 0 (no cap) or more")
        options["max_sessions_per_peer"] = args.max_sessions_per_peer
    for name in ("keep_alive_timeout", "head_timeout", "body_timeout", "refusal_linger"):
        value = getattr(args, name)
        if value is not None:
            if not value > 0:
                flag = "--" + name.replace("_", "-")
                raise CliError(f"{flag} must be a positive number of seconds")
            options[name] = value
    if args.max_connections is not None:
        if args.max_connections < 1:
            raise CliError("--max-connections must be at least 1")
        options["max_connections"] = args.max_connections
    if args.max_connections_per_peer is not None:
        if args.max_connections_per_peer < 0:
            raise CliError("--max-connections-per-peer must be 0 (no cap) or more")
        options["max_connections_per_peer"] = args.max_connections_per_peer
    if args.max_refusals is not None:
        if args.max_refusals < 0:
            raise CliError("--max-refusals must be 0 (close at once) or more")
        options["max_refusals"] = args.max_refusals
    return options


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mcpactor`` command."""
    p = argparse.ArgumentParser(
        prog="mcpactor",
        description="Model Context Protocol runtime on Trio: serve, record, replay.",
    )
    p.add_argument("--version", action="version", version=f"mcpactor {__version__}")
    p.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"],
        help="logging on stderr (default: warning)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="serve a Server: mcpactor run path/file.py:server")
    run.add_argument("target", help="entry point: path/to/file.py:server or package.module:server")
    run.add_argument("--transport", default="stdio", choices=["stdio", "http", "ws"])
    run.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    run.add_argument("--port", type=_port, default=8000)
    run.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    run.add_argument("--trace", metavar="PATH",
                     help="record every session to this JSONL trace (a folder, or a path "
                     "ending in /: one file per session)")
    run.add_argument("--trace-max-bytes", type=_size, metavar="SIZE",
                     help="start a new trace file after this size (e.g. 100M); files are "
                     "named by the time they start")
    run.add_argument("--trace-max-seconds", type=positive_float, metavar="SECONDS",
                     help="start a new trace file after this long")
    http = run.add_argument_group("HTTP options")
    http.add_argument("--json-response", action="store_true",
                      help="always answer requests with application/json (default: JSON "
                      "unless the handler streams progress, logs or requests)")
    http.add_argument("--sse-response", action="store_true",
                      help="always answer requests with an SSE stream")
    http.add_argument("--server", dest="http_server", choices=["h11", "hypercorn"],
                      help="HTTP server: h11 (built in, the default) or hypercorn")
    http.add_argument("--stateless", action="store_true",
                      help="no sessions: every POST is its own short-lived session")
    http.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                      help="accept this Host header too (DNS-rebinding protection); repeatable")
    http.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                      help="accept this Origin header too; repeatable")
    sessions = run.add_argument_group(
        "HTTP session limits",
        "How many sessions the server keeps and for how long; a full table closes the "
        "least recently used idle sessions (of the address past its share, else of the "
        "address holding the most) before it refuses a new one (503), and never one "
        "that is serving a request or a stream")
    sessions.add_argument("--session-timeout", type=float, metavar="SECONDS",
                          help="close sessions idle this long (default 1800)")
    sessions.add_argument("--max-sessions", type=int, metavar="N",
                          help="sessions at once (default 10000)")
    sessions.add_argument("--max-sessions-per-peer", type=int, metavar="N",
                          help="sessions opened from one client address (IPv6: /64) at "
                          "once; 0: no cap (default 1000; behind a reverse proxy use 0)")
    limits = run.add_argument_group(
        "HTTP connection limits",
        "How long the built-in server waits for a client, and how many connections it "
        "holds; a full table closes idle or stalled connections (idle first, then the "
        "longest-waiting) before it refuses a new one, and never touches a busy one "
        "(hypercorn applies --keep-alive-timeout only)")
    limits.add_argument("--keep-alive-timeout", type=float, metavar="SECONDS",
                        help="close connections idle this long between requests (default 5)")
    limits.add_argument("--head-timeout", type=float, metavar="SECONDS",
                        help="time a request head may take, as a whole (default 10)")
    limits.add_argument("--body-timeout", type=float, metavar="SECONDS",
                        help="time a request body may take, as a whole (default 30)")
    limits.add_argument("--max-connections", type=int, metavar="N",
                        help="connections at once (default 2000)")
    limits.add_argument("--max-connections-per-peer", type=int, metavar="N",
                        help="connections one client address (IPv6: /64) may hold; 0: no "
                        "cap (default 500; behind a reverse proxy raise it or use 0)")
    limits.add_argument("--refusal-linger", type=float, metavar="SECONDS",
                        help="time a 503 refusal may take: the answer, then the client's "
                        "request read and dropped so it is not reset (default 1)")
    limits.add_argument("--max-refusals", type=int, metavar="N",
                        help="503 refusals answered at once; past it a connection "
                        "without room is closed at once (default 256)")
    scale = run.add_argument_group(
        "scale-out", "Several processes and hosts serving one endpoint (docs/scale-out.md)")
    scale.add_argument("--workers", type=int, metavar="N",
                       help="serve the port from N worker processes, restarted when they "
                       "die (HTTP only); without --redis a session lives in one worker")
    scale.add_argument("--redis", metavar="URL",
                       help="share sessions with every worker and host using this Redis "
                       "(redis://HOST:PORT/DB, or through Sentinel "
                       "redis+sentinel://HOST:PORT,.../SERVICE/DB; needs mcpactor[redis])")
    scale.add_argument("--redis-prefix", metavar="PREFIX",
                       help="start every Redis key with this (default mcpactor:); "
                       "deployments sharing one Redis need different ones")
    scale.add_argument("--worker-timeout", type=float, metavar="SECONDS",
                       help="with --redis: a worker silent this long counts as stopped and "
                       "its sessions move to the next worker they reach (default 3)")
    scale.add_argument("--state-key", metavar="KEY",
                       help="key signing state clients carry between workers (default: "
                       "$MCPACTOR_STATE_KEY; with --workers, a random one shared by them)")
    from mcpactor.cli_auth import add_auth_arguments

    add_auth_arguments(run)
    from mcpactor.cli_observability import add_arguments

    add_arguments(run)
    run.set_defaults(func=cmd_run)

    from mcpactor import cli_extra

    cli_extra.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # A command whose positionals may follow its options (``mcpactor call TARGET
        # --json TOOL ARGS``) takes the ones argparse could not place; anything else,
        # or an option nobody knows, is argparse's usual error.
        take = getattr(args, "take_positionals", None)
        if take is None or not take(args, extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    # Only the command itself may start itself again (a fixed string-hash seed); called
    # with arguments, from a program or a test, it runs in that process as it is.
    args.restartable = argv is None
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    _configure_logging(args.log_level)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"mcpactor: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our output stopped reading (``mcpactor trace show ... | head``):
        # not an error of ours, so no traceback and status 0 (as ``call`` does, see
        # cli_call); what is still buffered goes to /dev/null, not to a warning at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
