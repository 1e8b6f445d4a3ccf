"""Session attributes: set by the calling application (never by the model), carried as a str -> str map."""

from __future__ import annotations

import json
from typing import Any


def string_map(value: Any) -> dict[str, str]:
    """Session attributes as the contract requires them: a str -> str map (None dropped, others JSON-encoded)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items() if v is not None}
