"""Pinecone's metadata filter language: validation and evaluation.

Supported: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or, and the implicit form {"field": value}.
Semantics follow Pinecone: a list-valued field matches $eq/$in when any element matches, and $ne/$nin
when no element does; range operators take numbers only; a missing field fails every test except
$ne, $nin and {"$exists": false}.
"""

from __future__ import annotations

import json
import re
from typing import Any

from citerag.errors import FilterSyntaxError

Filter = dict[str, Any]

_COMPARE = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"}
_RANGE = {"$gt", "$gte", "$lt", "$lte"}
_MISSING = object()


# Bounds of the filter language, checked before any work: a filter from a model or a user never costs more than
# a few hundred comparisons per record, and never recurses deeper than MAX_DEPTH.
MAX_DEPTH = 8  # nesting of $and / $or
MAX_CONDITIONS = 64  # field conditions in the whole filter
MAX_VALUES = 100  # values in one $in / $nin list
MAX_TEXT = 512  # characters of a field name or a string value


def validate(flt: Any, _path: str = "filter", *, max_depth: int = MAX_DEPTH) -> Filter:
    """Raise FilterSyntaxError with the exact location of the problem; return the filter unchanged.

    Accepts exactly the filter language within the bounds above (depth, conditions, list and string sizes)."""
    _validate(flt, _path, max_depth, [0])
    return flt


def _validate(flt: Any, _path: str, depth_left: int, conditions: list[int]) -> None:
    if not isinstance(flt, dict):
        raise FilterSyntaxError(f"{_path} must be an object, got {type(flt).__name__}")
    for key, cond in flt.items():
        where = f"{_path}.{_short(key)}"
        if key in ("$and", "$or"):
            if not isinstance(cond, list) or not cond:
                raise FilterSyntaxError(f"{where} must be a non-empty list of filters")
            if depth_left <= 0:
                raise FilterSyntaxError(f"{where}: filters may nest $and/$or at most {MAX_DEPTH} levels deep")
            for i, sub in enumerate(cond):
                _validate(sub, f"{where}[{i}]", depth_left - 1, conditions)
            continue
        conditions[0] += 1
        if conditions[0] > MAX_CONDITIONS:
            raise FilterSyntaxError(f"the filter has more than {MAX_CONDITIONS} conditions; simplify it")
        if not isinstance(key, str) or len(key) > MAX_TEXT:
            raise FilterSyntaxError(f"field name at {_path} is longer than {MAX_TEXT} characters")
        if key.startswith("$"):
            raise FilterSyntaxError(f"unknown operator {_short(key)} at {_path}; use $and or $or to combine fields")
        elif not key:
            raise FilterSyntaxError(f"empty field name in {_path}")
        elif isinstance(cond, dict):
            if not cond:
                raise FilterSyntaxError(f"{where} has no operator")
            for op, val in cond.items():
                _validate_op(op, val, f"{where}.{_short(op)}")
        else:
            _validate_scalar(cond, where)


def _validate_op(op: str, val: Any, where: str) -> None:
    if op not in _COMPARE:
        raise FilterSyntaxError(f"unknown operator {_short(op)} at {where}; "
                                f"expected one of {', '.join(sorted(_COMPARE))}")
    if op in ("$in", "$nin"):
        if not isinstance(val, list):
            raise FilterSyntaxError(f"{where} needs a list of values")
        if len(val) > MAX_VALUES:
            raise FilterSyntaxError(f"{where} lists {len(val)} values; the limit is {MAX_VALUES}")
        for v in val:
            _validate_scalar(v, where)
    elif op == "$exists":
        if not isinstance(val, bool):
            raise FilterSyntaxError(f"{where} needs true or false")
    elif op in _RANGE:
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            raise FilterSyntaxError(f"{where} needs a number")
    else:
        _validate_scalar(val, where)


def _validate_scalar(val: Any, where: str) -> None:
    if val is None or not isinstance(val, (str, int, float, bool)):
        raise FilterSyntaxError(f"{where} needs a string, number or boolean, got {type(val).__name__}")
    if isinstance(val, str) and len(val) > MAX_TEXT:
        raise FilterSyntaxError(f"{where} is longer than {MAX_TEXT} characters")
    if isinstance(val, float) and val != val:  # NaN matches nothing and compares as nothing: refuse it
        raise FilterSyntaxError(f"{where} is not a number")


