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


def test_a_heading_or_a_mid_sentence_fragment_is_not_the_answer():
    # Issue 11: "how long is the patent license?" was answered with the heading "Grant of Patent License."
    # (Apache License 2.0, section 3), and chunk boundaries gave answers starting mid-sentence.
    from citerag.citations.extractive import pick_sentences
    from citerag.search.passage import Passage

    section = ("3. Grant of Patent License. Subject to the terms and conditions of this License, each Contributor "
               "hereby grants to You a perpetual, worldwide, non-exclusive, no-charge, royalty-free, irrevocable "
               "(except as stated in this section) patent license to make, have made, use, offer to sell, sell, "
               "import, and otherwise transfer the Work.")
    picked = pick_sentences("How long is the patent license?", [Passage(source_id="S1-aaaaaa", text=section)],
                            max_sentences=1)
    assert picked[0].sentence.startswith("Subject to the terms") and "perpetual" in picked[0].sentence
    fragment = ("ense granted under this License for that Work shall terminate as of the date such litigation is "
                "filed. The patent license terminates as of the date such litigation is filed.")
    picked = pick_sentences("When does the patent license terminate?",
                            [Passage(source_id="S1-aaaaaa", text=fragment)], max_sentences=1)
    assert picked[0].sentence.startswith("The patent license terminates")
