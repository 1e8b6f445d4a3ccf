"""What a question asks for ("how many": a number; "which option": an option; "what is it called": a name) and
what a sentence that answers it holds."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from citerag.citations.statements import LEADING_ENUMERATOR
from citerag.documents.text import detect_language, normalize
from citerag.search.query import Query
from citerag.search.sparse import term_id, tokenize

_WANTS_NUMBER = re.compile(
    r"\bhow (many|much|long|big|large|old|often|far|tall|deep|heavy)\b"
    r"|\b(what|which) (range|size|year|percentage|share|version)\b"
    # "In which Node.js version…", "What is the typical size…", "the numeric value of…", "…in bytes?": a number too
    r"|\b(what|which) (?!(?:does|do|did|is|are|was|were|has|have|had|will|can|changed|this|that|the|a|an|its|their)"
    r"\b)[\w.+-]+ version\b|\b(numeric|numerical) value of\b"
    r"|\bwhat is the (typical|average|usual|total) (size|length|number|count|value)\b"
    r"|\bin (bytes|kilobytes|megabytes|gigabytes|seconds|milliseconds|minutes|hours|percent|pixels)\W*$"
    r"|\b(maximum|minimum) (number|size|length|value)\b|\bwithin how\b|^when\b|いくつ|どのくらい|どれくらい"
    r"|何(個|年|日|週|時間|分|秒|か月|ヶ月|カ月|月|人|歳|倍|度|回|件|台|種類|番目|割|桁|ビット|バイト|文字|パーセント|%)"
    r"|範囲|サイズ|大きさ", re.I)
# A digit glued to a name is the name's ("ASN.1", "ASN1_SUCCESS", "IPv6", "x86"), not a number; a version's "v2" is.
_NUMBER = re.compile(r"(?<![A-Za-z_.])\d|\bv\d"
                     r"|\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|fifty|thirty|sixty)\b"
                     r"|[一二三四五六七八九十百千]", re.I)


# A price or a fee is an amount of money, or none: "a two-year warranty" holds a number, not a price (asked for the
# Kumo Pure 300's price, the manual's specifications were the answer). Not any "cost": "the runtime cost of Rc".
_WANTS_MONEY = re.compile(r"\b(price|prices|fee|fees)\b|how much (?:does|do|did|will|would) .{1,60}\bcost\b"
                          r"|いくら|値段|価格|料金|費用|何円|何ドル", re.I)
_MONEY = re.compile(r"[$€£¥￥]\s?\d|\d\s?(?:円|ドル|ユーロ|(?:dollars?|euros?|pounds?|yen|usd|eur|jpy|gbp)\b)"
                    r"|[万億千百十]円|\b(free|no charge|without charge|royalty-free)\b|無料|無償", re.I)


def asks_for_number(query: Query) -> bool:
    return bool(_WANTS_NUMBER.search(query.text) or _WANTS_MONEY.search(query.text))


def _holds_number(text: str) -> bool:
    return bool(_NUMBER.search(LEADING_ENUMERATOR.sub("", text)))  # "3. Grant of…": a label, not a number


# "How long…" and "When…" ask for a time, which is a number ("within 30 days") or a word that says one: "a perpetual
# patent license", "terminate as of the date such litigation is filed". Dev: no figure moved; "How long does the
# patent license … last?" is answered with the patent license's sentence instead of the copyright license's, which a
# section number after it ("3. Grant of Patent License.") had let through.
_WANTS_TIME = re.compile(r"\bhow long\b|^when\b", re.I)
_TIME = re.compile(r"\b(dates?|days?|until|till|perpetual|permanent(ly)?|forever|indefinite(ly)?|immediately)\b",
                   re.I)


# "In what year…" is answered by a year, not by any number: "the Mozilla Public License, v. 2.0" is a version.
_WANTS_YEAR = re.compile(r"\b(what|which) year\b|何年に|西暦", re.I)
_YEAR = re.compile(r"(?<!\d)(?<!\d\.)(1[5-9]\d\d|20\d\d)(?!\d)(?!\.\d+(?![\d.]))|\d\s?年|[元一二三四五六七八九十]年")


# "何人…", "何歳…", "何か月…": a Japanese count names its unit (a counter), and the sentence that answers it states the
# number with that unit ("104名の死者", "10歳のとき"); a number in another unit answers another question ("23.1cm",
# a snowfall, for Alexandria's population). Each counter with the ones that say the same: 名 counts people as 人 does.
_MONTHS = "か月|ヶ月|カ月|ケ月|ヵ月|箇月"
_COUNTERS = {
    "人": "人|名", "名": "名|人", "歳": "歳|才", "才": "才|歳", "年": "年", "月": "月", "日": "日", "週": "週",
    "時間": "時間", "分": "分", "秒": "秒", **dict.fromkeys(_MONTHS.split("|"), _MONTHS), "回": "回|度", "件": "件",
    "台": "台", "個": "個|つ", "種類": "種類|種", "番目": "番目", "桁": "桁", "ビット": "ビット|bits?(?![a-z])",
    "バイト": "バイト|bytes?(?![a-z])|[kmgt]i?b(?![a-z])", "文字": "文字", "倍": "倍", "割": "割|%|パーセント",
    "パーセント": "%|パーセント|割",
}
_WANTS_COUNT = re.compile(r"何(" + "|".join(sorted(map(re.escape, _COUNTERS), key=len, reverse=True)) + ")")
# Matched in normalized text (NFKC, lower case: "１６ＧＢ" is "16gb", "℃" is "°c").
_NUMERAL = r"(?:\d|[一二三四五六七八九十百千万億数])\s?"
# Words a numeral and a counter spell without counting anything: 十分 (enough), 万歳, 一種 (a kind of).
_NOT_COUNTS = re.compile(r"(?<![\d一二三四五六七八九十百千万億])(?:十分|万歳|一種)")


_COUNTED = {counter: re.compile(_NUMERAL + "(?:" + units + ")") for counter, units in _COUNTERS.items()}
# English counts a unit as Japanese does with a counter: "How many years is each release supported?" is answered by
# a number of years ("for three years", "five (5) years", "a two-year"), not by "one purpose" in a sentence on
# security updates. Bytes may be counted in their multiples ("4 KiB"), as バイト is; "a second way" counts no time.
_UNITS_EN = ("year", "month", "week", "day", "hour", "minute", "second", "bit", "byte")
_WANTS_UNITS_EN = re.compile(rf"\bhow many ({'|'.join(_UNITS_EN)})s?\b", re.I)
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
                 "|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
                 "|thousand|million|dozen|several|few")
# Possessive, and not inside a run of digits: a page of "1,1,1,…" is scanned once, not once from every digit.
_NUMERAL_EN = rf"(?:(?<![\d,.])\d[\d,.]*+|\b(?:{_NUMBER_WORDS})|\ban?(?! second))(?:\s?\(\d+\))?[\s-]?"
_COUNTED_EN = {unit: re.compile(rf"{_NUMERAL_EN}{unit}s?\b" + (r"|\d\s?[kmgt]i?b\b" if unit == "byte" else ""))
               for unit in _UNITS_EN}


def _units_in(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: bool(pattern.search(_NOT_COUNTS.sub(" ", normalize(text))))


# "How far…", "標高はどれくらい…": a measured quantity is stated in one of its units. Asked how far the settlement was
# from Hyogo, a sentence with its population ("約3600人") and a decade ("1890年代") was the answer.
_QUANTITIES = [
    (r"距離|標高|高さ|長さ|深さ|全長|身長|直径|半径|海抜|水深|\bhow (far|tall|deep)\b"
     r"|\b(distance|height|elevation|altitude|depth|diameter|radius)\b",
     r"[kcm]?m(?![a-z])|メートル|キロ|センチ|ミリ|マイル|miles?(?![a-z])|feet|foot|ft(?![a-z])|inch(?:es)?"
     r"|yards?(?![a-z])|里|光年|light[- ]years?"),
    (r"面積|広さ|\barea\b", r"[kcm]?m2|平方|ha(?![a-z])|ヘクタール|acres?(?![a-z])|エーカー|坪|square"),
    (r"重さ|重量|体重|質量|\bhow heavy\b|\b(weight|mass)\b",
     r"(?:k|m)?g(?![a-z])|t(?![a-z])|グラム|キロ|トン|ポンド|lbs?(?![a-z])|pounds?|oz(?![a-z])|ounces?|tons?|tonnes?"),
    (r"温度|気温|水温|融点|沸点|\b(temperature|boiling point|melting point)\b",
     r"°|度|k(?![a-z])|degrees?|ケルビン|kelvin"),
    (r"人口|\bpopulation\b", r"人|名|万|億|千|thousand|million|billion|people|inhabitants|residents"),
]
_MEASURED = [(re.compile(asked, re.I), re.compile(_NUMERAL + "(?:" + unit + ")")) for asked, unit in _QUANTITIES]


# "What is the maximum number of elements a tuple can have?", "最大値はいくつ": a limit is stated as one ("最大約18cm",
# "up to 32", "-128以上127以下", "from 0 to 255"); a sentence that only counts something ("a number of values … into
# one compound type") does not say how far it may go. Only where the limit is what is asked: "When did the largest
# earthquake strike?" asks for a date, and 最高裁判所 is a court.
_WANTS_LIMIT = re.compile(r"\b(?:maximum|minimum|max|min|largest|smallest|highest|lowest|greatest)"
                          r" (?:number|size|length|value|amount|count)\b|\bat (?:most|least) how\b"
                          r"|最大値|最小値|上限|下限|(?:最大|最小|最も大きく|最も小さく)(?:の値|で|て)?は?(?:何|いくつ|どれ)",
                          re.I)
_LIMIT = re.compile(r"\b(?:max|maximum|min|minimum|largest|smallest|biggest|highest|lowest|longest|shortest|greatest"
                    r"|at most|at least|limits?|limited|no more than|no fewer than|no less than|exceeds?|ranges?"
                    r"|maximums|minimums|maxima|minima)\b|\bup to(?! date)"
                    r"|\b(?:from|between) [-−]?\d[\d,.]* (?:to|and) [-−]?\d"
                    r"|最大|最小|最高|最低|最長|最短|最多|最少|上限|下限|まで|以下|以上|以内|未満|範囲", re.I)


def number_evidence(query: Query) -> Callable[[str], bool]:
    """What tells a sentence answers a question that asks for a number (a year; a time, for "how long" and
    "when"; money, for a price; the counted unit, for "何人"; a unit of the quantity, for "how far"; a limit, for
    "the maximum number")."""
    kind = _number_kind(query)
    # The question's own words with digits ("ASN1_MAX_NAME_SIZE", "ASN.1", "Debian 12") are not the number it asks
    # for: "ASN1_MAX_NAME_SIZE is the maximum number of characters…" states none.
    named = sorted(set(_WITH_DIGITS.findall(query.text)), key=len, reverse=True)

    def holds(text: str) -> bool:
        for word in named:
            text = re.sub(rf"(?<![\w.]){re.escape(word)}(?![\w])", " ", text)
        return kind(text)

    if _WANTS_LIMIT.search(query.text):
        return lambda text: holds(text) and bool(_LIMIT.search(text))
    return holds


_WITH_DIGITS = re.compile(r"[A-Za-z_][\w.+-]*\d[\w.+-]*|\d[\w.+-]*[A-Za-z_][\w+-]*")


def _number_kind(query: Query) -> Callable[[str], bool]:
    if _WANTS_MONEY.search(query.text):
        return lambda text: bool(_MONEY.search(text))
    if _WANTS_YEAR.search(query.text):
        return lambda text: bool(_YEAR.search(normalize(text)))  # "２０１２年", "2012.05.01"; not "v. 2.0"
    if count := _WANTS_COUNT.search(query.text):
        counted = _units_in(_COUNTED[count.group(1)])
        # A counter is Japanese grammar: an English sentence states the number without it ("in 1913" for 何年).
        return lambda text: counted(text) if detect_language(text) == "ja" else _holds_number(text)
    if unit := _WANTS_UNITS_EN.search(query.text):
        counted_en = _units_in(_COUNTED_EN[unit.group(1).lower()])
        return lambda text: counted_en(text) if detect_language(text) == "en" else _holds_number(text)
    if measured := next((unit for asked, unit in _MEASURED if asked.search(query.text)), None):
        return _units_in(measured)
    if _WANTS_TIME.search(query.text):
        return lambda text: _holds_number(text) or bool(_TIME.search(text))
    return _holds_number


WANTS_CODE = re.compile(r"\b(how (do|can|should) (i|you|we)|which (command|function|method|macro|flag|operator)"
                        r"|what (command|function|method|macro|flag))\b|コマンド|関数|メソッド|マクロ|フラグ"
                        r"|どうすれば|どうやって|方法", re.I)
# "How do I sort a vector?" asks for a way to do one thing, named by the verb after "how do I": the sentence that
# answers says it (sorts, sorting), or shows the command or code that does it ("To uninstall Rust…: $ rustup self
# uninstall", for "remove"). One on vectors that never says it sorts ("Vectors are implemented using generics…")
# answers another question, as does one that says the thing is not done ("Because we aren't inserting any values
# into this vector…", asked how to insert an element). Typed as a search, "how to sort a vector" asks the same.
# Words between "how do I" and the verb ("How do I first install…") are skipped; verbs that ask to know rather than
# to do ("How can I tell if…", "How should I think about…") name no action a sentence must say.
_ADVERBS = (r"(?:first|just|even|then|now|still|ever|also|only|simply|quickly|easily|safely|correctly|properly"
            r"|manually|automatically|permanently|temporarily|explicitly|actually|really|best|go about)")
HOW_TO = re.compile(r"^\s*how (?:(?:do|can|should|could|would|might|may) (?:i|you|we)|to)\s+(?:" + _ADVERBS
                    + r"\s+)*([a-z]+)\b", re.I)
NOT_ACTIONS = "know tell think understand learn see find figure decide choose go be"
# "浮動小数点数を整数に変換するにはどう書きますか？", "…をアンインストールするコマンドは": the action is a kanji or
# katakana word before する (できる, させる) in a question for a way, a command, a function or a method; the answer
# says its last two kanji (処理 of エラー処理: "エラーを処理するには"), or does it in code.
HOW_TO_JA = re.compile(r"([\u4e00-\u9fff\u30a1-\u30fa\u30fc]{2,})(?:する|できる|させる)"
                       r"(?:ためには|には|方法|メソッド|関数|コマンド|マクロ)")
# "aren't inserting any", "not to sort", "cannot sort": what follows a negation is not done.
NEGATED = re.compile(r"(?:\b(?:can)?not|n[’']t|\bnever)\s+(?:\w+\s+)?\w+", re.I)
NEGATED_JA = r"(?:し|でき|され|させ)(?:ない|ません|ず)"
# "ベクタのgetメソッドは何型の値を返しますか？", "Which floating-point type…": a question for a type is answered by a
# sentence that names one, as "which option" is by an option: the sentence on what get does when the index is out of
# range ("…パニックすることなくNoneを返します", a value) ranked above the one that names Option<&T>. A type is named
# as code writes it: a generic ("Option<&T>", "Result<T, E>"), a path to a capitalized name ("io::Error"), a
# primitive's name ("i32", "usize", "bool", "String"), or a Latin name before 型 ("char型"). Not "What file types…"
# (kinds of a thing) or "What does the type annotation do?".
WANTS_TYPE = re.compile(r"何型|何という型|型は(?:何|なん|どれ)|どの型|どんな型"
                        r"|\b(?:what|which) (?:[\w-]+ ){0,2}type\b(?! (?:of|annotations?|system|inference|check)\b)"
                        r"|\bwhat is the (?:[\w-]+ )?type of\b", re.I)
TYPE = re.compile(r"(?<![A-Za-z0-9_])(?:[A-Za-z_][A-Za-z0-9_:<>&]*型|[A-Z][A-Za-z0-9_]*<[^<>]{1,40}"
                  r"(?:<[^<>]{1,40}>[^<>]{0,40})?>|(?:[A-Za-z0-9_]+::)+[A-Z][A-Za-z0-9_]*"
                  r"|[iuf](?:8|16|32|64|128|size)|bool|char|&?str|String)(?![A-Za-z0-9_])")
# "Which grep option…" is answered by an option ("-i", "--ignore-case"), as "how many" is by a number: a sentence
# on the topic that names none ("grep prints each line that matches a pattern", for lines in blue) answers nothing.
# Not the verb: "Which key flags the selected package to be purged?", "…switches the view?" ask for a key, as
# "…に完全削除のフラグを立てるキーは？" does.
WANTS_OPTION = re.compile(r"\b(which|what) (?:[\w.-]+ ){0,2}(?:option|flag|switch)(?:es|s)?\b"
                          r"(?! (?:the|a|an|this|that|these|those|each|every|all|its|their|it|them|to|between"
                          r"|on|off|from|into)\b)|オプション|フラグ(?!を立て|が立)", re.I)
OPTION = re.compile(r"(?:^|[\s(\[,'\"`])--?[A-Za-z0-9]")
OPTION_WORDS = frozenset(term_id(t) for t in tokenize("option options flag flags switch switches オプション フラグ"))
# What a thing is called, asked in Japanese: "…を何と呼びますか", "何といいますか", "…を何というか"; not "何という会社"
# or "何と言う名の人物", which ask for one of a kind.
_CALLED_JA = r"何と(?:呼|称|いい|(?:いう|言う)(?=か|の|ん|[?？。]|$))"
# A question that asks what something is called or named ("…を何というか", "What do people call…") is answered by
# the sentence that names it ("この区域を雑居地といい、…", "…と呼ばれます", "…are called Rustaceans"), a question type
# like numbers and commands. Not "what is returned when unwrap is called", "…ということです" or "a file named x.txt".
# Dev: JaQuAD facts 85.5% -> 86.3%, nothing else moved.
WANTS_NAME = re.compile(r"何と(?:いう|言う)|" + _CALLED_JA
                        + r"|(名前|名称|呼び名|あだ名)は(何|なん)(です|でしょう|か|[?？]|$)"
                        r"|\bwhat(?:'s| is| are| was| were) (?:[\w-]+ ){0,5}called\b[?？]?\s*$"
                        r"|\bwhat (?:do|does|did) (?:[\w-]+ ){1,6}call\b(?! (?:before|after|when|first))"
                        r"|\bwhat(?:'s| is) the name of\b", re.I)
# Such a question is answered only by a sentence that calls the thing something ("…はエラーの委譲として認知され",
# "地方名としてコメウツボ(和歌山県)"); "名前は何" asks for a name, which a sentence states without a naming phrase
# ("…を流れる川は十津川"). Japanese only: English says what a thing is called as often without a naming phrase as
# with one ("The Rust compiler is rustc."), and "what is returned when unwrap is called" asks nothing of the kind.
WANTS_CALLED = re.compile(_CALLED_JA)
NAMES = re.compile(r"と(呼ば|呼ん|呼ぶ|称|名付)|といい[、,]|という(?!こと|わけ|の|よう|点|意味)|として(?:認知|知られ)"
                   r"|地方名|別名|通称|異名|俗称|愛称|和名|学名|呼称"
                   r"|\b(?:is|are|was|were|be) (?:called|named|termed)\b(?! (?:when|on|with|by|from|if|for|to|in))"
                   r"|\bknown as\b|\bnicknamed?\b|\bcalls? (?:ourselves|themselves|itself)\b", re.I)


# "Who…" asks for a person: a document about one names them in its lead sentence.
WANTS_PERSON = re.compile(r"\b(who|whom)\b|誰|人物", re.I)


# "どの標準規格…", "which standard…": a question that asks which one of a kind is answered by a sentence that names
# one ("IEEE-754規格", "the IEEE-754 standard", "the build-essential package"): a name the question does not hold,
# written against the kind's word (the last two characters of a kanji compound: 規格 of 標準規格, 言語 of
# プログラミング言語; a katakana word whole). A Japanese name is in Latin script or digits, or in katakana before a
# kanji kind (a katakana word before a katakana kind is one compound: デフォルトパッケージ); an English one looks like
# an identifier (a digit, a hyphen, "::", capitals), so that "the default package" names none. A one-character kind
# (どの国) is not read: its character is in too many words.
_WANTS_KIND = re.compile(r"どの(?!よう|くらい|ぐらい|程度|辺|方)([\u4e00-\u9fff\u30a1-\u30fa\u30fc]{2,12})"
                         r"|\b(?:which|what) (?!(?:is|are|was|were|do|does|did|can|could|will|would|should|shall|may"
                         r"|might|must|has|have|had|happens?|kind|sort|type|types|the|an?|one|ones|if|about|else)\b)"
                         r"([a-z]{3,20})\b", re.I)
_KIND_TAIL = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}$|[\u4e00-\u9fff]{1,2}$")
_ID = r"[A-Za-z0-9_.+:<>&-]"  # ASCII: \w would run on through the Japanese text up to the kind's word
_EN_NAME = rf"{_ID}*(?:[0-9_:<>&-]|[A-Z]{{2}}){_ID}*"


def kind_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence names one of the kind a "which X" question asks for; None for other questions."""
    asked = _WANTS_KIND.search(query.text)
    if not asked:
        return None
    if asked.group(1):
        tail = _KIND_TAIL.search(asked.group(1))
        kind = tail.group(0) if tail else ""
        if len(kind) < 2:
            return None
        katakana = r"|[\u30a1-\u30fa\u30fc]{2,}" if "\u4e00" <= kind[0] <= "\u9fff" else ""
        named = re.compile(rf"([A-Za-z0-9]{_ID}*{katakana})\s?{re.escape(kind)}")
    else:
        named = re.compile(rf"(?<!{_ID})({_EN_NAME})\s(?i:{re.escape(asked.group(2))})\b")
    asked_text = normalize(query.text)
    return lambda text: any(normalize(m.group(1)) not in asked_text for m in named.finditer(text))


