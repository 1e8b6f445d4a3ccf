from __future__ import annotations

from citerag.citations.extractive import pick_sentences
from citerag.search.passage import Passage


def test_answers_are_verbatim_sentences_from_relevant_passages():
    passages = [
        Passage(source_id="S1", lang="en",
                text="Unrelated intro. Replace the HEPA filter every 12 months. Clean the pre-filter."),
        Passage(source_id="S2", text="The warranty lasts two years.", lang="en"),
    ]
    picked = pick_sentences("How often should I replace the HEPA filter?", passages)
    assert picked[0].source_id == "S1"
    assert picked[0].sentence == "Replace the HEPA filter every 12 months."
    assert all(p.sentence in next(x.text for x in passages if x.source_id == p.source_id) for p in picked)


def test_question_sentences_are_never_used_as_answers():
    passages = [Passage(source_id="S1", lang="en",
                        text="How often should I replace the HEPA filter?\nEvery 12 months, replace it.")]
    picked = pick_sentences("How often should I replace the HEPA filter?", passages)
    assert [p.sentence for p in picked] == ["Every 12 months, replace it."]


def test_prefers_sources_in_the_language_of_the_question():
    passages = [
        Passage(source_id="S1", text="Replace the HEPA filter every 12 months.", lang="en"),
        Passage(source_id="S2", text="HEPAフィルターは12か月ごとに交換してください。", lang="ja"),
    ]
    picked = pick_sentences("HEPAフィルターの交換時期は？", passages)
    assert [p.source_id for p in picked] == ["S2"]


def test_nothing_relevant_gives_no_sentences():
    assert pick_sentences("anything", [Passage(source_id="S1", text="text here.", lang="en", relevant=False)]) == []
