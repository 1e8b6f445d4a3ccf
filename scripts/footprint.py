"""Per-function asset size and cold-import CPU time against a boto3-only handler, measured in one run.

    python scripts/footprint.py [--rounds 5] [--assets DIR]

Builds the Lambda assets as the CDK app does (infra.bundling), unless --assets names a folder holding them, and
needs the Lambda runtime's Python (3.13) on this machine (or CITERAG_TARGET_PYTHON). See infra/footprint.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infra.footprint import main

if __name__ == "__main__":
    sys.exit(main())
