from __future__ import annotations

from citerag.agent.extractive import Passage, pick_sentences


def test_answers_are_verbatim_sentences_from_relevant_passages():
    passages = [
        Passage("S1", "Unrelated intro. Replace the HEPA filter every 12 months. Clean the pre-filter.", "en"),
        Passage("S2", "The warranty lasts two years.", "en"),
    ]
    picked = pick_sentences("How often should I replace the HEPA filter?", passages)
    assert picked[0].source_id == "S1"
    assert picked[0].sentence == "Replace the HEPA filter every 12 months."
    assert all(p.sentence in next(x.text for x in passages if x.source_id == p.source_id) for p in picked)


def test_question_sentences_are_never_used_as_answers():
    passages = [Passage("S1", "How often should I replace the HEPA filter?\nEvery 12 months, replace it.", "en")]
    picked = pick_sentences("How often should I replace the HEPA filter?", passages)
    assert [p.sentence for p in picked] == ["Every 12 months, replace it."]


def test_prefers_sources_in_the_language_of_the_question():
    passages = [
        Passage("S1", "Replace the HEPA filter every 12 months.", "en"),
        Passage("S2", "HEPAフィルターは12か月ごとに交換してください。", "ja"),
    ]
    picked = pick_sentences("HEPAフィルターの交換時期は？", passages)
    assert [p.source_id for p in picked] == ["S2"]


def test_nothing_relevant_gives_no_sentences():
    assert pick_sentences("anything", [Passage("S1", "text here.", "en", relevant=False)]) == []
