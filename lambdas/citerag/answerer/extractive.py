"""The embedded answerer: with no LLM offline, an answer is only sentences of the retrieved passages, each cited,
and a `Decision` says why it answers or refuses (docs/answers.md)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from citerag.answerer import question_kinds as kinds
from citerag.answerer import rules
from citerag.answerer.ranking import Candidate, Order, Similarity, does_what_asked, rank_sentences, rx, shows_code
from citerag.answerer.terms import content_terms, filler_ids, terms_of, unknown_words
from citerag.answerer.variants import variant_terms
from citerag.citations.decision import Decision, Reason, Weighed
from citerag.citations.statements import is_command_line
from citerag.documents.text import detect_language, is_cjk, normalize
from citerag.search.passage import Passage
from citerag.search.query import Query
from citerag.search.sparse import CorpusStats

ANSWER_MIN_SCORE = rules.number("answer_min_score")
UNKNOWN_WORD_MIN_SCORE = rules.number("unknown_word_min_score")
UNKNOWN_KANA_WORD_MIN_SCORE = rules.number("unknown_kana_word_min_score")
HELD_PASSAGE_MIN_SCORE = rules.number("held_passage_min_score")
COVERED_PASSAGE_MIN_SCORE = rules.number("covered_passage_min_score")
COVERED_PASSAGE_MIN_SHARE = rules.number("covered_passage_min_share")
RUNNER_UP_RATIO = rules.number("runner_up_ratio")
EXTEND_RATIO = rules.number("extend_ratio")
EXTEND_LOOK = rules.number("extend_look")
NAMED_MAX_SHARE = rules.number("named_max_share")
Threshold = float | Mapping[str, float]


def _for(threshold: Threshold, lang: str) -> float:
    return threshold if isinstance(threshold, int | float) else threshold.get(lang, threshold.get("en", 0.0))


@dataclass(frozen=True)
class Picked:
    source_id: str
    sentence: str
    score: float


def answer_language(question: str) -> str:
    return detect_language(question)


def _widened(candidates: list[Candidate]) -> Candidate:
    """The best candidate, or its pair with a neighbour within EXTEND_RATIO of its score: the sentence that matches
    the question often restates it, and the neighbour names what it asks for."""
    best = candidates[0]
    if best.pos != best.last or best.bonus > 0:
        return best
    related = {(c.rank, c.pos) for c in candidates if c.pos == c.last and c.lexical > 0}
    for c in candidates[1:EXTEND_LOOK]:
        neighbour = c.last if c.pos == best.pos else c.pos
        if c.rank == best.rank and c.pos <= best.pos <= c.last and c.last > c.pos \
                and c.score >= EXTEND_RATIO * best.score and (c.rank, neighbour) in related:
            return c
    return best


def _named_subject(query: Query, usable: list[Passage], candidates: list[Candidate],
                   picked: list[Candidate]) -> Candidate | None:
    """For "who", the best passage's lead sentence when it names the subject and the answer does not (an article
    names its person once)."""
    best = picked[0]
    title = normalize(usable[best.rank].title).strip()
    if len(title) < 2 or not kinds.wants_person(query) or any(title in normalize(c.text) for c in picked):
        return None
    return next((c for c in candidates if c.rank == best.rank and c.pos == c.last == 0
                 and _opens_with(normalize(c.text), title)), None)


def _opens_with(text: str, name: str) -> bool:
    """Whether the sentence opens with the name, in its full form (middle names) too."""
    parts = [p for p in rx("name_parts").split(name) if p]
    return text.startswith(name) or (len(parts) >= 2 and bool(
        rx("full_name", first=re.escape(parts[0]), last=re.escape(parts[-1])).match(text)))


def _names_command(line: str, title: str) -> bool:
    """A command alone on its line: a command's marks, or the document's own name ("aptitude update")."""
    if not is_command_line(line) or len(line.split()) < 2:
        return False
    name = line.lstrip("$# ").split()[0]
    return bool(rx("command_mark").search(line)) or name in normalize(title).split()


def _antecedent(best: Candidate, candidates: list[Candidate], title: str) -> Candidate | None:
    """The statement the best one points back to ("その場所", "It then…") unless scored down more (a heading,
    code); the command itself when the best says what "this command" does."""
    if best.pos == 0:
        return None
    before = [c for c in candidates if c.rank == best.rank and c.pos == c.last == best.pos - 1]
    if rx("points_at_code").match(best.text):
        command = next((c for c in before if shows_code(c.text) or _names_command(c.text, title)), None)
        if command is not None:
            return command
    return next((c for c in before if c.factor >= best.factor), None) if rx("refers_back").match(best.text) else None


def _follower(best: Candidate, candidates: list[Candidate]) -> Candidate | None:
    """The statement the best one leads into ("…mecabrc に以下を追加", "…上書きしたい場合は，"): what it announces
    is the fact, which it does not hold itself."""
    last = next((c for c in candidates if c.rank == best.rank and c.pos == c.last == best.last), None)
    if last is None or not rx("points_ahead").search(last.text.rstrip()):
        return None
    return next((c for c in candidates if c.rank == best.rank and c.pos == c.last == best.last + 1), None)


def _close_runners_up(candidates: list[Candidate], wanted: Callable[[Candidate], bool]) -> list[Candidate]:
    top = candidates[0].score
    return [c for c in candidates if c.score >= RUNNER_UP_RATIO * top and wanted(c)]


def _of_the_asked_kind(query: Query, candidates: list[Candidate]) -> list[Candidate]:
    if candidates and kinds.wants_type(query):
        # Else the best: a type is named in words too ("ユニット型").
        candidates = _close_runners_up(candidates, lambda c: kinds.names_type(c.text)) or candidates
    gives_reason = kinds.reason_evidence(query)
    if candidates and gives_reason is not None:
        # Only they, or none: the sentences that restate what is asked about share more of its words.
        candidates = _close_runners_up(candidates, lambda c: gives_reason(c.text))
    return candidates


def _with_runners_up(best: Candidate, candidates: list[Candidate], about: list[bool],
                     max_sentences: int) -> list[Candidate]:
    """The best candidate and those that score close to it, from passages about what the question names."""
    picked, top = [best], candidates[0]  # close to the best sentence, not to the pair `_widened` may show instead
    for c in candidates[1:]:
        if len(picked) >= max_sentences:
            break
        # Close by score (a learned order need not be by score) and by evidence, not by the title's terms alone; from a
        # passage about what the question names (find's "-iname" is not sort's, however close).
        if c.score < RUNNER_UP_RATIO * top.score or c.evidence < RUNNER_UP_RATIO * max(top.evidence, best.evidence) \
                or not about[c.rank]:
            continue
        # Not overlapping the answer, nor repeating a sentence another document words the same (two licences).
        if not any(_overlaps(c, o) or _repeats(c.text, o.text) for o in picked):
            picked.append(c)
    return picked


def _says_what_is_asked(query: Query, picked: list[Candidate]) -> bool:
    """False when the answer lacks what the question's kind needs: a number, the asked action, a name."""
    if kinds.asks_for_number(query) and not any(map(kinds.number_evidence(query), (c.text for c in picked))):
        return False
    does_it = does_what_asked(query)
    if does_it is not None and not any(does_it(c.text) for c in picked):
        # Refused, not narrowed to sentences that say the verb: further down they say it only in passing.
        return False
    return not kinds.wants_called(query) or any(kinds.names(c.text) for c in picked)


