"""Bulk loads through batch inference: staged documents -> batch jobs -> the same per-document writes as on demand.

With the bulk path on, an ingest function reads and chunks each document as usual but, instead of embedding it,
stages its passages (NotificationIngest with a stager). A scheduled step (`submit`) then looks at what is staged:
- at least `min_passages` passages: they go into batch jobs of at most `max_records` records each (a remainder
  under the job minimum waits for more);
- fewer, and the oldest has waited `max_wait_s`: they are written now, embedded on demand, so a lone upload is
  never stuck behind a threshold.
When a job ends (`complete`: the Bedrock job-state event, or the same scheduled poll, since Bedrock sends its events
"on a best-effort basis"), each of its documents is reconciled exactly as a notification is: under its lease, from
the object as it is now, through the ingestor and the statistics ledger; its passages' vectors come from the job's
output, any missing one (a failed record, a document changed since) from the on-demand embedder. A job that failed
or expired thus still ends with every document written. Every step can stop anywhere and be run again: a document
written already is unchanged the second time (its content hash), so nothing is lost or written twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel

from citerag.errors import DependencyError
from citerag.ingestion.files import IngestResult
from citerag.ingestion.ports import DocumentLocks, LockBusy
from citerag.ingestion.s3_events import ObjectEvent

SUBMITTER_LEASE = "batch#submitter"
TIME_MARGIN_S = 120.0  # left for one more document (re-read, re-chunked, written) before the function's timeout


class StagedDocument(BaseModel):
    uri: str
    bucket: str
    key: str
    passages: int = 0
    part: str = ""
    staged_at: float = 0.0


class SubmittedJob(BaseModel):
    job_id: str
    arn: str
    submitted_at: float = 0.0


class BulkReport(BaseModel):
    submitted: list[str] = []  # job ARNs started
    staged_passages: int = 0  # still waiting after this run
    written: list[IngestResult] = []  # documents written (on demand, or from a finished job)
    finished: list[str] = []  # job ids whose documents are all written
    waiting: list[str] = []  # job ids still running
    ended: dict[str, str] = {}  # job id -> how it ended (status, and Bedrock's message)
    note: str | None = None


class Staging(Protocol):
    def now(self) -> float: ...
    def staged(self) -> list[StagedDocument]: ...
    def lines(self, doc: StagedDocument) -> list[str]: ...
    def unstage(self, docs: Sequence[StagedDocument]) -> None: ...
    def add_job(self, job_id: str, arn: str, docs: Sequence[StagedDocument]) -> None: ...
    def jobs(self) -> list[SubmittedJob]: ...
    def job_documents(self, job_id: str) -> list[StagedDocument]: ...
    def finish_job(self, job_id: str) -> None: ...


class BatchJobs(Protocol):
    def submit(self, job_id: str, lines: list[str]) -> str: ...
    def status(self, job_arn: str) -> tuple[str, str]: ...
    def vectors(self, job_id: str) -> dict[str, Any]: ...


class Reconciler(Protocol):
    def reconcile(self, ev: ObjectEvent) -> IngestResult: ...


class BulkIngest:
    def __init__(self, staging: Staging, jobs: BatchJobs, reconciler: Callable[[dict[str, Any]], Reconciler],
                 locks: DocumentLocks, *, min_passages: int, max_records: int, min_records: int = 100,
                 max_wait_s: float = 900.0, workers: int = 4, finished: frozenset[str] = frozenset(),
                 with_output: frozenset[str] = frozenset(),
                 time_left: Callable[[], float] = lambda: float("inf")) -> None:
        self.staging = staging
        self.jobs = jobs
        self.reconciler = reconciler
        self.locks = locks
        self.min_records = max(1, min_records)
        self.min_passages = max(self.min_records, min_passages)
        self.max_records = max(self.min_records, max_records)
        self.max_wait_s = max_wait_s
        self.workers = max(1, workers)
        self.finished_states = finished
        self.with_output = with_output
        self.time_left = time_left

    def run(self) -> BulkReport:
        """One scheduled (or job-state) invocation: finish the jobs that ended, then start new ones. One at a
        time: a second invocation while one runs does nothing."""
        report = BulkReport()
        try:
            with self.locks.hold(SUBMITTER_LEASE):
                self._complete(report)
                self._submit(report)
        except LockBusy:
            report.note = "another invocation is running the bulk step"
        return report

    # --- jobs that ended --------------------------------------------------------------------------------------

    def _complete(self, report: BulkReport) -> None:
        for job in self.jobs_in_order():
            status, message = self.jobs.status(job.arn)
            if status not in self.finished_states:
                report.waiting.append(job.job_id)
                continue
            report.ended[job.job_id] = f"{status}: {message}"[:300] if message else status
            vectors = self.jobs.vectors(job.job_id) if status in self.with_output else {}
            if not self._write_all(vectors, self.staging.job_documents(job.job_id), report):
                report.note = "stopped before the function's timeout; the next run goes on"
                report.waiting.append(job.job_id)
                return
            self.staging.finish_job(job.job_id)
            report.finished.append(job.job_id)

    def _write_all(self, vectors: dict[str, Any], docs: list[StagedDocument], report: BulkReport) -> bool:
        """Write the documents, `workers` at a time (each mostly waits on S3, Pinecone and DynamoDB; one document
        is still written by one writer at a time, under its lease). False: stopped early for the timeout."""
        ingest = [self.reconciler(vectors) for _ in range(self.workers)]
        with ThreadPoolExecutor(self.workers, thread_name_prefix="citerag-bulk") as pool:
            running: list[Future] = []
            for n, doc in enumerate(docs):
                if self.time_left() < TIME_MARGIN_S:
                    break
                running.append(pool.submit(self._write, ingest[n % self.workers], doc))
                if len(running) >= 2 * self.workers:
                    report.written.append(running.pop(0).result())
            else:
                report.written.extend(f.result() for f in running)
                return True
            report.written.extend(f.result() for f in running)
            return False

    def jobs_in_order(self) -> list[SubmittedJob]:
        return sorted(self.staging.jobs(), key=lambda j: j.submitted_at)

    def _write(self, ingest: Reconciler, doc: StagedDocument) -> IngestResult:
        # A document another function holds raises (TransientFailure): this run stops, the job stays listed, and
        # the next run starts it again from its first document (those written already are unchanged).
        return ingest.reconcile(ObjectEvent(action="created", bucket=doc.bucket, key=doc.key))

    # --- staged documents -------------------------------------------------------------------------------------

    def _submit(self, report: BulkReport) -> None:
        docs = sorted(self.staging.staged(), key=lambda d: d.staged_at)
        total = sum(d.passages for d in docs)
        if total >= self.min_passages:
            docs = self._start_jobs(docs, report)
        now = self.staging.now()
        late = [d for d in docs if now - d.staged_at >= self.max_wait_s] if docs else []
        if late and sum(d.passages for d in docs) < self.min_passages:
            ingest = self.reconciler({})
            for doc in late:
                if self.time_left() < TIME_MARGIN_S:
                    report.note = "stopped before the function's timeout; the next run goes on"
                    break
                report.written.append(self._write(ingest, doc))
                self.staging.unstage([doc])
                docs.remove(doc)
        report.staged_passages = sum(d.passages for d in docs)

    def _start_jobs(self, docs: list[StagedDocument], report: BulkReport) -> list[StagedDocument]:
        """Pack staged documents, oldest first, into jobs; returns the documents left staged."""
        left = list(docs)
        while left and self.time_left() >= TIME_MARGIN_S:
            take, lines, seen = [], [], set()
            for doc in left:
                got = [ln for ln in self.staging.lines(doc) if ln not in seen]
                if lines and len(lines) + len(got) > self.max_records:
                    break
                take.append(doc)
                lines.extend(got)
                seen.update(got)
                if len(lines) >= self.max_records:
                    break
            if len(lines) > self.max_records:  # one document over a job's size: written on demand
                ingest = self.reconciler({})
                report.written.append(self._write(ingest, take[0]))
                self.staging.unstage(take[:1])
                left.remove(take[0])
                continue
            if len(lines) < self.min_records or (take == left and sum(d.passages for d in left) < self.min_passages
                                                 and report.submitted):
                break  # too few for a job: they wait for more, or for max_wait_s
            job_id = uuid.uuid4().hex[:24]
            try:
                arn = self.jobs.submit(job_id, lines)
            except DependencyError as exc:
                report.note = str(exc)
                break
            # Recorded before unstaging: stopped between the two, the documents are in a job and still staged, so
            # a later job embeds them again (tokens spent twice), and the index is written once (unchanged).
            self.staging.add_job(job_id, arn, take)
            self.staging.unstage(take)
            report.submitted.append(arn)
            left = [d for d in left if d not in take]
        return left
