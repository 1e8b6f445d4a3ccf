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


def open_numbered(answer, number: int) -> str:
    """Source `number` of an answer (None: no answer yet), or, when it cites nothing, place `number` under "Where to
    look", as printed."""
    if answer is not None and not answer.sources and answer.related:
        return open_source(answer.related, number, "place")
    return open_source(answer.sources if answer is not None else [], number)


def open_source(sources: list, number: int, what: str = "source") -> str:
    """Open source `number` (1-based, as printed; `what`: "place" for a place to look) and return the URI opened."""
    if not sources:
        raise CiteragError(f"the answer has no {what}s to open")
    if not 1 <= number <= len(sources):
        choice = f"the answer has only {what} [1]" if len(sources) == 1 else f"choose 1 to {len(sources)}"
        raise CiteragError(f"no {what} [{number}]: {choice}")
    s = sources[number - 1]
    uri = page_uri(s.uri, s.page)
    if urlparse(uri).scheme not in ("file", "http", "https"):
        raise CiteragError(f"cannot open {uri}: only file and web addresses are opened")
    open_uri(uri)
    return uri
