"""A passage's text as the statements an answer may quote, and what kind of statement each is: a sentence, a
heading or a caption, a row of a table of options or settings, a line of code, a fragment.

Sentences come from `documents.text.split_sentences`; here they are joined back where a split would cut a statement
("the vec! macro", "enter this line:" and its command, a man page's option over its description) and cut where a
PDF runs printed markup and prose together. Every pattern is a named entry of rules/statements.json, with why it
exists and the lines it must and must not match (docs/answers.md "Rules as data").
"""

from __future__ import annotations

import re
from pathlib import Path

from citerag import rules
from citerag.documents.text import is_cjk, split_sentences

_RULES = Path(__file__).parent / "rules"


def _rule(rule_id: str) -> re.Pattern[str]:
    return rules.compiled(_RULES, "statements", rule_id)


_TERMINAL = tuple("。．！.!」』）)")  # "．": Japanese set with "，．", as much technical writing is


def looks_like_heading(text: str) -> bool:
    """A short line in Title Case ("Grant of Patent License.", "5. Troubleshooting"): a heading, not a statement. Not
    a row of options ("-d --decompress --uncompress Decompress.": gzip's answer to "which option decompresses?")."""
    words = text.rstrip(".:：").split()
    if not 1 <= len(words) <= 6 or not all(w.isascii() for w in words) or is_row(text):
        return False
    # The content words after the first (not acronyms, numbers or short function words) are all capitalised.
    content = [w for w in words[1:] if len(w) > 3 and w.isalpha() and not w.isupper()]
    return bool(content) and all(w[0].isupper() for w in content)


# A command: a prompt, an option ("--count", "-m"), a path or macro, a call, or a package manager's install ("python
# -m pip install rich", which read as a fragment and lost to "Rich can be installed in the Python REPL"). A root
# prompt ("# ") only where a statement opens with it or leads into it after a colon, as manuals print a command run
# as root ("You need to configure it as: # dpkg-reconfigure locales", which read as a fragment); elsewhere "#" is
# more often a comment or a number sign. A macro ("println!(", "the vec! macro") is not the "!" that ends a sentence
# ("…than crashing the program due to a typo!", which read as code to "How do I…") nor one after Japanese text.
CODE = _rule("code")


MARKUP = _rule("markup")
# A listing's, table's or figure's caption ("リスト8-5：添え字記法か…", "Table 3-1: Integer Types in Rust") names
# what follows without stating anything about it, like a heading.
CAPTION = _rule("caption")


_ENUMERATOR = _rule("enumerator")
LEADING_ENUMERATOR = _rule("leading_enumerator")


HEADING_LINE_CHARS = 24
# A command-line option over its description, as a man page lists them ("-i identity_file\n  Selects a file from
# which…"): the option is what "which option…" asks for, so it reads on into the sentence under it.
_OPTION_TERM = _rule("option_term")
_DOT_COMMAND = _rule("dot_command")
# An option with its aliases and argument placeholders and nothing else on the line ("-iname pattern", "-h,
# --human-readable", "-n, --lines=[-]NUM"): its description is on the lines under it.
_OPTION_ALONE = _rule("option_alone")
# A configuration file's line, as manuals print the defaults ("opt-level = 3", "regex = { git = \"…\" }"). A
# literal value, not code ("page = reader.pages[0]").
_SETTING = _rule("setting")
_TABLE = _rule("table")
_UNDER_TABLE = _rule("under_table")


def _opens_row(previous: str, line: str) -> bool:
    """A line of a table of options, commands or settings, as man pages and manuals print them ("-batch  Force
    batch I/O.", ".tables ?TABLE?  List names of tables", "opt-level = 3"): a statement of its own, not the wrap of
    the line above. A dot-command or a table's header always opens one; an option only under another ("grep with
    the\n-v option" wraps), nor under an option alone on its line, whose description it is ("-iname pattern\n-name
    と同様ですが、…"); a setting unless it is the first under its table's header, which it goes with."""
    option = _OPTION_TERM.match(line) and (_OPTION_TERM.match(previous) or _DOT_COMMAND.match(previous)) \
        and not _OPTION_ALONE.match(previous)
    setting = _SETTING.match(line) and not _TABLE.match(previous)
    return bool(_DOT_COMMAND.match(line) or _TABLE.match(line) or option or setting or _SETTING.match(previous))