def _short(name: Any) -> str:
    text = str(name)
    return text if len(text) <= 40 else text[:39] + "…"


def matches(flt: Filter | None, metadata: dict[str, Any]) -> bool:
    """Evaluate a (validated) filter against one record's metadata."""
    if not flt:
        return True
    for key, cond in flt.items():
        if key == "$and":
            if not all(matches(sub, metadata) for sub in cond):
                return False
        elif key == "$or":
            if not any(matches(sub, metadata) for sub in cond):
                return False
        else:
            ops = cond if isinstance(cond, dict) else {"$eq": cond}
            value = metadata.get(key, _MISSING)
            if not all(_test(op, arg, value) for op, arg in ops.items()):
                return False
    return True


def _eq(a: Any, b: Any) -> bool:
    # True == 1 in Python; Pinecone keeps booleans and numbers apart.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _test(op: str, arg: Any, value: Any) -> bool:
    if op == "$exists":
        return (value is not _MISSING) == arg
    if value is _MISSING:
        return op in ("$ne", "$nin")
    values = value if isinstance(value, list) else [value]
    if op == "$eq":
        return any(_eq(v, arg) for v in values)
    if op == "$ne":
        return not any(_eq(v, arg) for v in values)
    if op == "$in":
        return any(_eq(v, a) for v in values for a in arg)
    if op == "$nin":
        return not any(_eq(v, a) for v in values for a in arg)
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if op == "$gt":
        return any(v > arg for v in nums)
    if op == "$gte":
        return any(v >= arg for v in nums)
    if op == "$lt":
        return any(v < arg for v in nums)
    return any(v <= arg for v in nums)  # $lte


def combine(*filters: Filter | None) -> Filter | None:
    """AND together filters; used so a caller-supplied filter can only narrow a mandatory one. A part that is
    itself only an $and is spliced in, so combining never deepens the filter more than one level."""
    parts: list[Filter] = []
    for f in filters:
        if f and set(f) == {"$and"} and isinstance(f["$and"], list):
            parts.extend(f["$and"])
        elif f:
            parts.append(f)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return {"$and": parts}


_CLI_RE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(!=|>=|<=|=|>|<)\s*([^=<>!].*?)?\s*$", re.S)
_CLI_OPS = {"=": "$eq", "!=": "$ne", ">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte"}


def parse_cli(expressions: list[str]) -> Filter | None:
    """Parse CLI filters: `key=value`, `key!=value`, `key>=3`, `key=a,b` (any of), or a JSON object."""
    parts: list[Filter] = []
    for expr in expressions:
        if expr.lstrip().startswith("{"):
            try:
                obj = json.loads(expr)
            except json.JSONDecodeError as exc:
                raise FilterSyntaxError(f"filter {expr!r} is not valid JSON: {exc.msg} at column {exc.colno}") from None
            parts.append(validate(obj))
            continue
        m = _CLI_RE.match(expr)
        if not m or not m.group(3):
            raise FilterSyntaxError(
                f"cannot read filter {expr!r}; write key=value, key!=value, key>=number, key=a,b "
                'or a JSON filter such as \'{"page": {"$gte": 2}}\''
            )
        key, op, raw = m.groups()
        if op == "=" and "," in raw:
            parts.append({key: {"$in": [_coerce(v.strip()) for v in raw.split(",") if v.strip()]}})
            continue
        val = _coerce(raw)
        if op in ("<", "<=", ">", ">=") and (isinstance(val, bool) or not isinstance(val, (int, float))):
            raise FilterSyntaxError(f"filter {expr!r}: {op} needs a number, got {raw!r}")
        parts.append({key: {_CLI_OPS[op]: val}})
    return validate(combine(*parts)) if parts else None


def _coerce(raw: str) -> str | int | float | bool:
    if raw in ("true", "false"):
        return raw == "true"
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw.strip("\"'")
