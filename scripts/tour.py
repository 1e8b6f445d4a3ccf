"""Ask an index of real documents a list of questions, as a new user would with `citerag ask`, and judge each answer:
an answerable question is right when an answer sentence holds the expected token (an option such as "-c" only as a
whole token, so "-c" is not found in "--count" or "-cf") and is cited to the expected file; a near miss is right
when the answer says the documents do not answer. Nothing here is timed or tuned on: it is a second look, on
documents nobody here wrote, at what `citerag bench-answers` measures.

    # the Japanese man pages of scripts/tours/manpages-ja.tsv (Debian's manpages-ja; fetched, not committed)
    apt-get download manpages-ja && dpkg -x manpages-ja_*.deb x
    mkdir -p ja && for p in grep sed tar cp sort wc head du find ls; do zcat x/usr/share/man/ja/man1/$p.1.gz |
      preconv -e utf-8 | groff -Tutf8 -mandoc -rLL=80n -P-c | col -bx > ja/$p.txt; done
    citerag ingest ja --index /tmp/ja.sqlite
    python scripts/tour.py /tmp/ja.sqlite scripts/tours/manpages-ja.tsv [--show] [--agent none]

    # the English pages of scripts/tours/manpages-en.tsv, as this machine's man prints them to a pipe
    mkdir -p en && for p in grep sed tar cp sort wc head du find ls gzip ssh sqlite3; do
      MANWIDTH=80 man -P cat $p > en/$p.txt; done
    citerag ingest en --index /tmp/en.sqlite
    python scripts/tour.py /tmp/en.sqlite scripts/tours/manpages-en.tsv

    # chapters 3, 4 and 8 of the Debian Reference (HTML), in English and in Japanese (whose translation leaves
    # many paragraphs in English), for scripts/tours/debian-reference-{en,ja}.tsv
    apt-get download debian-reference-en debian-reference-ja && for f in debian-reference-*.deb; do dpkg -x $f x; done
    for l in en ja; do mkdir -p dr-$l && cp x/usr/share/debian-reference/ch0[348].$l.html dr-$l/ &&
      citerag ingest dr-$l --index /tmp/dr-$l.sqlite; done
    python scripts/tour.py /tmp/dr-en.sqlite scripts/tours/debian-reference-en.tsv

    # four pages of Rust's own HTML documentation with tables, for scripts/tours/rust-html-en.tsv
    d=$(rustc --print sysroot)/share/doc/rust/html && mkdir -p rs && cp $d/rustc/platform-support.html \
      $d/rustc/lints/groups.html $d/rustc/linker-plugin-lto.html $d/cargo/reference/profiles.html rs/
    citerag ingest rs --index /tmp/rs.sqlite && python scripts/tour.py /tmp/rs.sqlite scripts/tours/rust-html-en.tsv

    # the Japanese Debian Edu 12 manual, a 101-page PDF typeset by LaTeX, for scripts/tours/debian-edu-ja.tsv
    apt-get download debian-edu-doc-ja && dpkg -x debian-edu-doc-ja_*.deb x
    citerag ingest x/usr/share/doc/debian-edu-doc-ja/debian-edu-bookworm-manual.pdf --index /tmp/edu.sqlite
    python scripts/tour.py /tmp/edu.sqlite scripts/tours/debian-edu-ja.tsv
    # and in English (debian-edu-doc-en), for scripts/tours/debian-edu-en.tsv

    # TeX Live's Japanese guide, a 71-page PDF from dvipdfmx whose Japanese fonts have no ToUnicode map, for
    # scripts/tours/texlive-ja.tsv
    apt-get download texlive-lang-japanese && dpkg -x texlive-lang-japanese_*.deb x
    citerag ingest x/usr/share/doc/texlive-doc/texlive/texlive-ja/texlive-ja.pdf --index /tmp/tl.sqlite
    python scripts/tour.py /tmp/tl.sqlite scripts/tours/texlive-ja.tsv

    # fancyhdr's manual, a PDF from pdfTeX, for scripts/tours/fancyhdr-en.tsv
    apt-get download texlive-latex-base-doc && dpkg -x texlive-latex-base-doc_*.deb x
    citerag ingest x/usr/share/doc/texlive-doc/latex/fancyhdr/fancyhdr.pdf --index /tmp/fh.sqlite
    python scripts/tour.py /tmp/fh.sqlite scripts/tours/fancyhdr-en.tsv

    # the Debian FAQ, its English PDF and its Japanese HTML chapters, for scripts/tours/debian-faq-{en,ja}.tsv
    apt-get download debian-faq debian-faq-ja && for f in debian-faq*.deb; do dpkg -x $f x; done
    mkdir -p faq/ja && gunzip -c x/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz > faq/debian-faq.en.pdf
    cp x/usr/share/doc/debian/FAQ/ja/*.html faq/ja/ && citerag ingest faq --index /tmp/faq.sqlite
    python scripts/tour.py /tmp/faq.sqlite scripts/tours/debian-faq-en.tsv

    # aptitude's user's manual, its English and Japanese HTML pages (the same file names in two folders, which the
    # questions name as en/… and ja/…), for scripts/tours/aptitude-{en,ja}.tsv
    apt-get download aptitude-doc-en aptitude-doc-ja && for f in aptitude-doc-*.deb; do dpkg -x $f x; done
    citerag ingest x/usr/share/doc/aptitude/html --index /tmp/apt.sqlite
    python scripts/tour.py /tmp/apt.sqlite scripts/tours/aptitude-en.tsv

    # the Debian New Maintainers' Guide, its English and Japanese PDFs, for scripts/tours/maint-guide-{en,ja}.tsv
    apt-get download maint-guide maint-guide-ja && for f in maint-guide*.deb; do dpkg -x $f x; done
    mkdir -p mg && cp x/usr/share/doc/maint-guide/maint-guide.en.pdf mg/
    cp x/usr/share/doc/maint-guide-ja/maint-guide.ja.pdf mg/
    citerag ingest mg --index /tmp/mg.sqlite && python scripts/tour.py /tmp/mg.sqlite scripts/tours/maint-guide-en.tsv

    # A Brief History of Debian, its English and Japanese PDFs, for scripts/tours/debian-history-{en,ja}.tsv
    apt-get download debian-history && dpkg -x debian-history_*.deb x && mkdir -p dh
    cp x/usr/share/doc/debian-history/docs/project-history.{en,ja}.pdf dh/ && citerag ingest dh --index /tmp/dh.sqlite
    python scripts/tour.py /tmp/dh.sqlite scripts/tours/debian-history-en.tsv

    # why-questions over four of the manuals above in one index (the FAQ, the maintainers' guide, the history and
    # the Debian Reference's chapters 3, 4 and 8, each in English and Japanese), for scripts/tours/why-{en,ja}.tsv
    mkdir -p why/faq/ja why/mg why/dh why/dr && cp faq/debian-faq.en.pdf why/faq/ && cp faq/ja/*.html why/faq/ja/
    cp mg/*.pdf why/mg/ && cp dh/*.pdf why/dh/ && cp dr-en/* dr-ja/* why/dr/
    citerag ingest why --index /tmp/why.sqlite && python scripts/tour.py /tmp/why.sqlite scripts/tours/why-en.tsv
    # and over the Debian Edu 12 manual and aptitude's (English and Japanese), for scripts/tours/why2-{en,ja}.tsv
    mkdir -p why2/edu/en why2/edu/ja why2/apt && cp -r x/usr/share/doc/aptitude/html/{en,ja} why2/apt/
    cp x/usr/share/doc/debian-edu-doc-en/debian-edu-bookworm-manual.pdf why2/edu/en/
    cp x/usr/share/doc/debian-edu-doc-ja/debian-edu-bookworm-manual.pdf why2/edu/ja/
    citerag ingest why2 --index /tmp/why2.sqlite && python scripts/tour.py /tmp/why2.sqlite scripts/tours/why2-en.tsv

    # questions on names with a number in them (i8, UTF-16, imap2) over the Rust book's data-types chapters and the
    # Debian Reference's chapters 3, 4 and 8, in English and Japanese, for scripts/tours/variants-{en,ja}.tsv
    mkdir -p variants && cp datasets/answers/docs/rust-book*data-types.md dr-en/* dr-ja/* variants/
    citerag ingest variants --index /tmp/variants.sqlite
    python scripts/tour.py /tmp/variants.sqlite scripts/tours/variants-en.tsv

    # how-to questions over the benchmark's own English chapters and licences, for scripts/tours/howto-en.tsv
    citerag ingest datasets/answers/docs --index /tmp/howto.sqlite
    python scripts/tour.py /tmp/howto.sqlite scripts/tours/howto-en.tsv
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import unquote


def file_name(uri: str) -> str:
    from citerag.bench.answers import file_name as name

    return name(uri)


def questions(path: Path) -> list[tuple[str, str, str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            qid, file, token, question = line.split("\t")
            rows.append((qid, file, token, question))
    return rows


def holds(text: str, token: str) -> bool:
    # Whole against Latin letters, digits and hyphens only: Japanese runs on without spaces ("21ビットの").
    return re.search(rf"(?<![A-Za-z0-9_-]){re.escape(token)}(?![A-Za-z0-9_-])", text) is not None


def cites(uri: str, file: str) -> bool:
    """The file by its name, or by the end of its path where two folders hold the same name ("en/ch01s02.html")."""
    return file_name(uri) == file if "/" not in file else unquote(uri).endswith("/" + file)


def judge(answer, file: str, token: str) -> bool:
    if file == "-":
        return not answer.citations
    return any(holds(c.text, token) and cites(s.uri, file) for c in answer.citations for s in c.sources)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("questions", type=Path)
    ap.add_argument("--show", action="store_true", help="print every answer, not only the wrong ones")
    ap.add_argument("--agent", choices=["local", "none"], default="local", help="as `citerag ask --agent`")
    args = ap.parse_args()
    from citerag.bench.answers import ASKERS
    from citerag.cli.common import open_index

    ask = ASKERS[args.agent](open_index(args.index, quiet=True))
    right = {"answerable": [0, 0], "near miss": [0, 0]}
    for qid, file, token, question in questions(args.questions):
        answer = ask(question)
        ok = judge(answer, file, token)
        kind = "near miss" if file == "-" else "answerable"
        right[kind][0] += ok
        right[kind][1] += 1
        if args.show or not ok:
            shown = answer.text.replace("\n", " ")[:160] if answer.citations else "(not found)"
            print(f"{'ok ' if ok else 'BAD'} {qid}: {question}\n    {shown}")
    for kind, (n_ok, n) in right.items():
        print(f"{kind}: {n_ok}/{n} right")
    sys.exit(0)


if __name__ == "__main__":
    main()