def _is_setting(statement: str) -> bool:
    return bool(_SETTING.match(_UNDER_TABLE.sub("", statement)))  # "[profile.release] opt-level = 3" too


# A row of an HTML table as the loader writes it, each cell under its column's header ("package: ibus-unikey; popcon:
# V:0, I:0; size: 318; supported locale: Vietnamese").
_CELLS = _rule("cells")


def is_row(statement: str) -> bool:
    """A statement that is one entry of such a table: an option, a dot-command or a setting with what it does, or a
    row of cells under their headers."""
    return bool(_OPTION_TERM.match(statement) or _DOT_COMMAND.match(statement) or _CELLS.match(statement)) \
        or _is_setting(statement)


# A particle before a word, which no Japanese sentence opens with: a line that goes on with one ("Debian\nのサーバ
# から入手可能な…", as an HTML page wraps its source) is the start of the sentence, as a line that goes on in lower
# case is. Not a word in kana that opens one ("はじめに、…", "のちほど").
_GOES_ON_JA = _rule("goes_on_ja")


def _heading_line(line: str, opens_paragraph: bool, after: str) -> bool:
    """A text file's line this short that opens a paragraph and ends no sentence is a heading ("\n\nKumo カスタマー
    サポート\n電話受付は…"), unless it reads on: it ends with a comma ("Dear customer,") or the next line goes on in
    lower case ("The filter\nis washable."). Inside a paragraph a short line is a sentence wrapped early
    ("フィルターは水洗い\nできません。"). Nor is a command-line option over its description."""
    return opens_paragraph and len(line) <= HEADING_LINE_CHARS and not line.endswith((",", "、", "，")) \
        and not after[:1].islower() and not _GOES_ON_JA.match(after) and not _OPTION_TERM.match(line)


# Six plain words or more: prose that names a command ("For example:\ncargo install will select the latest
# dependencies unless\n--locked is passed in.", "…are:\nA build script prints cargo::rerun-if-changed=foo where foo
# is a file that\ndoesn't exist…"), not the command an "enter this:" introduces ("python -m pip install rich").
_PLAIN_WORD = _rule("plain_word")


def _reads_as_prose(line: str) -> bool:
    return not line.startswith("$ ") and len(_PLAIN_WORD.findall(line)) >= 6


# A sentence that runs into a command set on a line of its own, with no colon before it ("To display the default
# target…, run the command\nsystemctl get-default", "…を得るには、コマンド\ndpkg --status パッケージ名\nを実行します。",
# as DocBook prints an inline command): cut at the line break, the sentence was a fragment and the command no
# statement at all, so neither answered "how do I display the default target?".
# In Japanese the word follows a clause ("…を得るには、コマンド", "以下のコマンド"), not a heading ("よく使うコマンド").
_LEADS_INTO_COMMAND = _rule("leads_into_command")
# The command: a few words, the first a lower-case name in Latin script, not prose (a placeholder may be Japanese:
# "パッケージ名"); not a heading ("Updating the package list").
_COMMAND_LINE = _rule("command_line")
# What goes on after the command: the verb that runs it ("を実行します。", "と入力してください。") or, in English, the
# words that go on about it ("using the name of the service file.").
_AFTER_COMMAND = _rule("after_command")


def _is_command_column(piece: str) -> bool:
    """A command in a row's last column: an editor's (":%s/old/new/g", ":q!") or any other code, short."""
    return len(piece) <= 60 and not _reads_as_prose(piece) \
        and ((piece[:1] == ":" and piece[1:2] not in ("", " ", "\t")) or bool(CODE.search(piece)))


def is_command_line(statement: str) -> bool:
    """A command alone on its line ("aptitude safe-upgrade", "systemctl get-default")."""
    return bool(_COMMAND_LINE.match(statement)) and not _reads_as_prose(statement)


def _takes_command(statement: str, piece: str, gap: str) -> bool:
    """Whether the statement leads into the command `piece`: "enter this line:" and a command, or a sentence that
    runs into one set on its own line."""
    if _reads_as_prose(piece):
        return False
    if statement.endswith((":", "：")):
        return bool(CODE.search(piece)) and len(piece) <= 120
    return gap.endswith("\n") and bool(_LEADS_INTO_COMMAND.search(statement)) and len(piece) <= 80 \
        and is_command_line(piece)


