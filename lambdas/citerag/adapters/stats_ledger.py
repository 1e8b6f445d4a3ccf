"""BM25 corpus statistics with many writers: each document's contribution lives in DynamoDB, every change of it is
written as a delta in the same transaction, and one small scheduled step folds the deltas into the statistics
object the search side reads (`citerag/stats/<ns>.json`, the path S3DocumentStore has always read).

Why this shape, not counters per term: a document touches thousands of terms; atomic counters would cost a write per
term per document, hot terms would contend, and a retried or killed writer could count a term twice. Here a
document's change is one conditional transaction (its state moves from sequence n to n+1, and the delta n+1 appears)
whatever its vocabulary, so:
- retries and duplicates are harmless: a transition whose state is already there is a no-op (same contribution), and
  a stale one fails its condition and is planned again from the state that won;
- a killed writer leaves either the old state and no delta, or the new state and its delta, never half;
- the fold is exactly once: the statistics object names the deltas it folded last and is replaced only if unchanged
  since it was read (S3 conditional writes, If-Match / If-None-Match), and the deltas it names are deleted before the
  next fold reads any (DynamoDB strongly consistent queries on the table).

Table layout (partition key `pk`, sort key `sk`, both strings):
- `doc#<ns>#<doc_id>` / `state`: {seq, n, len, parts}; `doc#<ns>#<doc_id>` / `part#<i>`: the document frequency
  contribution, packed;
- `delta#<ns>#<shard>` / `<doc_id>#<seq>#<part>`: {n, len, df (packed)} of one transition (first part holds n, len).
DynamoDB limits honoured: items <= 400 KB (a part holds at most PART_TERMS terms, 8 bytes each before zlib), and
TransactWriteItems <= 100 items and 4 MB (a document with more distinct terms than MAX_TERMS is refused whole)
(docs amazondynamodb ServiceQuotas "Item size" and "Transactions"; botocore dynamodb TransactWriteItems).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citerag.adapters.aws import error_code
from citerag.errors import DependencyError, DocumentError

PART_TERMS = 40_000  # 320 KB unpacked: one item stays under DynamoDB's 400 KB even if zlib gains nothing
MAX_PARTS = 48  # state parts + delta parts + the state item <= 100 items in one transaction
MAX_TERMS = PART_TERMS * MAX_PARTS // 2
MAX_PLAN_ATTEMPTS = 20  # transitions lost to other writers of the same document before giving up for a retry
FOLD_LIMIT = 2000  # deltas one fold takes (their keys are listed in the statistics object)


@dataclass(frozen=True)
class Contribution:
    """What one document adds to the corpus statistics: its records, their total length, and per term the number
    of its records holding it."""

    n: int = 0
    length: int = 0
    df: dict[int, int] = field(default_factory=dict)

    def minus(self, other: Contribution) -> Contribution:
        df = dict(self.df)
        for t, c in other.df.items():
            left = df.get(t, 0) - c
            if left:
                df[t] = left
            else:
                df.pop(t, None)
        return Contribution(self.n - other.n, self.length - other.length, df)


def pack(df: dict[int, int]) -> list[bytes]:
    """The contribution's terms in parts: zlib of little-endian uint32 ids, then int32 counts."""
    items = sorted(df.items())
    parts = []
    for start in range(0, len(items), PART_TERMS):
        chunk = np.asarray(items[start : start + PART_TERMS], dtype=np.int64)
        raw = chunk[:, 0].astype("<u4").tobytes() + chunk[:, 1].astype("<i4").tobytes()
        parts.append(zlib.compress(raw, 6))
    return parts


def unpack(parts: list[bytes]) -> dict[int, int]:
    out: dict[int, int] = {}
    for blob in parts:
        raw = zlib.decompress(blob)
        half = len(raw) // 2
        ids, counts = np.frombuffer(raw[:half], "<u4"), np.frombuffer(raw[half:], "<i4")
        for t, c in zip(ids.tolist(), counts.tolist(), strict=True):
            out[t] = out.get(t, 0) + c
    return out


@dataclass(frozen=True)
class Plan:
    """One transition of a document's state, read but not yet written."""

    namespace: str
    doc_id: str
    seq: int  # the state's sequence as read (0: no state yet)
    old_parts: int
    new: Contribution
    delta: Contribution


class StatsConflict(Exception):
    """The statistics object changed since it was read: another fold won."""


def _ns(namespace: str) -> str:
    return namespace or "__default__"


