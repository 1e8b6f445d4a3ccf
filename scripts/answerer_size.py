"""The offline answerer's size per module, data files (rules/*.json, variants.json) aside: lines of code (no blank
lines, comments or docstrings), blank lines, comment and docstring lines, and physical lines (all of them).

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
    totals = [0, 0, 0, 0]
    print(" code blank notes physical")
    for path in sorted(ROOT.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        code, physical = code_lines(src), src.count("\n")
        blank = sum(not line.strip() for line in src.splitlines())
        row = [code, blank, physical - code - blank, physical]
        totals = [t + n for t, n in zip(totals, row, strict=True)]
        print(" ".join(f"{n:5d}" for n in row), "", path.relative_to(ROOT.parent))
    print(" ".join(f"{n:5d}" for n in totals), " total (notes: comment and docstring lines)")


if __name__ == "__main__":
    main()
