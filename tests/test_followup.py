"""Follow-up questions rewritten from the conversation: the offline rule on English and Japanese, the subject
carried through a chain of follow-ups, and the configured model's rewrite through the chat-model port (a scripted
model that answers as a model would: text in ModelOutput), with the rule when its reply is unusable or it fails."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from citerag.citations.chat import ModelOutput, messages_of
from citerag.citations.followup import Turn, rewrite, rewrite_with_model
from citerag.cli.chat import _rewriter
from citerag.errors import DependencyError


def conversation(*questions: str) -> list[Turn]:
    turns: list[Turn] = []
    for q in questions:
        turns.append(rewrite(q, turns))
    return turns


@pytest.mark.parametrize(("first", "second", "asked"), [
    ("What does error E2 mean?", "How do I clean it?", "How do I clean it (error E2)?"),
    ("How long is the warranty?", "Are filters covered by it?", "Are filters covered by it (warranty)?"),
    ("What is the rated power in Turbo mode?", "And in Sleep mode?", "And in Sleep mode (rated power Turbo mode)?"),
    ("エラーE2はどういう意味ですか？", "それはどうやって掃除しますか？", "エラーE2はどうやって掃除しますか？"),
    ("おやすみモードとは何ですか？", "その運転音は？", "おやすみモードの運転音は？"),
    ("チャイルドロックはどうやってかけますか？", "解除するには？", "チャイルドロックについて、解除するには？"),
])
def test_a_follow_up_gets_the_subject_of_the_question_before(first, second, asked):
    assert conversation(first, second)[-1].question == asked


@pytest.mark.parametrize(("first", "second"), [
    ("What does error E2 mean?", "How long is the warranty?"),  # a subject of its own
    ("What does error E2 mean?", "What does error E2 look like?"),  # already names it
    ("エラーE2はどういう意味ですか？", "保証期間はどのくらいですか？"),
])
def test_a_question_with_its_own_subject_is_asked_as_typed(first, second):
    assert conversation(first, second)[-1].question == second


def test_the_first_question_and_an_overlong_one_are_never_rewritten():
    assert rewrite("How do I clean it?", []).question == "How do I clean it?"
    long = "What about it " + "x " * 1200
    assert rewrite(long, conversation("What does error E2 mean?")).question == " ".join(long.split())


def test_a_chain_of_follow_ups_keeps_the_first_subject():
    turns = conversation("What does error E2 mean?", "How do I clean it?", "How often should I do that?")
    assert turns[-1].question == "How often should I do that (error E2)?"


class ScriptedModel:
    """A chat model that replies with set text and keeps the prompts it was given."""

    model_id = "anthropic.claude-test"

    def __init__(self, reply: str | Exception) -> None:
        self.reply, self.prompts = reply, []

    def complete(self, prompt, *, prompt_type, stop_sequences, max_tokens, temperature):
        self.prompts.append(prompt)
        if isinstance(self.reply, Exception):
            raise self.reply
        return ModelOutput(text=self.reply, input_tokens=10, output_tokens=5)


def test_the_model_rewrites_from_the_questions_and_answers_before():
    turns = [Turn(question="What does error E2 mean?", subject="error E2",
                  answer="Error E2 means the air quality sensor is dirty.")]
    model = ScriptedModel("How do I clean the E2 sensor?")
    assert rewrite_with_model(model, "How do I clean it?", turns).question == "How do I clean the E2 sensor?"
    system, user, _ = messages_of(model.prompts[0])
    assert "rewrite" in system.lower()
    assert "What does error E2 mean?" in user and "air quality sensor is dirty" in user
    assert "<question>How do I clean it?</question>" in user


@pytest.mark.parametrize("reply", ["", "Sure! Here it is:\nHow do I clean the E2 sensor?", "x" * 3000])
def test_an_unusable_model_reply_leaves_the_rule_s_rewrite(reply):
    turns = conversation("What does error E2 mean?")
    turn = rewrite_with_model(ScriptedModel(reply), "How do I clean it?", turns)
    assert turn.question == "How do I clean it (error E2)?"


def test_chat_uses_the_configured_model_and_the_rule_when_it_fails_or_there_is_none():
    from citerag.answerers import OFFLINE

    turns = conversation("What does error E2 mean?")
    model = ScriptedModel("How do I clean the E2 sensor?")
    assert _rewriter(SimpleNamespace(chat_model=model))("How do I clean it?", turns).question == \
        "How do I clean the E2 sensor?"
    failing = ScriptedModel(DependencyError("the model anthropic.claude-test failed: throttled"))
    assert _rewriter(SimpleNamespace(chat_model=failing))("How do I clean it?", turns).question == \
        "How do I clean it (error E2)?"
    offline = ScriptedModel("never asked")
    offline.model_id = OFFLINE
    assert _rewriter(SimpleNamespace(chat_model=offline))("How do I clean it?", turns).question == \
        "How do I clean it (error E2)?" and offline.prompts == []
