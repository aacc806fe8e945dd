"""The per-session actors: the supervisor (``Session``) and the router, dispatcher,
outbound, notifier and writer it composes."""

from mcpactor.session.context import RequestContext
from mcpactor.session.session import Limits, Session, SessionHandler, live_sessions
from mcpactor.session.tracker import Timeout

__all__ = ["Limits", "RequestContext", "Session", "SessionHandler", "Timeout", "live_sessions"]