# "What does DFSG stand for?", "DFSG とは何ですか？": a question on an abbreviation is answered by the sentence that
# spells it out, which writes it in brackets after its words ("…are provided in The Debian Free Software Guidelines
# (DFSG)", "Debian フリーソフトウェアガイドライン (DFSG) で…"), as "how many" is by a number; a sentence that only uses
# it ("packages which are DFSG-free…") ranked first.
_ASKS_ABBREVIATION = re.compile(r"\b(?i:what (?:does|do|did) (?:the |an? )?)([A-Z][A-Z0-9]{1,7})s? stands? for\b"
                                r"|^\s*(?i:what (?:is|are) (?:an? |the )?)([A-Z][A-Z0-9]{1,7})s?\s*[?？]\s*$"
                                r"|(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,7})\s?(?:とは|って)\s?(?:何|なん)"
                                r"|(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,7})\s?は\s?(?:何|なん)の(?:略|頭字語)")


def expansion_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence spells out the abbreviation the question asks about; None for other questions."""
    asked = _ASKS_ABBREVIATION.search(unicodedata.normalize("NFKC", query.text))  # "ＤＦＳＧ" is "DFSG"
    if not asked:
        return None
    abbreviation = re.escape(next(group for group in asked.groups() if group))
    spelt = re.compile(rf"[^\s(（]\s?[(（]{abbreviation}[)）]|\b{abbreviation} (?:stands for|is short for)\b")
    return lambda text: bool(spelt.search(unicodedata.normalize("NFKC", text)))


# "Why did Corel sell its Linux division?", "なぜ…ですか？", "…の理由は？": a question for a reason is answered by a
# sentence that gives one, and a reason is mostly said as one: "because", "so that", "in order to", "to avoid", "the
# purpose of", "ため", "ので", "からです". A sentence that restates what the question asks about ("Corel sold its Linux
# division in the first quarter of 2001") gives no reason, as one that states no number says not how many. Not a
# question for a purpose ("What is the purpose of the debian/watch file?" is answered by what the file does) or a
# cause ("…が残っていない原因は何ですか": a cause is an event, named as what happened, "度島での火災で原稿が焼失");
# nor "なぜか" (somehow), "どうしても" (by all means), "返品理由の選択肢" or the command "aptitude why".
_WANTS_REASON = re.compile(r"^\s*why\b|(?<!aptitude )(?<!apt-cache )\bwhy (?:is|are|was|were|do|does|did|can|can't"
                           r"|cannot|should|shouldn't|would|must|has|have|not|isn't|aren't|doesn't|don't|didn't|won't"
                           r"|wasn't|weren't|hasn't|haven't|will|could|might|i|you|we|they|it|this|that|there|the|my"
                           r"|a|an)\b|\bhow come\b|\bis there a reason\b|\bfor what reason\b"
                           r"|\bwhat(?:'s|’s| is| was| are| were) the (?:main |primary )?(?:reasons?|rationale)"
                           r" (?:of|for|behind|that|why)\b"
                           r"|なぜ(?!か)|何故(?!か)|どうして(?!も|よい|いい|良い)|なんで(?!も)"
                           r"|(?:どういう|どんな|いかなる|何の)理由|理由(?:は|を(?:教|説明))", re.I)
# English causal and purpose connectives; "since" and "as" only where they open a clause ("since 1993", "such as",
# "as root" and "As you can see" give none), "so" only before one ("wide so this shouldn't be longer": "so many" is a
# quantity); "から" only after a verb or an adjective (東京から is "from Tokyo"), "ように" only after one (次のように is
# "as follows"), "結果" only as a consequence (検索結果 is a search's results), "目的" not as a destination.
_CLAUSE_VERB = (r"(?:(?:is|are|was|were|has|have|had|do|does|did|can|could|would|must|may|might|should)(?:n['’]t)?"
                r"|will|won['’]t|can['’]t)")
_REASON = re.compile(
    r"\b(?:because|due to(?! be)|owing to|thanks to(?! (?:all|everyone|the following))|on account of|caused by"
    r"|as a (?:result|consequence)|result(?:ed|ing)? in|in order (?:to|that)|so (?:that|as to)"
    r"|(?:the|its|their|main|whole) (?:purpose|aim|goal) (?:of|is|was|behind)|(?:the|its|their|main|whole) point"
    r" (?:is|was)|reasons? (?:for|why|behind|is|was)|this is why|that is why|that's why|which is why"
    r"|(?:for|with) (?:this|that|these|those|security|historical|performance|legal|practical|technical|compatibility)"
    r" (?:reasons?|purposes?)|therefore|thus(?! far)|hence|consequently"
    r"|(?<!unless )otherwise(?! (?:known|noted|specified|stated|indicated))|for compatibility"
    r"|to (?:avoid|prevent|ensure|make sure|protect|reduce|minimi[sz]e|guarantee)"
    r"|(?:makes?|made|making) it (?:\w+ )?(?:possible|impossible|easier|harder|difficult|simpler|safer)"
    r"|(?:^|[,;:(] ?)(?:since|as)(?! (?:of|you|we|i|shown|described|mentioned|noted|well|expected)\b)"
    r" (?:[\w'’-]+ ){1,6}" + _CLAUSE_VERB
    + r"|so (?:this|that|these|those|it|they|there|you|we|he|she|the|a|an|no|one|users?|people) (?:[\w'’-]+ ){0,3}"
    r"(?:" + _CLAUSE_VERB + r"|cannot|need|needs|gets?))\b"
    r"|(?<!あた)ため(?!の|し|ら)|(?<![もとど])ので(?!き|しょう)|[いるたうくすつぬむぶぐだ]から(?:[、。,]|です|でし|だ|では)"
    r"|ですから|ますから|ことから|ことによ(?:り|って)|理由(?!欄)|原因(?!不明)|目的(?:で|は|として)|を目的|せいで|おかげで"
    r"|(?:る|ない)ように(?:し|、)|を(?:避け|防ぐ|防ぎ|防止)|(?:その|この|の)結果(?:、|,|として)|結果(?:として|的に)",
    re.I | re.M)


def reason_evidence(query: Query) -> Callable[[str], bool] | None:
    """What tells a sentence gives a reason, for a question that asks why; None for other questions."""
    if not _WANTS_REASON.search(query.text):
        return None
    return lambda text: bool(_REASON.search(text))


# A name with a number in it ("UTF-16", "f32", "IPv6", "ext4", "E2"): a sentence that names the same name with
# another number ("UTF-32", "f64", "IPv4") and not the one asked about is about a sibling ("…coded to use UTF-32
# (UCS4) internally…, 4 bytes for each ASCII character", asked how many bytes UTF-16 uses). The asked name counts
# however it is written on: "UTF-16LE", "E02", "v2.0" for "v2". Not for a question answered yes or no ("Are the
# services offered over IPv6?" is answered by the sentence that says IPv4), nor one that asks about another version
# ("instead of SHA1", "upgrade from ext3"), nor for periods (Q1, H2, FY2024): a filing reports one against another.
_VARIANT = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z]{1,12})-?(\d+(?:\.\d+)?)(?![A-Za-z0-9_]|\.\d)")
_PERIOD = frozenset({"q", "h", "fy"})
_YES_NO = re.compile(r"^\s*(?:(?:hi|hello|ok|okay|so|and|but|also)\b[,!]?\s*)?(?:is|are|am|was|were|do|does|did|can"
                     r"|could|will|would|should|has|have|had|may|must|shall)(?:n['’]t)?\b|^\s*won['’]t\b"
                     r"|\bwhether\b", re.I)
# A Japanese question with no word that asks what, which, when, where, who, how or why is answered yes or no
# ("かどうか", "何か", "いつでも" ask none).
_ASKS_WHAT_JA = re.compile(r"何|なに|なん|どれ|どの|どこ|どう|どちら|どっち|どんな|いつ|いくつ|いくら|誰|だれ"
                           r"|なぜ")
_NOT_ASKING_JA = re.compile(r"かどうか|何か|何でも|なんでも|何とか|いつでも|いつか|どこか|どこでも|誰か|誰でも")
_OTHER_VERSION = re.compile(r"\b(?:instead|replac\w*|successor|predecessor|upgrad\w*|migrat\w*|convert\w*|vs\.?"
                            r"|versus|differ\w*|compar\w*|switch\w*)\b|代わり|置き換|置換|移行|変換|違い|比較"
                            r"|アップグレード", re.I)


def _variants(normalized: str) -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for name, number in _VARIANT.findall(normalized):
        if name.lower() not in _PERIOD:
            named.setdefault(name.lower(), set()).add(number)
    return named


def _without_leading_zeros(number: str) -> str:
    return re.escape(re.sub(r"^0+(?=\d)", "", number))


def _answered_yes_or_no(query: Query) -> bool:
    if query.lang == "ja":
        return not _ASKS_WHAT_JA.search(_NOT_ASKING_JA.sub("", query.text))
    return bool(_YES_NO.search(query.text))


def sibling_evidence(query: Query) -> Callable[[str], bool] | None:
    """For a question that names a name with a number, whether a sentence names only its siblings; None for other
    questions, for those answered yes or no and for those about another version."""
    asked = _variants(normalize(query.text))
    if not asked or _answered_yes_or_no(query) or _OTHER_VERSION.search(query.text):
        return None
    # The asked name as any text writes it: in any case, its number with leading zeros or a minor version after it
    # ("E02", "v2.0"), a suffix after it ("UTF-16LE", "sha256sum").
    held = [re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}-?0*(?:{'|'.join(map(_without_leading_zeros, numbers))})"
                       r"(?!\d)", re.I) for name, numbers in asked.items()]

    def names_a_sibling(text: str) -> bool:
        text = normalize(text)
        named = _variants(text)
        return any(name in named and not pattern.search(text)
                   for (name, _), pattern in zip(asked.items(), held, strict=True))

    return names_a_sibling
