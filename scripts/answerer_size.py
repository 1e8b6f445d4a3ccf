"""The offline answerer's size: lines of code per module (no blank lines, comments or docstrings) and physical
lines, data files (rules/*.json, variants.json) aside.

    python scripts/answerer_size.py
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "lambdas" / "citerag" / "answerer"
NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def code_lines(src: str) -> int:
    lines = {n for tok in tokenize.generate_tokens(io.StringIO(src).readline) if tok.type not in NOT_CODE
             for n in range(tok.start[0], tok.end[0] + 1)}
    for node in ast.walk(ast.parse(src)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            lines -= set(range(body[0].lineno, body[0].end_lineno + 1))
    return len(lines)


def main() -> None:
    code = physical = 0
    for path in sorted(ROOT.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        n = code_lines(src)
        code, physical = code + n, physical + src.count("\n")
        print(f"{n:5d} {src.count(chr(10)):5d}  {path.relative_to(ROOT.parent)}")
    print(f"{code:5d} {physical:5d}  lines of code, physical lines")


if __name__ == "__main__":
    main()
