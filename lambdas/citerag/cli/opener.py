"""Opening a cited source at its page in the system viewer. `open_uri` is looked up at call time so tests replace
it and check the exact URI without launching anything."""

from __future__ import annotations

import os
import webbrowser
from urllib.parse import urlparse

from citerag.errors import CiteragError
from citerag.ingestion.files import page_uri


def system_open(uri: str) -> None:
    # webbrowser rather than xdg-open: a browser keeps the #page fragment, which xdg-open's PDF handlers drop.
    if not webbrowser.open(uri):
        raise CiteragError(f"no viewer could open {uri}")


open_uri = system_open


def open_numbered(answer, number: int, comps=None) -> str:
    """Source `number` of an answer (None: no answer yet), or, when it cites nothing, place `number` under "Where to
    look", as printed. `comps`: the components whose index the answer came from, to check a local file against."""
    if answer is not None and not answer.sources and answer.related:
        return open_source(answer.related, number, "place", comps=comps)
    return open_source(answer.sources if answer is not None else [], number, comps=comps)


def check_local(uri: str, comps=None) -> None:
    """A local file is handed to the viewer only when no component of its path is a link now and, with the index
    at hand, it is the file indexed: the viewer opens the name, so a name swapped for a link since ingest would
    show whatever it points to."""
    from citerag.ingestion.files import uri_to_path
    from citerag.ingestion.opening import Verifier, expected_hashes, open_no_links

    path = uri_to_path(uri.split("#", 1)[0])
    if path is None:
        return
    doc = comps.index.find_by_uri(uri.split("#", 1)[0], comps.settings.namespace) if comps is not None else None
    try:
        if doc is not None:
            Verifier(comps.settings.max_file_bytes).open(path, expected_hashes(doc)).close()
        else:
            os.close(open_no_links(path))
    except CiteragError as exc:
        raise CiteragError(f"not opened: {path.name}: {exc}") from None
    except OSError as exc:
        raise CiteragError(f"not opened: {path.name}: {exc.strerror or exc}") from None


def open_source(sources: list, number: int, what: str = "source", comps=None) -> str:
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
    if urlparse(uri).scheme == "file":
        check_local(uri, comps)
    open_uri(uri)
    return uri
