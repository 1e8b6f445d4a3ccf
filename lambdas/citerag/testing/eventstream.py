"""AWS event-stream framing (application/vnd.amazon.eventstream), the wire format of InvokeAgent's response,
so recorded or locally produced events can be served to the real boto3 client and parsed by botocore.

Message: total length (4) | headers length (4) | prelude CRC32 (4) | headers | payload | message CRC32 (4).
Header: name length (1) | name | type 7 = string (1) | value length (2) | value.
"""

from __future__ import annotations

import binascii
import json
import struct
from typing import Any

from citerag.traces.tracefile import jsonable


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v


def message(headers: dict[str, str], payload: bytes) -> bytes:
    hdr = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(hdr) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hdr))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + hdr + payload
    return body + struct.pack(">I", binascii.crc32(body) & 0xFFFFFFFF)


def event(event_type: str, body: dict[str, Any]) -> bytes:
    return message({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                   json.dumps(jsonable(body), ensure_ascii=False).encode())


def exception(exception_type: str, msg: str) -> bytes:
    return message({":exception-type": exception_type, ":content-type": "application/json",
                    ":message-type": "exception"}, json.dumps({"message": msg}).encode())


def encode_stream(events: list[dict[str, Any]]) -> bytes:
    """InvokeAgent events as produced by the local runtime ({"chunk": ...}, {"trace": ...}) -> wire bytes."""
    return b"".join(event(next(iter(e)), next(iter(e.values()))) for e in events)
