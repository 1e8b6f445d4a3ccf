"""What Pinecone does not hold, kept in S3: full parent texts (pages/sections), one manifest per document
(content hash, chunk ids, its BM25 contribution) and the BM25 corpus statistics of each namespace.

Layout under the prefix: parents/<ns>/<parent_id>, manifests/<ns>/<doc_id>.json, stats/<ns>.json.
The statistics object is written by one of two writers: `apply_stats` read-modify-writes it (one ingest function
at a time, for a deployment without a statistics table), or the scheduled fold of adapters.stats_ledger replaces
it with a conditional write (many ingest functions). Readers see the same object either way.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

from citerag.adapters.aws import error_code
from citerag.errors import DependencyError
from citerag.search.sparse import CorpusStats

_DEFAULT_NS = "__default__"
STATS_CACHE_NAMESPACES = 4


def _ns(namespace: str) -> str:
    return namespace or _DEFAULT_NS


class S3DocumentStore:
    def __init__(self, client: Any, bucket: str, prefix: str = "citerag/", stats_ttl_s: float = 300.0) -> None:
        self.s3 = client
        self.bucket = bucket
        self.prefix = prefix
        self.stats_ttl_s = stats_ttl_s
        # Each namespace's statistics for stats_ttl_s, at most STATS_CACHE_NAMESPACES of them (each holds the whole
        # vocabulary): a search reads them once per TTL, not per query.
        self._stats_cache: OrderedDict[str, tuple[float, CorpusStats]] = OrderedDict()
        # Parent ids carry the document version, so a parent text never changes under its key: cache freely.
        self._parents: OrderedDict[tuple[str, str], str] = OrderedDict()
        self.parent_cache_size = 512
        self._lock = threading.Lock()

    def _key(self, *parts: str) -> str:
        return self.prefix + "/".join(parts)

    # --- parents ------------------------------------------------------------------------------------------

    def put_parents(self, parents: dict[str, str], namespace: str) -> None:
        for pid, text in parents.items():
            self.s3.put_object(Bucket=self.bucket, Key=self._key("parents", _ns(namespace), pid),
                               Body=text.encode("utf-8"), ContentType="text/plain; charset=utf-8")

    def get_parent(self, parent_id: str, namespace: str = "") -> str | None:
        ck = (namespace, parent_id)
        with self._lock:
            if ck in self._parents:
                self._parents.move_to_end(ck)
                return self._parents[ck]
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=self._key("parents", _ns(namespace), parent_id))
        except self.s3.exceptions.NoSuchKey:
            return None
        text = obj["Body"].read().decode("utf-8")
        with self._lock:
            self._parents[ck] = text
            while len(self._parents) > self.parent_cache_size:
                self._parents.popitem(last=False)
        return text

    def delete_parents(self, parent_ids: list[str], namespace: str) -> None:
        keys = [{"Key": self._key("parents", _ns(namespace), p)} for p in parent_ids]
        for start in range(0, len(keys), 1000):
            self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys[start : start + 1000], "Quiet": True})

    # --- manifests ----------------------------------------------------------------------------------------

    def get_manifest(self, doc_id: str, namespace: str = "") -> dict[str, Any] | None:
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=self._key("manifests", _ns(namespace), f"{doc_id}.json"))
        except self.s3.exceptions.NoSuchKey:
            return None
        return json.loads(obj["Body"].read())

    def put_manifest(self, doc_id: str, manifest: dict[str, Any], namespace: str) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self._key("manifests", _ns(namespace), f"{doc_id}.json"),
                           Body=json.dumps(manifest).encode(), ContentType="application/json")

    def delete_manifest(self, doc_id: str, namespace: str) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=self._key("manifests", _ns(namespace), f"{doc_id}.json"))

    def list_manifests(self, namespace: str = "") -> list[dict[str, Any]]:
        out = []
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key("manifests", _ns(namespace), "")):
            for item in page.get("Contents", []):
                out.append(json.loads(self.s3.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()))
        return out

    # --- BM25 statistics ----------------------------------------------------------------------------------

    def corpus_stats(self, namespace: str = "") -> CorpusStats:
        ns = _ns(namespace)
        with self._lock:
            hit = self._stats_cache.get(ns)
            if hit and time.monotonic() - hit[0] < self.stats_ttl_s:
                return hit[1]
        stats = self._read_stats(ns)
        self._remember(ns, stats)
        return stats

    def _remember(self, ns: str, stats: CorpusStats) -> None:
        with self._lock:
            self._stats_cache[ns] = (time.monotonic(), stats)
            self._stats_cache.move_to_end(ns)
            while len(self._stats_cache) > STATS_CACHE_NAMESPACES:
                self._stats_cache.popitem(last=False)

    def _read_stats(self, ns: str) -> CorpusStats:
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=self._key("stats", f"{ns}.json"))
        except self.s3.exceptions.NoSuchKey:
            return CorpusStats()
        data = json.loads(obj["Body"].read())
        return CorpusStats(n_docs=int(data["n_docs"]), total_len=int(data["total_len"]),
                           df={int(k): int(v) for k, v in data["df"].items()})

    def read_stats_object(self, namespace: str) -> tuple[dict[str, Any] | None, str | None]:
        """The statistics object and its ETag (None, None: there is none yet)."""
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=self._key("stats", f"{_ns(namespace)}.json"))
        except self.s3.exceptions.NoSuchKey:
            return None, None
        except Exception as exc:
            raise DependencyError(f"cannot read the corpus statistics: {error_code(exc)}") from None
        return json.loads(obj["Body"].read()), obj.get("ETag")

    def write_stats_object(self, namespace: str, body: dict[str, Any], etag: str | None) -> None:
        """Replace the statistics object only if it is still the version read (etag None: only if there is none):
        S3 conditional writes (PutObject If-Match / If-None-Match; a lost race is 412 PreconditionFailed, or 409
        ConditionalRequestConflict while another conditional write is in flight; docs AmazonS3
        conditional-writes). Raises StatsConflict when another fold won."""
        from citerag.adapters.stats_ledger import StatsConflict

        cond = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        ns = _ns(namespace)
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self._key("stats", f"{ns}.json"),
                               Body=json.dumps(body, separators=(",", ":")).encode(),
                               ContentType="application/json", **cond)
        except Exception as exc:
            if error_code(exc) in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                raise StatsConflict(ns) from None
            raise DependencyError(f"cannot write the corpus statistics: {error_code(exc)}") from None
        with self._lock:
            self._stats_cache.pop(ns, None)

    def apply_stats(self, namespace: str, added: dict[int, int], removed: dict[int, int],
                    docs_delta: int, len_delta: int) -> CorpusStats:
        ns = _ns(namespace)
        stats = self._read_stats(ns)
        for t, c in added.items():
            stats.df[t] = stats.df.get(t, 0) + c
        for t, c in removed.items():
            left = stats.df.get(t, 0) - c
            if left > 0:
                stats.df[t] = left
            else:
                stats.df.pop(t, None)
        stats.n_docs = max(0, stats.n_docs + docs_delta)
        stats.total_len = max(0, stats.total_len + len_delta)
        body = {"n_docs": stats.n_docs, "total_len": stats.total_len, "df": {str(k): v for k, v in stats.df.items()}}
        self.s3.put_object(Bucket=self.bucket, Key=self._key("stats", f"{ns}.json"),
                           Body=json.dumps(body, separators=(",", ":")).encode(), ContentType="application/json")
        self._remember(ns, stats)
        return stats
