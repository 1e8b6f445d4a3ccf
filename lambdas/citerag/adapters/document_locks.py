"""One writer per document across many ingest functions: a lease item per document in the statistics table,
taken with a conditional PutItem (free, or its lease ran out) and given back with a conditional DeleteItem (still
ours). A function killed while holding it lets go when the lease runs out, which is the function's timeout: no
batch it was given can still be running then (docs amazondynamodb Expressions.ConditionExpressions)."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from citerag.adapters.aws import error_code
from citerag.errors import DependencyError
from citerag.ingestion.ports import LockBusy


class DynamoDocumentLocks:
    def __init__(self, client: Any, table: str, *, lease_s: float = 900.0, wait_s: float = 60.0,
                 now: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None) -> None:
        self.db = client
        self.table = table
        self.lease_s = lease_s
        self.wait_s = wait_s
        self._now = now
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.holder = uuid.uuid4().hex  # this function instance

    def _key(self, key: str) -> dict[str, Any]:
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return {"pk": {"S": f"lease#{digest}"}, "sk": {"S": "lease"}}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        item_key = self._key(key)
        waited, pause = 0.0, 0.2
        while True:
            now = self._now()
            try:
                self.db.put_item(TableName=self.table, Item={
                    **item_key, "holder": {"S": self.holder}, "expires": {"N": f"{now + self.lease_s:.3f}"}},
                    ConditionExpression="attribute_not_exists(pk) OR expires < :now",
                    ExpressionAttributeValues={":now": {"N": f"{now:.3f}"}})
                break
            except Exception as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise DependencyError(f"cannot take the document lease: {error_code(exc)}") from None
            if waited >= self.wait_s:
                raise LockBusy(f"held for more than {self.wait_s:.0f} s")
            step = self._rng.uniform(pause / 2, pause)
            self._sleep(step)
            waited += step
            pause = min(pause * 2, 5.0)
        try:
            yield
        finally:
            try:
                self.db.delete_item(TableName=self.table, Key=item_key, ConditionExpression="holder = :me",
                                    ExpressionAttributeValues={":me": {"S": self.holder}})
            except Exception as exc:  # lost it (ran past its lease): the next holder has it now; nothing to undo
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise DependencyError(f"cannot give back the document lease: {error_code(exc)}") from None