class Estimate(Protocol):  # answerability.LogisticGate: its estimate, and whether a refusal lists places to look
    def probability(self, features: Mapping[str, float]) -> float: ...
    def shows_places(self, lang: str, features: Mapping[str, float]) -> bool: ...


class Gate(Protocol):  # whether the answer the ranking found is given: (answered, probability, threshold)
    def judge(self, lang: str, features: Mapping[str, float]) -> tuple[bool, float | None, float | None]: ...


@dataclass(frozen=True)
class RuleGate:
    """The hand-set thresholds (`CITERAG_ANSWER_MIN_SCORE`, docs/answers.md "When it refuses")."""
    min_score: Threshold = 0.0
    unknown_word_min_score: Threshold | None = None
    # The floors when the answer's passage holds every word of the question, or most of its weight (None: the one
    # floor above; `rules_gate` gives rules/numbers.json's).
    held_passage_min_score: Threshold | None = None
    covered_passage_min_score: Threshold | None = None

    def judge(self, lang: str, features: Mapping[str, float]) -> tuple[bool, float | None, float | None]:
        floor = _for(self.min_score, lang)
        # A near miss asks for what the documents lack, mostly a word no passage of them holds: the more of the
        # question the answer's passage holds, the less evidence a sentence that says it in other words needs.
        if features.get("passage_lacks", 1.0) <= 0.0 and self.held_passage_min_score is not None:
            floor = min(floor, _for(self.held_passage_min_score, lang))
        elif features.get("passage_cover", 0.0) >= COVERED_PASSAGE_MIN_SHARE \
                and self.covered_passage_min_score is not None:
            floor = min(floor, _for(self.covered_passage_min_score, lang))
        latin = _for(UNKNOWN_WORD_MIN_SCORE if self.unknown_word_min_score is None else self.unknown_word_min_score,
                     lang)
        # Asked for code, a katakana word is a technical term, whose absence weighs as a Latin identifier's does.
        kana = latin if features["asks_code"] else UNKNOWN_KANA_WORD_MIN_SCORE
        unknown = max(latin if features["unknown_latin"] else 0.0, kana if features["unknown_kana"] else 0.0)
        answered = features["kind_found"] and features["evidence"] >= max(floor, unknown) and features["about"] \
            and features["says_asked"]
        return bool(answered), None, None


