"""EPUB books: the chapters in reading order (the package's spine), each read as the HTML it is, cited by chapter
and section ("3. Networking > Static addresses"). An EPUB is a ZIP of XHTML files, so this needs no library beyond
the HTML reader every other web page goes through."""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import unquote, urldefrag

from citerag.documents.model import Section
from citerag.documents.office import check_zip
from citerag.errors import DocumentError

_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
    "x": "http://www.w3.org/1999/xhtml",
    "epub": "http://www.idpf.org/2007/ops",
}
_HTML_TYPES = {"application/xhtml+xml", "text/html"}
MAX_PART_BYTES = 50 * 1024 * 1024  # one chapter's XHTML


def load_epub(data: bytes, name: str, max_pages: int) -> tuple[str | None, list[Section]]:
    from citerag.documents.loaders import _load_html

    z = check_zip(data, "EPUB")
    names = set(z.namelist())

    def read(path: str) -> bytes:
        if path not in names:
            raise DocumentError(f"EPUB is incomplete: it names {path!r}, which it does not hold")
        if z.getinfo(path).file_size > MAX_PART_BYTES:
            raise DocumentError(f"EPUB part {path!r} is larger than {MAX_PART_BYTES:,} bytes")
        return z.read(path)

    try:
        container = _xml(read("META-INF/container.xml"))
        rootfile = container.find(".//c:rootfile", _NS)
        if rootfile is None or not rootfile.get("full-path"):
            raise DocumentError("EPUB has no package document (META-INF/container.xml names none)")
        opf_path = rootfile.get("full-path", "")
        opf = _xml(read(opf_path))
        base = posixpath.dirname(opf_path)
        manifest = {i.get("id"): i for i in opf.findall(".//opf:manifest/opf:item", _NS)}
        title = (opf.findtext(".//dc:title", default="", namespaces=_NS) or "").strip() or None
        spine = [manifest[r.get("idref")] for r in opf.findall(".//opf:spine/opf:itemref", _NS)
                 if r.get("idref") in manifest and r.get("linear", "yes") != "no"]
        chapters = _toc(opf, manifest, base, read)
        if len(spine) > max_pages:
            raise DocumentError(f"EPUB has {len(spine):,} chapters; the limit is {max_pages:,}")
        sections: list[Section] = []
        for item in spine:
            if item.get("media-type") not in _HTML_TYPES:
                continue
            path = _join(base, item.get("href", ""))
            page_title, parts = _load_html(read(path), path, max_pages)
            chapter = chapters.get(path) or page_title or ""
            for part in parts:
                sections.append(part.model_copy(update={"section": _within(chapter, part.section)}))
    except ET.ParseError as exc:
        raise DocumentError(f"EPUB is corrupt: a package file is not well-formed XML ({exc})") from None
    return title, sections


def _within(chapter: str, heading_path: str | None) -> str | None:
    """"Chapter > heading path", the chapter said once when the chapter's own heading starts the path."""
    if not heading_path:
        return chapter or None
    if not chapter or heading_path == chapter or heading_path.startswith(chapter + " > "):
        return heading_path
    return f"{chapter} > {heading_path}"


def _xml(data: bytes) -> Any:
    if b"<!ENTITY" in data[:4096]:  # entity definitions are a way to blow up memory, and no EPUB needs them
        raise DocumentError("EPUB package file defines XML entities; it is refused")
    return ET.fromstring(data)


def _join(base: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))


def _toc(opf: Any, manifest: dict, base: str, read) -> dict[str, str]:
    """Chapter titles by file, from the EPUB 3 navigation document or else the EPUB 2 NCX: the first entry that
    points into a file names it."""
    out: dict[str, str] = {}
    nav = next((i for i in manifest.values() if "nav" in (i.get("properties") or "").split()), None)
    if nav is not None:
        nav_path = _join(base, nav.get("href", ""))
        doc = _xml(read(nav_path))
        tocs = [n for n in doc.iter(f"{{{_NS['x']}}}nav") if n.get(f"{{{_NS['epub']}}}type") == "toc"]
        for a in (tocs[0] if tocs else doc).iter(f"{{{_NS['x']}}}a"):
            label = " ".join("".join(a.itertext()).split())
            if a.get("href") and label:
                out.setdefault(_join(posixpath.dirname(nav_path), a.get("href", "")), label)
        return out
    spine = opf.find(".//opf:spine", _NS)
    ncx_item = manifest.get(spine.get("toc")) if spine is not None else None
    if ncx_item is not None:
        ncx_path = _join(base, ncx_item.get("href", ""))
        doc = _xml(read(ncx_path))
        for point in doc.iter(f"{{{_NS['ncx']}}}navPoint"):
            label = " ".join((point.findtext("ncx:navLabel/ncx:text", default="", namespaces=_NS) or "").split())
            content = point.find("ncx:content", _NS)
            if content is not None and content.get("src") and label:
                out.setdefault(_join(posixpath.dirname(ncx_path), content.get("src", "")), label)
    return out
