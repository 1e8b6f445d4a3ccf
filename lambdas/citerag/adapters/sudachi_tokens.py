"""Japanese words from Sudachi (sudachipy + sudachidict-core) added to the BM25 stream: the optional `japanese`
extra, for the embedded index only (never in the Lambda bundle).

CJK character bigrams need no dictionary and carry most of Japanese BM25; a morphological analyser adds whole
words in their normalised form (ＵＳＢ/USB, 附属/付属, 行きました -> 行く), so a query and a passage that spell
a word differently still share a term. Only content words are kept (nouns, verbs, adjectives, adverbs; not
particles, auxiliaries, symbols or light verbs such as する), and only words with kana or kanji: Latin words are
already in the stream. Words carry a `ja:` prefix so they never collide with a bigram of the same characters.
Measured with `citerag bench` on JaQuAD (README "Japanese words (Sudachi)").
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading

from citerag.documents.text import normalize
from citerag.extras import needs, pip_install
from citerag.search.sparse import BM25Tokens

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
CONTENT_POS = frozenset({"名詞", "動詞", "形容詞", "形状詞", "副詞"})
# Sudachi refuses very long inputs; passages are far shorter, and longer text is cut at line ends.
_MAX_CHARS = 4000


class SudachiTokens(BM25Tokens):
    name = "sudachi-core-c"

    def __init__(self) -> None:
        self._dictionary = _dictionary()  # first: its ImportError names the extra to install

        from sudachipy import SplitMode

        self._mode = SplitMode.C
        # A sudachipy tokenizer must not be shared between threads (ingest reads on one, searches on others).
        self._local = threading.local()

    def _tokenizer(self):
        tok = getattr(self._local, "tokenizer", None)
        if tok is None:
            tok = self._local.tokenizer = self._dictionary.tokenizer(self._mode)
        return tok

    def extra(self, text: str) -> list[str]:
        return ["ja:" + normalized for _, normalized, _ in self.forms(text)]

    def forms(self, text: str) -> list[tuple[str, str, str]]:
        """(surface, normalised form, reading) of each content word written in kana or kanji."""
        if not _JAPANESE.search(text):
            return []
        tok = self._tokenizer()
        words: list[tuple[str, str, str]] = []
        for part in _parts(normalize(text)):
            for m in tok.tokenize(part):
                pos = m.part_of_speech()
                if pos[0] not in CONTENT_POS or pos[1] == "非自立可能":
                    continue
                # Written in kana or kanji: Sudachi also normalises English words (filter -> フィルター), which
                # would change how English passages score.
                if _JAPANESE.search(m.surface()):
                    words.append((m.surface(), m.normalized_form(), m.reading_form()))
        return words


@functools.cache
def _dictionary():
    """The core dictionary, loaded once per process (memory-mapped; every tokenizer shares it)."""
    try:
        from sudachipy import Dictionary
    except ImportError as exc:
        raise ImportError(needs("the Sudachi tokenizer", "japanese")) from exc
    try:
        return Dictionary(dict="core")
    except Exception as exc:  # sudachipy raises its own error type when the dictionary package is missing
        raise ImportError(f"the Sudachi dictionary is not installed: {pip_install('japanese')}") from exc


def sudachi_installed() -> bool:
    """Whether the japanese extra is installed (without loading the dictionary)."""
    return all(importlib.util.find_spec(m) is not None for m in ("sudachipy", "sudachidict_core"))


def _parts(text: str) -> list[str]:
    if len(text) <= _MAX_CHARS:
        return [text]
    parts, current = [], ""
    for line in text.splitlines(keepends=True):
        while len(line) > _MAX_CHARS:
            parts.append(line[:_MAX_CHARS])
            line = line[_MAX_CHARS:]
        if len(current) + len(line) > _MAX_CHARS:
            parts.append(current)
            current = ""
        current += line
    if current:
        parts.append(current)
    return parts