def rules_gate() -> RuleGate:
    """The default gate (`CITERAG_ANSWER_GATE=rules`): rules/numbers.json's floors."""
    return RuleGate(ANSWER_MIN_SCORE, held_passage_min_score=HELD_PASSAGE_MIN_SCORE,
                    covered_passage_min_score=COVERED_PASSAGE_MIN_SCORE)


def _missing(query: Query, stats: CorpusStats | None, texts: list[str]) -> tuple[float, float]:
    """(share of the question's term weight the texts hold, weight of its rarest term they lack / of its rarest):
    a near miss often differs from what the documents hold by one rare word ("on FreeBSD", "in version 3")."""
    terms = content_terms(query) - filler_ids()
    if not terms:
        return 1.0, 0.0
    weight = {t: stats.idf(t) if stats is not None and stats.n_docs else 1.0 for t in terms}
    held = set().union(*(terms_of(t, False) | variant_terms(query, t) for t in texts)) & terms
    lacking = [weight[t] for t in terms - held]
    return sum(weight[t] for t in held) / (sum(weight.values()) or 1.0), \
        (max(lacking) / max(weight.values())) if lacking else 0.0


def _index_share(query: Query, stats: CorpusStats | None, at_most: int) -> float:
    """Share of the question's content terms that at most `at_most` passages of the index hold: a question on another
    subject names things the documents never mention (0, `index_lacks`) or mention once in passing (1, `index_rare`),
    a near miss mostly what they do."""
    terms = content_terms(query) - filler_ids()
    if not terms or stats is None or not stats.n_docs:
        return 0.0
    return sum(stats.df.get(t, 0) <= at_most for t in terms) / len(terms)


