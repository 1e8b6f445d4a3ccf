"""How long the loaders and the chunker take on large inputs of the shapes that once took quadratic time: a text
file of short wrapped lines (its line numbers were counted from the start for every chunk) and a Markdown paragraph
wrapped over thousands of source lines (it was read again at every line).

    python scripts/bench_loaders.py [--scale N]

Prints the median of 3 runs for each input; `--scale` multiplies the sizes (1: a 2.2 MB text file, a 4,000-line
paragraph). Compare two checkouts on one machine in one sitting: absolute times on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from citerag.documents.chunking import chunk_document
from citerag.documents.loaders import load_bytes


def _median(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1)
    scale = parser.parse_args().scale
    rng = random.Random(1)
    text = "".join(f"The pump number {i} is fine.{chr(10) if rng.random() < 0.5 else ' '}"
                   for i in range(70_000 * scale))
    doc = load_bytes(text.encode(), "file:///bench.txt", "bench.txt")
    md = ("# T\n\n" + "\n".join(f"word number {i} goes on here and on" for i in range(4_000 * scale)) + "\n").encode()
    chunked = _median(lambda: chunk_document(doc))
    loaded = _median(lambda: load_bytes(md, "file:///bench.md", "bench.md"))
    print(f"text file {len(text) / 1e6:.1f} MB: chunked in {chunked:.2f} s (median of 3)")
    print(f"Markdown paragraph of {4_000 * scale:,} lines: loaded in {loaded:.2f} s (median of 3)")


if __name__ == "__main__":
    main()
