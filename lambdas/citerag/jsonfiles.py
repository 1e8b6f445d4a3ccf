"""Reading JSON files a user points at (events, traces, log exports), with errors that say what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citerag.errors import CiteragError


def read_json(path: Path, what: str = "file") -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CiteragError(f"no such {what}: {path}") from None
    except IsADirectoryError:
        article = "an" if what[:1].lower() in "aeiou" else "a"
        raise CiteragError(f"{path} is a folder, not {article} {what}") from None
    except UnicodeDecodeError:
        raise CiteragError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise CiteragError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
