"""The per-session actor tree: supervisor, reader, writer, notifier, tracker, handlers."""

from mcpactor.session.context import RequestContext
from mcpactor.session.session import Limits, Session, SessionHandler, live_sessions
from mcpactor.session.tracker import Timeout

__all__ = ["Limits", "RequestContext", "Session", "SessionHandler", "Timeout", "live_sessions"]