class DynamoStatsLedger:
    def __init__(self, client: Any, table: str, *, shards: int = 16) -> None:
        self.db = client
        self.table = table
        self.shards = max(1, shards)

    # --- writers ------------------------------------------------------------------------------------------

    def record(self, namespace: str, doc_id: str, new: Contribution | None,
               before: Contribution | None = None) -> bool:
        """Make `new` (None: the document is gone) the document's contribution, with its delta. `before` is what
        the document contributed before this table kept it (its manifest's), used only when it has no state yet.
        True when a transition was written, False when the state already was `new`."""
        for _ in range(MAX_PLAN_ATTEMPTS):
            plan = self.plan(namespace, doc_id, new, before)
            if plan is None:
                return False
            if self.commit(plan):
                return True
        raise DependencyError(f"statistics of {doc_id} kept changing under this writer; retrying later")

    def plan(self, namespace: str, doc_id: str, new: Contribution | None,
             before: Contribution | None = None) -> Plan | None:
        target = new or Contribution()
        if len(target.df) > MAX_TERMS:
            raise DocumentError(f"the document has {len(target.df):,} distinct terms; the statistics store takes "
                                f"{MAX_TERMS:,}: split it into smaller files")
        pk = self._doc_pk(namespace, doc_id)
        try:
            got = self.db.get_item(TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": "state"}},
                                   ConsistentRead=True).get("Item")
            if got is None:
                seq, parts, old = 0, 0, before or Contribution()
            else:
                seq, parts = int(got["seq"]["N"]), int(got["parts"]["N"])
                old = Contribution(int(got["n"]["N"]), int(got["len"]["N"]), self._read_parts(pk, parts))
        except DependencyError:
            raise
        except Exception as exc:
            raise DependencyError(f"cannot read the statistics of {doc_id}: {error_code(exc)}") from None
        if old == target:
            return None
        return Plan(namespace, doc_id, seq, parts, target, target.minus(old))

    def commit(self, plan: Plan) -> bool:
        """Write the plan's transition if the state is still the one it read. False: another writer moved it."""
        pk = self._doc_pk(plan.namespace, plan.doc_id)
        new_parts = pack(plan.new.df)
        delta_parts = pack(plan.delta.df) or [zlib.compress(b"")]
        seq = plan.seq + 1
        state = {"pk": {"S": pk}, "sk": {"S": "state"}, "seq": {"N": str(seq)}, "n": {"N": str(plan.new.n)},
                 "len": {"N": str(plan.new.length)}, "parts": {"N": str(len(new_parts))}}
        cond: dict[str, Any] = ({"ConditionExpression": "attribute_not_exists(pk)"} if plan.seq == 0 else
                                {"ConditionExpression": "seq = :seq",
                                 "ExpressionAttributeValues": {":seq": {"N": str(plan.seq)}}})
        items: list[dict[str, Any]] = [{"Put": {"TableName": self.table, "Item": state, **cond}}]
        for i, blob in enumerate(new_parts):
            items.append({"Put": {"TableName": self.table,
                                  "Item": {"pk": {"S": pk}, "sk": {"S": f"part#{i:03d}"}, "df": {"B": blob}}}})
        for i in range(len(new_parts), plan.old_parts):
            items.append({"Delete": {"TableName": self.table, "Key": {"pk": {"S": pk}, "sk": {"S": f"part#{i:03d}"}}}})
        dpk = self._delta_pk(plan.namespace, plan.doc_id)
        for i, blob in enumerate(delta_parts):
            item = {"pk": {"S": dpk}, "sk": {"S": f"{plan.doc_id}#{seq:012d}#{i:03d}"}, "df": {"B": blob}}
            if i == 0:
                item |= {"n": {"N": str(plan.delta.n)}, "len": {"N": str(plan.delta.length)},
                         "parts": {"N": str(len(delta_parts))}}
            items.append({"Put": {"TableName": self.table, "Item": item,
                                  "ConditionExpression": "attribute_not_exists(pk)"}})
        try:
            self.db.transact_write_items(TransactItems=items)
        except Exception as exc:
            if error_code(exc) == "TransactionCanceledException" and _condition_failed(exc):
                return False
            raise DependencyError(f"cannot write the statistics of {plan.doc_id}: {error_code(exc)}") from None
        return True

    def _read_parts(self, pk: str, parts: int) -> dict[int, int]:
        if not parts:
            return {}
        blobs: dict[str, bytes] = {}
        kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True,
                                  "KeyConditionExpression": "pk = :pk AND begins_with(sk, :p)",
                                  "ExpressionAttributeValues": {":pk": {"S": pk}, ":p": {"S": "part#"}}}
        while True:
            page = self.db.query(**kwargs)
            for it in page.get("Items", []):
                blobs[it["sk"]["S"]] = it["df"]["B"]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return unpack([blobs[k] for k in sorted(blobs) if int(k.split("#")[1]) < parts])

    def _doc_pk(self, namespace: str, doc_id: str) -> str:
        return f"doc#{_ns(namespace)}#{doc_id}"

    def _delta_pk(self, namespace: str, doc_id: str) -> str:
        shard = int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=4).digest(), "little") % self.shards
        return f"delta#{_ns(namespace)}#{shard:02d}"

    # --- the fold -------------------------------------------------------------------------------------------

    def pending(self, namespace: str, limit: int = FOLD_LIMIT) -> list[tuple[str, str, dict[str, Any]]]:
        """Unfolded delta items (pk, sk, item), each shard read in sort order, so a document's transitions come in
        the order they were written and a cut keeps a prefix of them; a transition cut short is left whole for the
        next fold. About `limit` items at most."""
        out: list[tuple[str, str, dict[str, Any]]] = []
        per_shard = max(MAX_PARTS, limit // self.shards)
        for shard in range(self.shards):
            pk = f"delta#{_ns(namespace)}#{shard:02d}"
            kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True,
                                      "KeyConditionExpression": "pk = :pk",
                                      "ExpressionAttributeValues": {":pk": {"S": pk}}, "Limit": per_shard}
            got: list[dict[str, Any]] = []
            try:
                while len(got) < per_shard:
                    page = self.db.query(**kwargs)
                    got.extend(page.get("Items", []))
                    if "LastEvaluatedKey" not in page:
                        break
                    kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            except Exception as exc:
                raise DependencyError(f"cannot read statistics deltas: {error_code(exc)}") from None
            out.extend(_whole_transitions([(pk, it["sk"]["S"], it) for it in got[:per_shard]]))
        return out

    def discard(self, keys: list[tuple[str, str]]) -> None:
        for start in range(0, len(keys), 25):
            requests = [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": sk}}}} for pk, sk in
                        keys[start : start + 25]]
            for _ in range(10):
                resp = self.db.batch_write_item(RequestItems={self.table: requests})
                requests = resp.get("UnprocessedItems", {}).get(self.table, [])
                if not requests:
                    break
            else:
                raise DependencyError("cannot delete folded statistics deltas: DynamoDB kept them unprocessed")