def _features(query: Query, stats: CorpusStats | None, candidates: list[Candidate], best: Candidate,
              picked: list[Candidate], about: bool, kind_found: bool, passage: Passage) -> dict[str, float]:
    """What the answerability model reads (docs/answers.md "When it refuses")."""
    top = candidates[0]
    # The rules' floor was set on the best-scored sentence: a learned order may put first one that scores lower.
    matched = min(candidates, key=lambda c: (-c.score, c.rank, c.pos)).evidence
    sentence_cover, sentence_lacks = _missing(query, stats, [top.text, passage.section or "", passage.title])
    passage_cover, passage_lacks = _missing(query, stats, [passage.text, passage.section or "", passage.title])
    unknown = unknown_words(query, stats)
    runner = next((c.score for c in candidates[1:] if not _overlaps(c, top)), 0.0)
    ja = 1.0 if query.lang == "ja" else 0.0
    return {
        "evidence": matched, "score": top.score, "cosine": top.similarity, "lexical": top.lexical,
        "factor": top.factor, "bonus": top.bonus, "margin": top.score - runner,
        "unknown_latin": float(sum(w.isascii() for w in unknown)),
        "unknown_kana": float(sum(not w.isascii() for w in unknown)),
        "asks_code": float(bool(rx("asks_for_code").search(query.text))),
        "about": float(about), "kind_found": float(kind_found),
        "says_asked": float(_says_what_is_asked(query, picked)),
        "asks_number": float(kinds.asks_for_number(query)), "pair": float(best.pos != best.last),
        "ja": ja, "ja_evidence": ja * matched, "ja_cosine": ja * top.similarity,
        "sentence_cover": sentence_cover, "sentence_lacks": sentence_lacks,
        "passage_cover": passage_cover, "passage_lacks": passage_lacks,
        "index_lacks": _index_share(query, stats, 0), "index_rare": _index_share(query, stats, 1),
    }


def _weighed(usable: list[Passage], candidates: list[Candidate], chosen: Mapping[tuple[int, int], str],
             n: int = 5) -> list[Weighed]:
    shown = list(candidates[:n]) + [c for c in candidates[n:] if (c.rank, c.pos) in chosen]
    return [Weighed(source_id=usable[c.rank].source_id or "", text=c.text[:500], score=c.score, lexical=c.lexical,
                    cosine=c.similarity, chosen_by=chosen.get((c.rank, c.pos), "")) for c in shown]


