"""Statement vectors made at ingest, so a first answer embeds only the question and the few statements a passage's
window cuts differently (docs/answers.md "First answers")."""

from __future__ import annotations

from collections.abc import Iterable

from citerag.answerer.ranking import HEADING_CHARS, _under
from citerag.citations.statements import split_statements
from citerag.documents.model import LoadedDocument

MIN_CHARS = 8  # the ranking skips shorter statements


def statement_texts(doc: LoadedDocument, max_chars: int | None = None) -> list[str]:
    """Each statement of each section under the heading `ranking._heading` gives a passage of it: its heading path,
    or for a page or a text file's lines (no heading path) the document's title. A statement longer than a passage
    (`max_chars`, the chunk size) is left out: the answerer reads statements out of passages and never meets it, and
    the model's cost grows with its length (a 2 MB line with no full stop took 9 minutes of "Preparing answers")."""
    out: list[str] = []
    longest = max_chars if max_chars is not None else float("inf")
    for section in doc.sections:
        head = section.section[-HEADING_CHARS:] if section.section else doc.title[:HEADING_CHARS]
        for statement in split_statements(section.text, lines_wrap=section.page is None):
            if MIN_CHARS <= len(statement) <= longest and not statement.endswith(("?", "？")):
                out.append(_under(head, statement))
    return list(dict.fromkeys(out))


def warm(embedder, docs: Iterable[LoadedDocument], progress=None, max_chars: int | None = None) -> int:
    """Embed the statements of these documents through the (cached) embedder; how many texts were weighed."""
    texts = [t for doc in docs for t in statement_texts(doc, max_chars)]
    if texts:
        embedder.embed_passages(texts, progress=progress) if progress else embedder.embed_passages(texts)
    return len(texts)
