"""Assemble a folder of real, permissively licensed files from this machine for `citerag bench-ingest`: licence
texts (/usr/share/common-licenses), man pages rendered to text, the long descriptions of installed Python packages
(Markdown) and the bundled samples (PDF, Markdown, HTML, text). Nothing is downloaded and nothing is committed:
the files stay where DEST is.

    python scripts/real_corpus.py /tmp/real-corpus
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

LICENCES = ["Apache-2.0", "GPL-2", "GPL-3", "LGPL-2.1", "MPL-2.0", "GFDL-1.3", "Artistic", "BSD"]
MAN_PAGES = ["grep", "sed", "tar", "ssh", "gzip", "sqlite3"]
# Packages under MIT, BSD, Apache-2.0 or MPL-2.0 whose description is a real Markdown document.
PACKAGES = ["rich", "typer", "hypothesis", "boto3", "moto", "jsonschema", "platformdirs", "pypdf",
            "threadpoolctl", "snowballstemmer", "aws-lambda-powertools", "cfn-lint", "pytest"]
SAMPLES = Path(__file__).resolve().parents[1] / "lambdas" / "citerag" / "samples"


def main(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    made = []
    for name in LICENCES:
        src = Path("/usr/share/common-licenses") / name
        if src.is_file():
            made.append(_write(dest / f"licence-{name}.txt", src.read_text(encoding="utf-8", errors="replace")))
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"}
    for page in MAN_PAGES:
        try:
            text = subprocess.run(["man", "-P", "cat", page], capture_output=True, text=True, env=env,
                                  timeout=60, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        # Kept as man writes to a pipe, overstrike and all (bold "g\bgr\bre\bep\bp"): the text loader reads it as
        # `col -b` would, and a corpus of such files is what a user who saves a man page ingests.
        if len(text) > 2000:
            made.append(_write(dest / f"man-{page}.txt", text))
    for pkg in PACKAGES:
        try:
            description = metadata.metadata(pkg).get_payload()  # type: ignore[attr-defined]
        except metadata.PackageNotFoundError:
            continue
        if description and len(description) > 2000:
            made.append(_write(dest / f"pkg-{pkg}.md", description))
    for src in sorted(SAMPLES.iterdir()):
        if src.is_file():
            shutil.copy(src, dest / f"sample-{src.name}")
            made.append(dest / f"sample-{src.name}")
    total = sum(p.stat().st_size for p in made)
    print(f"{len(made)} files, {total / 1e6:.2f} MB in {dest}")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/real_corpus.py DEST")
    main(Path(sys.argv[1]))