def _transition(sk: str) -> str:
    return sk.rsplit("#", 1)[0]


def _whole_transitions(rows: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The rows up to the first transition that is not whole (its first part names how many parts it has)."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    i = 0
    while i < len(rows):
        first = rows[i][2]
        want = int(first.get("parts", {"N": "1"})["N"])
        group = rows[i : i + want]
        if len(group) < want or any(_transition(r[1]) != _transition(rows[i][1]) for r in group):
            break
        out.extend(group)
        i += want
    return out


def _condition_failed(exc: Exception) -> bool:
    """Lost to another writer (its condition failed, or it ran into another transaction on the same item): plan
    again. Any other cancellation (throttling, validation) is the caller's error."""
    reasons = [r.get("Code") for r in getattr(exc, "response", {}).get("CancellationReasons") or []]
    lost = {"ConditionalCheckFailed", "TransactionConflict"}
    return any(c in lost for c in reasons) and all(c in lost or c in (None, "None") for c in reasons)


class StatsFolder:
    """The scheduled step: fold pending deltas into the statistics object, exactly once."""

    def __init__(self, ledger: DynamoStatsLedger, store: Any) -> None:
        self.ledger = ledger
        self.store = store  # S3DocumentStore: read_stats_object / write_stats_object

    def fold(self, namespace: str = "", limit: int = FOLD_LIMIT) -> int:
        """One fold; returns how many deltas it folded (0: nothing pending, or another fold won)."""
        data, etag = self.store.read_stats_object(namespace)
        stats = data or {"n_docs": 0, "total_len": 0, "df": {}}
        # The last fold's deltas are in the object already: if that fold stopped before deleting them, they are
        # still pending, and are deleted now, not counted again. (Delta keys are never reused: a document's
        # sequence only grows, its state is never deleted.)
        done = {tuple(k) for k in stats.get("folded", [])}
        rows = self.ledger.pending(namespace, limit)
        left_over = [(pk, sk) for pk, sk, _ in rows if (pk, sk) in done]
        if left_over:
            self.ledger.discard(left_over)
            rows = [r for r in rows if (r[0], r[1]) not in done]
        if not rows:  # only leftovers were in this page: look again past them (once: they are gone now)
            return self.fold(namespace, limit) if left_over else 0
        df = {int(k): int(v) for k, v in stats["df"].items()}
        n_docs, total_len = int(stats["n_docs"]), int(stats["total_len"])
        for _pk, _sk, item in rows:
            if "n" in item:
                n_docs += int(item["n"]["N"])
                total_len += int(item["len"]["N"])
            for t, c in unpack([item["df"]["B"]]).items():
                left = df.get(t, 0) + c
                if left:
                    df[t] = left
                else:
                    df.pop(t, None)
        keys = [(pk, sk) for pk, sk, _ in rows]
        body = {"n_docs": n_docs, "total_len": total_len, "df": {str(k): v for k, v in sorted(df.items())},
                "folded": [list(k) for k in keys]}
        try:
            self.store.write_stats_object(namespace, body, etag)
        except StatsConflict:
            return 0
        self.ledger.discard(keys)
        return len(keys)

    def fold_all(self, namespace: str = "", max_folds: int = 1000) -> int:
        total = 0
        for _ in range(max_folds):
            n = self.fold(namespace)
            if not n:
                break
            total += n
        return total


# The table's keys, as infra/ingest_scale.py creates them (tests and the simulation create the same table in moto).
KEY_SCHEMA = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
ATTRIBUTES = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]


def create_table(client: Any, name: str) -> None:
    """The statistics table with on-demand capacity (what the stack deploys), for local doubles."""
    client.create_table(TableName=name, KeySchema=KEY_SCHEMA, AttributeDefinitions=ATTRIBUTES,
                        BillingMode="PAY_PER_REQUEST")
