"""Why an answer says what it says: the sentences weighed, what chose each one, and for a refusal its named reason.
Readers (`ask --explain`, `serve`, `bench-answers`) read the reason, never the answer's wording."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, model_validator


class Reason(StrEnum):
    """Why nothing was answered. Each is something a user can act on (README "Answers and citations")."""

    NO_RELEVANT_PASSAGE = "no_relevant_passage"  # search found nothing on the question's topic
    OTHER_LANGUAGE = "other_language"  # what search found is all in the other language
    NO_STATEMENT = "no_statement"  # the passages hold no sentence that shares a term with the question
    NOT_ANSWERABLE = "not_answerable"  # the answerability model: the best sentence is unlikely to hold the fact
    SEARCH_UNAVAILABLE = "search_unavailable"  # the search failed (a dependency is down)
    BLOCKED = "blocked"  # the input was refused before any search (harmful or an instruction override)


# What each reason tells the user, when the decision says nothing more specific.
DETAILS = {
    Reason.NO_RELEVANT_PASSAGE: "search found no passage on the question's topic",
    Reason.OTHER_LANGUAGE: "the passages search found are in the other language; ask in theirs",
    Reason.NO_STATEMENT: "no sentence of the passages holds a term of the question",
    Reason.NOT_ANSWERABLE: "the best sentence is unlikely to hold the fact asked for",
    Reason.SEARCH_UNAVAILABLE: "document search failed; try again later",
    Reason.BLOCKED: "the question was refused before any search",
}


class Weighed(BaseModel):
    """One sentence (or a pair of neighbours) the answerer weighed, as it scored it."""

    source_id: str
    text: str
    score: float
    lexical: float = Field(description="IDF-weighted share of the question's terms it holds")
    cosine: float = Field(description="the embedded model's cosine to the question (0 without a model)")
    chosen_by: str = Field("", description="the rule or score that put it in the answer; '' when not chosen")


class Decision(BaseModel):
    """What the answerer decided and why. `probability` is the answerability model's estimate that the best
    sentence holds the fact; the answer is given when it reaches `threshold`."""

    answered: bool
    reason: Reason | None = None
    detail: str = ""
    probability: float | None = None
    threshold: float | None = None
    features: dict[str, float] = Field(default_factory=dict)
    places: bool = Field(True, description="a refusal lists the places search found (False: the documents are "
                                           "not on the question's subject)")
    weighed: list[Weighed] = Field(default_factory=list, description="the best-scored sentences, best first")
    by: str = Field("citerag/extractive", description="what decided: the offline answerer or a model's id")

    @model_validator(mode="after")
    def _said(self) -> Decision:
        if self.reason is not None and not self.detail:
            self.detail = DETAILS[self.reason]
        return self