def split_statements(text: str, lines_wrap: bool = True) -> list[str]:
    """The passage's sentences as an answer quotes them: "the vec! macro" and "v. 2.0" do not end a sentence (the
    next word, on the same line, is lower case or a number), and "enter this line:" takes the command on the next
    line with it. `lines_wrap`: a sentence may go on over a line break (a text file); not in a PDF's text, whose
    wrapped lines the loader already joined (what is left is a heading: "エラーを委譲する\n失敗する可能性の…")."""
    out: list[str] = []
    paragraph: list[bool] = []  # each statement opens a paragraph (a blank line before it)
    code_end = False  # the last statement ends with a command line, which ends it
    for span in split_sentences(text):
        piece = span.text.strip(" …")
        if not piece:
            continue  # an ellipsis on a line of its own (a PDF's elided example) is no statement
        gap = text[span.start - 2 : span.start] if span.start >= 2 else ""
        same_line = gap.endswith(" ")
        # One line break inside a sentence: a text file's wrap. In a PDF's text the loader joined the wrapped lines,
        # save those it judged short (a page of wide table rows sets the bar high): a line of prose that goes on in
        # lower case to a sentence end is still one of them; a short label over a list ("Package contents\ncharger")
        # is not.
        goes_on = bool(out) and piece[:1].islower() and len(out[-1].split()) >= 4 and piece.endswith(_TERMINAL)
        wrapped = gap.endswith("\n") and not gap.startswith("\n") and (lines_wrap or goes_on)
        if out and _ENUMERATOR.match(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "3." + "Grant of Patent License.": the number labels what follows
        elif out and lines_wrap and gap == "\n\n" and _OPTION_ALONE.match(out[-1]) and not _OPTION_TERM.match(piece):
            # A man page may leave a blank line between an option and its description ("-n, --quiet, --silent\n\n
            # パターンスペースの自動出力を抑制します"): the option still reads into it.
            out[-1] = f"{out[-1]} {piece}"
        elif out and same_line and out[-1].rstrip("”’\"')").endswith((".", "!", "?")) \
                and (piece[:1].islower() or piece[:1].isdigit()):
            out[-1] = f"{out[-1]} {piece}"
        elif out and lines_wrap and (gap.endswith("\t") or (gap == "  " and out[-1].endswith(("。", "．")))) \
                and text[span.end : span.end + 1] in ("\n", "") and _is_command_column(piece):
            # A table of commands set as text, each row "what it does。<TAB>the command" ("ファイルの中の全ての
            # 検索語句を置換する。\t:%s/old/new/g"): the command ends its row's statement; read on, it opened the
            # next row's and was quoted as that row's command. Set off by a tab, or by spaces after a Japanese
            # full stop: after one space it is the next sentence's start, wrapped ("…区別しません。 -L または\n
            # -follow オプションが…"), and English text sets two spaces after every full stop ("This option is
            # obsolete.  Use --foo instead.").
            out[-1] = f"{out[-1]} {piece}"
            code_end = True
            continue
        elif out and _takes_command(out[-1], piece, gap):
            # Before a text file's wrap: the command ends the statement ("…run the command\nsystemctl get-default
            # \nDuring boot-up…" is two).
            out[-1] = f"{out[-1]} {piece}"
            code_end = True
            continue
        elif out and wrapped and not code_end and not out[-1].endswith((*_TERMINAL, "?", "？", ":", "：", ";")) \
                and not looks_like_heading(out[-1]) and not _heading_line(out[-1], paragraph[-1], piece) \
                and not _opens_row(out[-1], piece):
            # A text file keeps its line breaks (they give the line numbers cited): a sentence wrapped over lines
            # is still one sentence. Japanese wraps anywhere, so its line break is no space; between Latin and
            # Japanese it is one, as a page renders it ("-f, --ignore-case\n大文字・小文字を区別しない").
            out[-1] += ("" if is_cjk(out[-1][-1]) and is_cjk(piece[0]) else " ") + piece
        elif out and code_end and gap.endswith("\n") and len(piece) <= 200 and _AFTER_COMMAND.match(piece):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
            paragraph.append(gap == "\n\n")
        code_end = False
    return [part for statement in out for before in _before_markup(statement) for part in _after_markup(before)]


# Where printed code or markup ends: a closing tag or brace ("} <span class=\"caption\">リスト9-4: …</span>").
_MARKUP_END = _rule("markup_end")


# Where a sentence ends and markup follows it with no space ("…the water tank is low.</answer><sources>…"): a
# document that holds such text states the sentence all the same, and the markup after it made the whole read as
# markup, so the sentence was never answered from.
_SENTENCE_THEN_MARKUP = _rule("sentence_then_markup")


def _before_markup(statement: str) -> list[str]:
    at = _SENTENCE_THEN_MARKUP.search(statement)
    if at is None or at.start() < 8:
        return [statement]
    return [statement[: at.start()], *_before_markup(statement[at.start():])]


def _after_markup(statement: str) -> list[str]:
    """A PDF prints a listing, its caption and the prose after it on one run of text with no sentence end between
    them ("} <span class=\"caption\">リスト9-4: …</span> Option enumのように、Result enumとその列挙子は…"): the prose
    is a statement of its own, which the markup would otherwise bury. Not a brace inside prose ("the `{}`
    placeholder", "println!の{}プレースホルダー"): the prose must start a sentence, after a brace that closes more
    than a placeholder."""
    ends = [m.end() for m in _MARKUP_END.finditer(statement)
            if m.group() != "}" or not _PLACEHOLDER.search(statement, 0, m.start())]
    if not ends:
        return [statement]
    statement = statement.rstrip()
    tail = statement[ends[-1] :].strip()
    rest = _CODE_TAIL.match(tail)
    if rest:
        # "} }', src/libcore/result.rs:906:4このエラーメッセージは…": what closes the printed code (a quote, the
        # file and line a compiler names) runs into the Japanese prose after it.
        tail = rest.group(1)
    if len(tail) < 8 or MARKUP.search(tail) or not tail.endswith(_TERMINAL) \
            or not (tail[0].isupper() or is_cjk(tail[0])):
        return [statement]
    return [statement[: len(statement) - len(tail)].rstrip(), tail]


# "{}", "{:?}", "{x}": a placeholder, whose brace closes nothing printed before it.
_PLACEHOLDER = _rule("placeholder")
# After a closing brace: closing punctuation (no sentence starts with it) and a short run of Latin text, up to
# Japanese prose.
_CODE_TAIL = _rule("code_tail")


def is_code_line(statement: str) -> bool:
    """A line of code that reads as a statement ("let a = [3; 5];"): no Japanese, ends with ";", and dense in the
    punctuation code is written with."""
    if not statement.endswith(";") or any(is_cjk(ch) for ch in statement):
        return False
    return sum(ch in '=;()[]{}"<>' for ch in statement) > 0.1 * len(statement)


# The end of a statement that leads into its command without a colon (`_LEADS_INTO_COMMAND`): a command with the
# marks a command has in its first words ("get-default", "--status", a path), not "the command line interface" cut
# at a page break nor "Use the command line to edit /etc/fstab".
_ENDS_WITH_COMMAND = _rule("ends_with_command")
_COMMAND_MARK = _rule("command_mark")  # "get-default", "--status", a path: what a word of prose has not


def runs_into_command(text: str) -> bool:
    """Whether the statement ends in the command it leads into without a colon ("…run the command systemctl
    get-default"): whole, and with no full stop to read on from into the next sentence."""
    if text.endswith((*_TERMINAL, "?", "？")):
        return False  # "…only if they are on the command line." ends a sentence
    tail = _ENDS_WITH_COMMAND.search(text[-120:])
    return tail is not None and bool(_COMMAND_MARK.search(tail.group(1)))


def ends_statement(text: str) -> bool:
    """A sentence end, or a command the statement leads into ("…enter this line: $ rustc --version", "…run the
    command systemctl get-default")."""
    return text.endswith((*_TERMINAL, ";", "; and", "; or")) or bool(CODE.search(text[-40:])) \
        or runs_into_command(text)
