"""serve's HTTP server: uvicorn's h11 protocol with the two deadlines uvicorn does not have. A request's headers
must arrive within HEADER_TIMEOUT_S of its first byte (or of the connection), and its body within BODY_TIMEOUT_S of
its headers; a connection that misses one is answered 408 and closed. Without them, a client sending its headers a
byte at a time held its connection for as long as it liked (50 of them were all held)."""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0
_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
                     b"content-length: 33\r\n\r\nthe request took too long to send")


class DeadlineH11(H11Protocol):
    """H11Protocol whose connections must send each request's headers, then its body, within a deadline."""

    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: Any = None
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Arm the deadline for what the connection waits for now: headers (IDLE, no request in progress), a body
        (SEND_BODY), or nothing (the request is in; the app's answer has no deadline here)."""
        state = self.conn.their_state
        idle = self.cycle is None or self.cycle.response_complete  # no request of this connection in progress
        waiting = "headers" if state is h11.IDLE and idle else "body" if state is h11.SEND_BODY else None
        if waiting == self._waiting_for:
            return  # the deadline runs from when the wait began, not from each byte
        self._cancel()
        self._waiting_for = waiting
        if waiting is not None:
            timeout = self.header_timeout_s if waiting == "headers" else self.body_timeout_s
            self._deadline = self.loop.call_later(timeout, self._expired)

    def _cancel(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


def with_deadlines(header_timeout_s: float = HEADER_TIMEOUT_S, body_timeout_s: float = BODY_TIMEOUT_S):
    """The protocol class for uvicorn's `http=` setting, with these deadlines."""
    return type("DeadlineH11", (DeadlineH11,), {"header_timeout_s": header_timeout_s,
                                                 "body_timeout_s": body_timeout_s})
