"""Server-Sent Events, sans-I/O: encoding events and parsing a byte stream into events.

Used by the Streamable HTTP server and client and the legacy HTTP+SSE transport.
The format is the WHATWG "event stream" one: ``field: value`` lines, an empty line
ends an event, lines starting with ``:`` are comments.
"""

from __future__ import annotations

import attrs

__all__ = ["SseEvent", "SseParser", "encode_comment", "encode_event"]


@attrs.frozen
class SseEvent:
    """One dispatched event. ``id`` is None when the event carried no ``id:`` field."""

    data: str = ""
    event: str = "message"
    id: str | None = None
    retry: int | None = None


def encode_event(
    data: bytes | str = b"",
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Encode one event. Multi-line data becomes several ``data:`` lines.

    Empty ``data`` still gives one ``data:`` line (the SSE-polling priming event needs
    an id with empty data to be dispatched by clients).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = bytearray()
    if event is not None:
        _check_field(event)
        out += b"event: " + event.encode("utf-8") + b"\n"
    if id is not None:
        _check_field(id)
        out += b"id: " + id.encode("utf-8") + b"\n"
    if retry is not None:
        out += b"retry: " + str(int(retry)).encode("ascii") + b"\n"
    # Normalise CRLF/CR so a line break inside data never ends the event early.
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    for line in lines:
        out += b"data: " + line + b"\n" if line else b"data:\n"
    out += b"\n"
    return bytes(out)


def encode_comment(text: str = "") -> bytes:
    """A comment line (keep-alive ping); clients ignore it."""
    return b": " + text.replace("\n", " ").encode("utf-8") + b"\n\n"


def _check_field(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValueError("SSE event names and ids must not contain line breaks")


class SseParser:
    """Incremental event-stream parser: ``feed(bytes) -> list[SseEvent]``.

    Remembers the last event id across events, as the spec says, so each event
    reports the id in force when it was dispatched. Events with no data lines are not
    dispatched, except that an ``id:`` or ``retry:`` seen on its own is still tracked
    (``last_event_id``, ``retry``) and reported by :attr:`priming` events.
    """

    def __init__(self, *, max_line: int = 16 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max_line = max_line
        self._data: list[str] = []
        self._has_data = False
        self._event = ""
        self._saw_id = False
        self._saw_retry: int | None = None
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self._first = True

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Consume bytes; return the events they completed."""
        self._buf += chunk
        out: list[SseEvent] = []
        while True:
            line, ok = self._take_line()
            if not ok:
                if len(self._buf) > self._max_line:
                    raise ValueError("SSE line too long")
                return out
            ev = self._line(line)
            if ev is not None:
                out.append(ev)

    def _take_line(self) -> tuple[str, bool]:
        buf = self._buf
        n = len(buf)
        for i in range(n):
            c = buf[i]
            if c == 0x0A or c == 0x0D:
                if c == 0x0D:
                    if i + 1 == n:
                        # A CR at the very end may be half of a CRLF: wait for more.
                        return "", False
                    end = i + 2 if buf[i + 1] == 0x0A else i + 1
                else:
                    end = i + 1
                raw = bytes(buf[:i])
                del buf[:end]
                if self._first:
                    self._first = False
                    if raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                return raw.decode("utf-8", "replace"), True
        return "", False

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
                self._saw_id = True
        elif name == "retry":
            if value.isdigit():
                self.retry = int(value)
                self._saw_retry = self.retry
        return None

    def _dispatch(self) -> SseEvent | None:
        has_data = self._has_data
        data = "\n".join(self._data)
        event = self._event or "message"
        retry = self._saw_retry
        saw_id = self._saw_id
        self._data = []
        self._has_data = False
        self._event = ""
        self._saw_id = False
        self._saw_retry = None
        if not has_data and not saw_id and retry is None:
            return None
        return SseEvent(
            data=data, event=event, id=self.last_event_id if saw_id else None, retry=retry
        )
