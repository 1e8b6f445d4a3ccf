"""Session history for the AgentCore agent: AgentCore Memory short-term events, or a process-local store for the
in-process runtime and tests. A turn is stored as one event holding the question (USER) and the shown answer
(ASSISTANT), never tool results or source ids: the next turn must search again to cite anything.

Contract (botocore bedrock-agentcore 2024-02-28): CreateEvent {memoryId, actorId, sessionId (1..100,
[a-zA-Z0-9][a-zA-Z0-9-_]*), eventTimestamp, payload[<=100 {conversational{content{text<=100,000}, role}}]};
ListEvents pages with nextToken (maxResults <= 100). The service lists newest first (aws/bedrock-agentcore-sdk-python
PR #97) and same-second events have no stable order (issue #63), so events are ordered here by (eventTimestamp,
eventId) whatever order a page arrives in.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from citerag.adapters.aws import describe_error
from citerag.errors import DependencyError

MAX_TEXT = 100_000
_SESSION = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{0,99}")
# botocore bedrock-agentcore 2024-02-28 shapes SessionId and ActorId (1..255).
_ACTOR = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_/-]*(?::[a-zA-Z0-9_/-]+)*[a-zA-Z0-9_/-]*")


def memory_session_id(session_id: str) -> str:
    """A runtime session id (33..256 characters) as a Memory session id (<= 100, [a-zA-Z0-9][a-zA-Z0-9-_]*): itself
    when it fits (uuid4 does), else a digest of it."""
    return session_id if _SESSION.fullmatch(session_id) else hashlib.sha256(session_id.encode()).hexdigest()


def memory_actor_id(actor: str) -> str:
    """An actor (tenant and user) as a Memory actor id: itself when it fits, else a digest of it."""
    return actor if len(actor) <= 255 and _ACTOR.fullmatch(actor) else "a" + hashlib.sha256(actor.encode()).hexdigest()


class LocalHistory:
    """Process-local turns (the in-process runtime, tests): lost when the process ends."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        self._lock = threading.Lock()

    def load(self, actor_id: str, session_id: str, turns: int) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._turns[(actor_id, session_id)][-turns:]) if turns > 0 else []

    def save(self, actor_id: str, session_id: str, question: str, answer: str) -> None:
        with self._lock:
            self._turns[(actor_id, session_id)].append((question, answer))


class MemoryHistory:
    """AgentCore Memory short-term events through the `bedrock-agentcore` data-plane client."""

    def __init__(self, client: Any, memory_id: str, max_events: int = 500) -> None:
        self._client = client
        self.memory_id = memory_id
        self.max_events = max_events

    def load(self, actor_id: str, session_id: str, turns: int) -> list[tuple[str, str]]:
        if turns <= 0:
            return []
        events: list[dict[str, Any]] = []
        token = None
        try:
            while len(events) < self.max_events:
                kwargs: dict[str, Any] = {"memoryId": self.memory_id, "actorId": memory_actor_id(actor_id),
                                          "sessionId": memory_session_id(session_id), "includePayloads": True,
                                          "maxResults": 100}
                if token:
                    kwargs["nextToken"] = token
                page = self._client.list_events(**kwargs)
                events.extend(page.get("events") or [])
                token = page.get("nextToken")
                if not token:
                    break
        except Exception as exc:
            raise DependencyError(f"session history could not be read ({describe_error(exc)})") from None
        events.sort(key=_order)
        pairs = [p for p in (_turn(e) for e in events) if p is not None]
        return pairs[-turns:]

    def save(self, actor_id: str, session_id: str, question: str, answer: str) -> None:
        try:
            self._client.create_event(
                memoryId=self.memory_id, actorId=memory_actor_id(actor_id), sessionId=memory_session_id(session_id),
                eventTimestamp=datetime.now(UTC),
                payload=[{"conversational": {"content": {"text": question[:MAX_TEXT] or " "}, "role": "USER"}},
                         {"conversational": {"content": {"text": answer[:MAX_TEXT] or " "}, "role": "ASSISTANT"}}])
        except Exception as exc:
            raise DependencyError(f"session history could not be saved ({describe_error(exc)})") from None


def _order(event: dict[str, Any]) -> tuple[float, str]:
    ts = event.get("eventTimestamp")
    when = ts.timestamp() if isinstance(ts, datetime) else float(ts) if isinstance(ts, (int, float)) else 0.0
    return when, str(event.get("eventId", ""))


def _turn(event: dict[str, Any]) -> tuple[str, str] | None:
    texts: dict[str, str] = {}
    for item in event.get("payload") or []:
        conv = item.get("conversational") if isinstance(item, dict) else None
        if isinstance(conv, dict) and conv.get("role") in ("USER", "ASSISTANT"):
            text = (conv.get("content") or {}).get("text")
            if isinstance(text, str):
                texts.setdefault(conv["role"], text)
    if "USER" in texts and "ASSISTANT" in texts:
        return texts["USER"], texts["ASSISTANT"]
    return None
