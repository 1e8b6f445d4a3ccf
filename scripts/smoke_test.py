"""After `cdk deploy`: one cited answer through each deployed runtime, checked against the document it cites.

    python scripts/smoke_test.py [--stack Citerag] [--region REGION] [--profile PROFILE] [--token JWT] [--keep]

It reads the stack's outputs, uploads one small sample document (citerag's support-contacts.txt) under
docs/citerag-smoke/, asks about it through InvokeAgent (Agents Classic: AgentId, AgentAliasId) and through
InvokeAgentRuntime (AgentCore: AgentRuntimeArn; `--token` for a runtime with a JWT authorizer), and checks each
answer: it is answered, cites at least one passage, every cited passage is the uploaded document, and every cited
excerpt is text of that document. Ingestion runs asynchronously, so each question is retried until it is answered or
`--wait` seconds pass. The document is deleted at the end unless --keep. Exit status 0 only when every deployed
runtime passed. It needs credentials allowed to read the stack, write the bucket's docs/ prefix and invoke the agents.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lambdas"))

from citerag.citations.answer import Answer  # noqa: E402
from citerag.citations.pii import MASK_LABEL  # noqa: E402
from citerag.errors import CiteragError  # noqa: E402

SAMPLE = ROOT / "lambdas" / "citerag" / "samples" / "support-contacts.txt"
KEY = "docs/citerag-smoke/support-contacts.txt"
QUESTION = "On which days and at what hours is Kumo phone support available?"
EXPECTED = ("9:00", "18:00")  # the answer must carry the hours the document gives


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:  # botocore ClientError and friends: named, never a traceback
        raise CiteragError(f"cannot read the stack {stack!r}: {exc}") from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def in_document(excerpt: str, body: str) -> bool:
    """Whether the document holds the cited excerpt, each mask label ([PHONE], [EMAIL]: the deployed answer masks
    personal data, the sample's support number among it) standing for a short run of the document's text."""
    pieces = MASK_LABEL.split(excerpt)
    if len(pieces) == 1:
        return excerpt in body
    return re.search(".{1,80}?".join(re.escape(p) for p in pieces), body, re.S) is not None


def check_answer(answer: Answer, key: str, document: str) -> list[str]:
    """What is wrong with `answer` as a cited answer from the document at `key` ([] when nothing is)."""
    problems = []
    if not answer.answered:
        problems.append("the agent did not answer")
    if not answer.citations or not answer.sources:
        problems.append("the answer cites nothing")
    if not all(x in answer.text for x in EXPECTED):
        problems.append(f"the answer does not give the hours {' to '.join(EXPECTED)}: {answer.text[:200]!r}")
    body = _norm(document)
    for source in answer.sources:
        # The uploaded object itself (s3://BUCKET/KEY, as ingest names it), not any file of the same name.
        if not source.uri.endswith("/" + key):
            problems.append(f"a citation names {source.uri!r}, not the uploaded {key}")
        excerpt = _norm(source.excerpt or source.text)
        if excerpt and not in_document(excerpt, body):
            problems.append(f"the cited text {excerpt[:120]!r} is not in the document")
    return problems


def ask_until_answered(ask: Callable[[], Answer], wait_s: float, every_s: float = 20) -> Answer:
    """The first answered reply with citations, or the last reply once `wait_s` has passed (ingestion is async)."""
    deadline = time.monotonic() + wait_s
    while True:
        answer = ask()
        if (answer.answered and answer.citations) or time.monotonic() >= deadline:
            return answer
        time.sleep(every_s)


def main(argv: list[str] | None = None) -> int:
    import boto3
    from botocore.config import Config

    from citerag.runtimes.agentcore.client import RuntimeClient
    from citerag.runtimes.classic import AgentClient

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stack", default="Citerag")
    ap.add_argument("--region")
    ap.add_argument("--profile")
    ap.add_argument("--token", help="a bearer token, for an AgentCore runtime deployed with a JWT authorizer")
    ap.add_argument("--wait", type=float, default=600, help="seconds to wait for the document to be ingested")
    ap.add_argument("--keep", action="store_true", help="leave the sample document in the bucket")
    args = ap.parse_args(argv)

    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    config = Config(retries={"mode": "adaptive", "max_attempts": 5}, read_timeout=900)
    try:
        outputs = stack_outputs(session.client("cloudformation", config=config), args.stack)
    except CiteragError as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 2
    runtimes: dict[str, Callable[[], Answer]] = {}
    if "AgentId" in outputs:
        classic = AgentClient(session.client("bedrock-agent-runtime", config=config))
        runtimes["InvokeAgent (Agents Classic)"] = lambda: classic.ask(QUESTION, outputs["AgentId"],
                                                                       outputs["AgentAliasId"])
    if "AgentRuntimeArn" in outputs:
        core = RuntimeClient(session.client("bedrock-agentcore", config=config))
        arn = outputs["AgentRuntimeArn"]
        runtimes["InvokeAgentRuntime (AgentCore)"] = ((lambda: core.ask_with_token(QUESTION, arn, args.token))
                                                      if args.token else (lambda: core.ask(QUESTION, arn)))
    if not runtimes:
        print(f"FAIL: the stack {args.stack!r} has neither AgentId nor AgentRuntimeArn outputs", file=sys.stderr)
        return 2

    s3 = session.client("s3", config=config)
    document = SAMPLE.read_text(encoding="utf-8")
    s3.put_object(Bucket=outputs["DocumentsBucket"], Key=KEY, Body=document.encode("utf-8"),
                  ContentType="text/plain; charset=utf-8")
    failed = False
    try:
        for name, ask in runtimes.items():
            try:
                answer = ask_until_answered(ask, args.wait)
                problems = check_answer(answer, KEY, document)
            except CiteragError as exc:
                problems = [str(exc)]
            failed |= bool(problems)
            print(f"{'PASS' if not problems else 'FAIL'} {name}")
            for p in problems:
                print(f"  - {p}")
            if not problems:
                print(f"  answer: {answer.text[:300]}")
                for s in answer.sources:
                    print(f"  cites: {s.uri}{f' p.{s.page}' if s.page else ''}: {(s.excerpt or s.text)[:120]!r}")
    finally:
        if not args.keep:
            s3.delete_object(Bucket=outputs["DocumentsBucket"], Key=KEY)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
