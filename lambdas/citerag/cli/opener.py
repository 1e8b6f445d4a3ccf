"""Opening a cited source at its page in the system viewer. `open_uri` is looked up at call time so tests replace
it and check the exact URI without launching anything."""

from __future__ import annotations

import webbrowser
from urllib.parse import urlparse

from citerag.errors import CiteragError
from citerag.ingestion.files import page_uri


def system_open(uri: str) -> None:
    # webbrowser rather than xdg-open: a browser keeps the #page fragment, which xdg-open's PDF handlers drop.
    if not webbrowser.open(uri):
        raise CiteragError(f"no viewer could open {uri}")


open_uri = system_open


def open_source(sources: list, number: int) -> str:
    """Open source `number` (1-based, as printed) and return the URI opened."""
    if not sources:
        raise CiteragError("the answer has no sources to open")
    if not 1 <= number <= len(sources):
        choice = "the answer has only source [1]" if len(sources) == 1 else f"choose 1 to {len(sources)}"
        raise CiteragError(f"no source [{number}]: {choice}")
    s = sources[number - 1]
    uri = page_uri(s.uri, s.page)
    if urlparse(uri).scheme not in ("file", "http", "https"):
        raise CiteragError(f"cannot open {uri}: only file and web addresses are opened")
    open_uri(uri)
    return uri