def decide(question: str | Query, passages: list[Passage], stats: CorpusStats | None = None, *,
           similarity: Similarity | None = None, gate: Gate | None = None, estimate: Estimate | None = None,
           max_sentences: int = 2, max_passages: int = 5, order: Order | None = None,
           reach: Mapping[str, float] | None = None) -> tuple[list[Picked], Decision]:
    """Up to `max_sentences` sentences that answer the question and the Decision that says why, or why none.
    Without a gate every question is answered by its best sentences, and no rule of its kind narrows them.
    `reach`: how the question's best passage stands out from the whole index (`reach.index_reach`), when known."""
    query, usable, candidates = rank_sentences(question, passages, stats, similarity=similarity,
                                               max_passages=max_passages, order=order)
    if not usable:
        return [], Decision(answered=False, reason=Reason.NO_RELEVANT_PASSAGE,
                            detail="search found no passage relevant to the question")
    if not candidates:
        return [], Decision(answered=False, reason=Reason.NO_STATEMENT,
                            detail="no sentence of the passages holds a term of the question")
    narrowed = _of_the_asked_kind(query, candidates) if gate is not None else candidates
    kind_found = bool(narrowed)
    candidates = narrowed or candidates
    best = _widened(candidates)
    # Per passage, once: whether it holds what the question names (a passage in another language lends no title when
    # sources in the question's own exist) and quotes.
    named = _named_words(query, [p for p in usable if p.lang == query.lang] or usable, stats)
    quoted = _quoted(query)
    about = [_mentions(p, named, query) and _quotes(p, quoted, query.lang) for p in usable]
    picked = _with_runners_up(best, candidates, about, max_sentences)
    chosen = {(c.rank, c.pos): f"runner-up within {RUNNER_UP_RATIO:.0%} of the best score" for c in picked[1:]}
    first = "best score" if order is None else "first in the learned order"
    chosen[(best.rank, best.pos)] = first if best is candidates[0] else "pair with a neighbour"
    lead = _named_subject(query, usable, candidates, picked) if max_sentences > 1 else None
    if lead is not None:  # with the best sentence, which the lead alone would not show
        picked = [lead, *picked[: max_sentences - 1]]
        chosen[(lead.rank, lead.pos)] = "lead sentence naming the subject (who)"
    features = _features(query, stats, candidates, best, picked, about[best.rank], kind_found,
                         usable[candidates[0].rank]) | dict(reach or {})
    answered, probability, threshold = gate.judge(query.lang, features) if gate is not None else (True, None, None)
    if probability is None and estimate is not None:  # the model's estimate, said beside the rules' decision
        probability = round(estimate.probability(features), 4)
    decision = Decision(answered=answered, probability=probability, threshold=threshold, features=features,
                        weighed=_weighed(usable, candidates, chosen))
    if not answered:
        why = "the best sentence is unlikely to hold the fact" if threshold is not None else \
            "the best sentence does not reach the rules' threshold, or lacks what the question names or asks for"
        # Places to look only when the documents are on the question's subject: one on another subject lists none.
        places = estimate is None or estimate.shows_places(query.lang, features)
        return [], decision.model_copy(update={"reason": Reason.NOT_ANSWERABLE, "detail": why, "places": places})
    antecedent = _antecedent(best, candidates, usable[best.rank].title) if best in picked else None
    if antecedent is not None and not any(_overlaps(antecedent, o) for o in picked):
        # Added after the gate, beyond max_sentences: it makes the best sentence readable and answers nothing.
        picked.append(antecedent)
        chosen[(antecedent.rank, antecedent.pos)] = "the sentence the best one points back to"
        decision = decision.model_copy(update={"weighed": _weighed(usable, candidates, chosen)})
    follower = _follower(best, candidates) if best in picked else None
    if follower is not None and not any(o.rank == follower.rank and o.pos <= follower.pos <= o.last for o in picked):
        # Added after the gate too: the gate weighed the sentence that matches the question, not what it announces.
        picked.append(follower)
        chosen[(follower.rank, follower.pos)] = "the sentence the best one leads into"
        decision = decision.model_copy(update={"weighed": _weighed(usable, candidates, chosen)})
    # Read in document order: by passage rank, then position within the passage.
    picked.sort(key=lambda c: (c.rank, c.pos))
    return [Picked(usable[c.rank].source_id, c.text, c.score) for c in picked], decision


def pick_sentences(question: str | Query, passages: list[Passage], stats: CorpusStats | None = None, *,
                   similarity: Similarity | None = None, min_score: Threshold = 0.0,
                   unknown_word_min_score: Threshold | None = None, max_sentences: int = 2,
                   max_passages: int = 5) -> list[Picked]:
    """`decide` with the hand-set thresholds; with a `min_score` of 0, no gate."""
    gated = any(v > 0 for v in ([min_score] if isinstance(min_score, int | float) else min_score.values()))
    gate = RuleGate(min_score, unknown_word_min_score) if gated else None
    return decide(question, passages, stats, similarity=similarity, gate=gate, max_sentences=max_sentences,
                  max_passages=max_passages)[0]


def _named_words(query: Query, usable: list[Passage], stats: CorpusStats | None) -> set[int]:
    """The documents a question names: words of a found document's title, rare in the index ("sqlite3")."""
    asked = content_terms(query) - filler_ids()
    named = {t for p in usable for t in terms_of(p.title, False) & asked}
    if stats is not None and stats.n_docs:
        named = {t for t in named if stats.df.get(t, 0) <= NAMED_MAX_SHARE * stats.n_docs}
    return named


