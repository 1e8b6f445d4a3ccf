"""Print the Japanese loanword <-> native term groups of the Sudachi synonym dictionary that the answerer's word
variants take (lambdas/citerag/answerer/variants.json), from a copy of its source file.

    python scripts/variants_from_sudachi.py path/to/SudachiDict/src/main/text/synonyms.txt

The dictionary (Apache-2.0, the same release as sudachidict-core 20240109) groups words by meaning. Taken: groups of
the IT field alone, and the general field's groups named in GENERAL, that hold a katakana word and a word with
kanji. Of each group, only words written in kana or kanji (not Latin spellings, which an English sentence would
match), not abbreviations (アカ, ネット: they match inside other words), and not words the dictionary marks as never
expanded. A word it marks as no trigger of expansion is kept as a target only.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

KATAKANA = re.compile(r"^[\u30a1-\u30fa\u30fc・]+$")
KANJI = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
RELEASE = "20240109"
# General-field groups whose words name what software manuals talk about (directories, deleting, settings).
GENERAL = {"000107", "000501", "013968"}


def groups(path: Path) -> list[dict]:
    words: dict[str, list[tuple[str, str]]] = defaultdict(list)
    fields: dict[str, set[str]] = defaultdict(set)
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh):
            if len(row) < 9 or not row[0].strip():
                continue
            gid, _kind, expand, _lexeme, _form, abbr, _spelling, field, head = row[:9]
            fields[gid].add(field)
            if expand == "2" or abbr != "0" or LATIN.search(head) or len(head) < 2:
                continue
            words[gid].append((expand, head))
    out = []
    for gid, members in words.items():
        if not (fields[gid] == {"(IT)"} or gid in GENERAL):
            continue
        heads = list(dict.fromkeys(h for _, h in members))
        triggers = [h for e, h in members if e == "0"]
        if len(heads) < 2 or not triggers or not any(KATAKANA.match(h) for h in heads) \
                or not any(KANJI.search(h) and not KATAKANA.match(h) for h in heads):
            continue
        entry: dict = {"lang": "ja", "words": list(dict.fromkeys(triggers))}
        targets = [h for h in heads if h not in triggers]
        if targets:
            entry["targets"] = targets
        entry["source"] = f"SudachiDict {RELEASE} synonyms.txt, group {gid}"
        out.append(entry)
    return out


if __name__ == "__main__":
    json.dump(groups(Path(sys.argv[1])), sys.stdout, ensure_ascii=False, indent=1)
    print()
