"""Nothing this process logs holds a secret, whatever the log level.

At DEBUG, botocore and urllib3 log whole requests and responses: the GetSecretValue response carries the Pinecone
API key, and every signed request the session token. Those loggers' records below INFO are withheld at creation
(a log-record factory, so it holds for every logger and handler, however the application configured logging),
and every secret this process has loaded is replaced by a marker in any record that would carry it.
"""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Any

_SDK_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer", "aiobotocore", "httpx", "httpcore")
_SECRETS: set[str] = set()
_lock = threading.Lock()
_installed = False


def register_secret(value: str) -> None:
    """A value that must never appear in a log line (only values long enough to be secrets are kept)."""
    install()
    if value and len(value) >= 8:
        with _lock:
            _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in list(_SECRETS):
        if secret in text:
            text = text.replace(secret, "[secret withheld]")
    return text


def install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if record.levelno < logging.INFO and record.name.startswith(_SDK_LOGGERS):
                record.msg, record.args = "debug output of %s withheld (it can carry credentials)", (record.name,)
            elif _SECRETS:
                try:
                    message = record.getMessage()
                except Exception:  # a broken format string is the caller's problem, not a leak
                    return record
                clean = redact(message)
                if clean != message:
                    record.msg, record.args = clean, ()
            return record

        logging.setLogRecordFactory(factory)
        # The factory runs before a record gets its `extra` fields, and an exception's traceback is formatted only
        # when the record is written: both are cleaned once the record is complete.
        make_record = logging.Logger.makeRecord

        def complete_record(self, *args, **kwargs) -> logging.LogRecord:
            record = make_record(self, *args, **kwargs)
            if _SECRETS:
                try:
                    _scrub(record)
                except Exception:  # logging never raises for its caller; the message, at least, is clean
                    record.msg, record.args = redact(_message(record)), ()
            return record

        logging.Logger.makeRecord = complete_record  # type: ignore[method-assign]
        _installed = True


_STANDARD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


MAX_DEPTH = 6  # of nested fields cleaned; a structure that refers to itself ends there


def _clean(value: Any, depth: int = 0) -> Any:
    """Strings redacted, in plain dicts, lists and tuples too; any other object (a namedtuple, a model) as its
    redacted text only when that text holds a secret, so a formatter cannot print it whole."""
    if isinstance(value, str):
        return redact(value)
    if depth >= MAX_DEPTH:  # deeper, a structure is its redacted text
        return redact(repr(value)) if isinstance(value, dict | list | tuple) else value
    if type(value) is dict:
        return {k: _clean(v, depth + 1) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_clean(v, depth + 1) for v in value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    text = repr(value)
    clean = redact(text)
    return clean if clean != text else value


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:
        return str(record.msg)


def _scrub(record: logging.LogRecord) -> None:
    for key, value in list(vars(record).items()):
        if key not in _STANDARD_FIELDS:
            record.__dict__[key] = _clean(value)
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info))
        clean = redact(text)
        if clean != text:
            # The exception itself holds the secret (its message, its arguments): the record keeps the traceback
            # as redacted text instead of the exception object every formatter would print whole.
            record.msg, record.args = f"{redact(_message(record))}\n{clean.rstrip()}", ()
            record.exc_info, record.exc_text = None, None