def _mentions(passage: Passage, named: set[int], query: Query) -> bool:
    """False when the question names a document and the passage holds none of its words (sqlite3's port: not ssh's)."""
    text = f"{passage.title} {passage.section or ''} {passage.text}"
    return not named or bool(named & (terms_of(text, False) | variant_terms(query, text)))


def _squashed(text: str) -> str:
    return "".join(normalize(text).split())


def _quoted(query: Query) -> list[str]:
    return [_squashed(name) for name in (*rx("quoted").findall(query.text), *rx("long_option").findall(query.text))]


def _quotes(passage: Passage, quoted: list[str], lang: str) -> bool:
    """Whether the passage holds every name the question quotes; in another language, every name in Latin script
    (「TurtleBot」), as a Japanese title (『失われた時を求めて』) is translated in an English document."""
    held = [name for name in quoted if passage.lang == lang or name.isascii()]
    text = _squashed(f"{passage.title} {passage.section or ''} {passage.text}") if held else ""
    return all(name in text for name in held)


def _overlaps(a: Candidate, b: Candidate) -> bool:
    return a.rank == b.rank and a.pos <= b.last and b.pos <= a.last


def _repeats(a: str, b: str) -> bool:
    """Whether either statement holds all of the other, word for word (case counts: "-n" and "-N" are two options);
    Japanese, which spaces no words, character for character."""
    a, b = " ".join(a.split()), " ".join(b.split())
    short, long = sorted((a, b), key=len)
    return f" {short} " in f" {long} " or (bool(short) and is_cjk(short[0]) and short in long)


@dataclass
class Answering:
    """Built once by Components and shared by every offline model and the search-only answerer."""
    similarity: Similarity | None = None
    stats: Callable[[], CorpusStats | None] | None = None
    gate: Gate | None = None  # None: every question answered by its best sentences
    estimate: Estimate | None = None  # the answerability model: said in each decision, and whether to list places
    order: Order | None = None  # None: the hand ranking's order
    # The question's text to how its best passage stands out from the index (`reach.index_reach`; {} when unknown).
    reach: Callable[[str], Mapping[str, float]] | None = None
    # Told of every question and its passages: `bench-answers` says where a wrong answer's fact was.
    observer: Callable[[str | Query, list[Passage]], None] | None = None
    # Per thread: serve answers requests side by side.
    _latest: threading.local = field(default_factory=threading.local, repr=False)
    # Whichever thread decided: for a caller that runs one turn at a time and whose agent decides in a worker thread.
    newest: Decision | None = field(default=None, repr=False)

    @property
    def last(self) -> Decision | None:
        return getattr(self._latest, "decision", None)

    @last.setter
    def last(self, decision: Decision | None) -> None:
        self._latest.decision = decision

    def _stats(self) -> CorpusStats | None:
        try:
            return self.stats() if self.stats is not None else None
        except Exception:  # IDF weights refine the choice; without them every term weighs the same
            return None

    def _reach(self, question: str | Query, passages: list[Passage]) -> Mapping[str, float] | None:
        if self.reach is None or not passages:
            return None
        try:
            return self.reach(question.text if isinstance(question, Query) else question)
        except Exception:  # it refines whether a refusal lists places; without it the estimate reads it as typical
            return None

    def decide(self, question: str | Query, passages: list[Passage]) -> tuple[list[Picked], Decision]:
        if self.observer is not None:
            self.observer(question, passages)
        picked, self.last = decide(question, passages, self._stats(), similarity=self.similarity, gate=self.gate,
                                   estimate=self.estimate, order=self.order, reach=self._reach(question, passages))
        self.newest = self.last
        return picked, self.last

    def pick(self, question: str | Query, passages: list[Passage]) -> list[Picked]:
        return self.decide(question, passages)[0]

    def candidates(self, question: str | Query, passages: list[Passage]) -> list[Candidate]:
        """Every sentence `pick` weighs for the question, best first, scored as `pick` scores them."""
        return rank_sentences(question, passages, self._stats(), similarity=self.similarity, order=self.order)[2]
