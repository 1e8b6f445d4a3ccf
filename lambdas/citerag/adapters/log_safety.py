"""Nothing this process logs holds a secret, whatever the log level.

At DEBUG, botocore and urllib3 log whole requests and responses: the GetSecretValue response carries the Pinecone
API key, and every signed request the session token. Those loggers' records below INFO are withheld at creation
(a log-record factory, so it holds for every logger and handler, however the application configured logging),
and every secret this process has loaded is replaced by a marker in any record that would carry it.
"""

from __future__ import annotations

import logging
import threading

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
        _installed = True
