"""Pinecone's metadata filter language: validation and evaluation.

Supported: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or, and the implicit form {"field": value}.
Semantics follow Pinecone: a list-valued field matches $eq/$in when any element matches, and $ne/$nin
when no element does; range operators take numbers only; a missing field fails every test except
$ne, $nin and {"$exists": false}.

Two evaluators with one meaning: `matches` tests one record's metadata (the reference, and what small indexes
use), `compile_mask` turns a filter into one numpy boolean mask over columnar metadata (`ValueColumn`), so
filtering a million records costs a few array operations instead of a million calls.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from citerag.documents.text import encodable, has_lone_surrogate
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
        if has_lone_surrogate(key):
            raise FilterSyntaxError(f"a field name at {_path} holds half of a character (a lone UTF-16 surrogate)")
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
        _validate_scalar(val, where)
    else:
        _validate_scalar(val, where)


def _validate_scalar(val: Any, where: str) -> None:
    if val is None or not isinstance(val, (str, int, float, bool)):
        raise FilterSyntaxError(f"{where} needs a string, number or boolean, got {type(val).__name__}")
    if isinstance(val, str) and len(val) > MAX_TEXT:
        raise FilterSyntaxError(f"{where} is longer than {MAX_TEXT} characters")
    if isinstance(val, str) and has_lone_surrogate(val):
        raise FilterSyntaxError(f"{where} holds half of a character (a lone UTF-16 surrogate escape)")
    # NaN matches nothing and compares as nothing; JSON has no infinity (Python's json reads "Infinity" and "1e400"
    # as one, and the Pinecone SDK would send either as null): refuse both.
    if isinstance(val, float) and not math.isfinite(val):
        raise FilterSyntaxError(f"{where} is not a finite number")


def fields(flt: Any) -> set[str]:
    """The metadata keys a parsed filter tests ($and/$or nested)."""
    found: set[str] = set()
    if isinstance(flt, dict):
        for key, val in flt.items():
            if key in ("$and", "$or") and isinstance(val, list):
                for part in val:
                    found |= fields(part)
            elif not key.startswith("$"):
                found.add(key)
    return found


def unknown_keys(flt: Any, known: Iterable[str]) -> str | None:
    """What to say when a filter tests a key no document has (it matches nothing, which read as "nothing in the
    documents is relevant"), naming the keys there are; None when every key is known."""
    known = set(known)
    unknown = sorted(fields(flt) - known)
    if not unknown:
        return None
    return (f"no document has the metadata key {', '.join(repr(k) for k in unknown)}; known keys: "
            f"{', '.join(sorted(known)) or '(none)'}")


def _short(name: Any) -> str:
    """A name the caller wrote, as a message may echo it: bounded, and writable as UTF-8 (half a character is
    U+FFFD)."""
    text = encodable(str(name))
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


# --- compiled filters over columnar metadata ---------------------------------------------------------------------

def scalar_kind(v: Any) -> str | None:
    """The kind a filter compares by: booleans, numbers and strings never equal each other; anything else (null,
    nested lists, objects) equals nothing and is no number."""
    if isinstance(v, bool):
        return "b"
    if isinstance(v, (int, float)):
        return "n"
    if isinstance(v, str):
        return "s"
    return None


def elements(value: Any) -> list[Any]:
    """The scalar elements a filter tests in a metadata value (a list's elements, or the value itself)."""
    return [v for v in (value if isinstance(value, list) else [value]) if scalar_kind(v)]


class Column(Protocol):
    """One metadata key over all rows of an index, as a compiled filter reads it."""

    def mask(self, op: str, arg: Any) -> np.ndarray:
        """Rows for which `_test(op, arg, value)` holds (a bool array)."""


# Above 2**53 a float64 no longer holds every integer, so comparisons there are done on the Python values.
_EXACT_INT = 2**53


class ValueColumn:
    """A dictionary-encoded metadata key: which rows have it (`present`), and each scalar element of each row's
    value as (row, code) pairs into `values`, the key's distinct elements. A scalar field has one pair per row,
    a list field one per element. Each leaf test is evaluated once per distinct value, then spread to rows."""

    def __init__(self, n_rows: int, present: np.ndarray, elem_rows: np.ndarray, elem_codes: np.ndarray,
                 values: Sequence[Any], *, lookup: dict[tuple[str, Any], int] | None = None,
                 n_values: int | None = None, single: bool | None = None) -> None:
        """`values` may be shared with newer columns of the same key and grow (`n_values` is this column's share);
        `lookup` maps (scalar_kind(v), v) to v's code (built here when not given); `single`: no row has two
        elements (found here when not given)."""
        self.n_rows = n_rows
        self.present = present
        self.elem_rows = elem_rows
        self.elem_codes = elem_codes
        self.values = values
        self.n_values = len(values) if n_values is None else n_values
        self._lookup = lookup
        self._numeric: tuple[np.ndarray, np.ndarray, bool] | None = None
        self._row_code: np.ndarray | None = None
        self._single_known = single

    @classmethod
    def from_values(cls, row_values: Sequence[Any]) -> ValueColumn:
        """From each row's value (`MISSING` where the row lacks the key); for tests and small indexes."""
        codes: dict[tuple[str, Any], int] = {}
        values: list[Any] = []
        rows, cods = [], []
        present = np.zeros(len(row_values), dtype=bool)
        for r, value in enumerate(row_values):
            if value is MISSING:
                continue
            present[r] = True
            for v in elements(value):
                key = (scalar_kind(v), v)
                if key not in codes:
                    codes[key] = len(values)
                    values.append(v)
                rows.append(r)
                cods.append(codes[key])
        return cls(len(row_values), present, np.asarray(rows, dtype=np.int64), np.asarray(cods, dtype=np.int64),
                   values)

    # --- per distinct value -----------------------------------------------------------------------------------

    def _codes_equal(self, arg: Any) -> list[int]:
        if self._lookup is None:
            lookup: dict[tuple[str, Any], int] = {}
            for c in range(self.n_values):
                v = self.values[c]
                lookup.setdefault((scalar_kind(v), v), c)  # type: ignore[arg-type]
            self._lookup = lookup
        kind = scalar_kind(arg)
        if kind is None:
            return []
        code = self._lookup.get((kind, arg))
        if code is None or code >= self.n_values:
            return []
        # Equal keys (1 and 1.0) share a code; NaN equals nothing, not even itself.
        return [] if isinstance(arg, float) and math.isnan(arg) else [code]

    def _value_mask(self, op: str, arg: Any) -> np.ndarray:
        vm = np.zeros(self.n_values, dtype=bool)
        if op in ("$eq", "$ne"):
            vm[self._codes_equal(arg)] = True
        elif op in ("$in", "$nin"):
            for a in arg:
                vm[self._codes_equal(a)] = True
        else:
            codes, nums, exact = self._numbers()
            big = isinstance(arg, int) and abs(arg) > _EXACT_INT
            if exact and not big:
                cmp = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}[op]
                vm[codes[cmp(nums, float(arg))]] = True
            else:
                for c in codes.tolist():
                    vm[c] = _test(op, arg, self.values[c])
        return vm

    def _numbers(self) -> tuple[np.ndarray, np.ndarray, bool]:
        if self._numeric is None:
            codes = [c for c in range(self.n_values) if scalar_kind(self.values[c]) == "n"]
            nums = [self.values[c] for c in codes]
            exact = all(not isinstance(v, int) or abs(v) <= _EXACT_INT for v in nums)
            self._numeric = (np.asarray(codes, dtype=np.int64), np.asarray(nums, dtype=np.float64), exact)
        return self._numeric

    # --- spread to rows ---------------------------------------------------------------------------------------

    def _any(self, vm: np.ndarray) -> np.ndarray:
        """Rows with at least one element whose value is marked in vm."""
        if not vm.any():
            return np.zeros(self.n_rows, dtype=bool)
        row_code = self._single()
        if row_code is not None:
            hit = np.flatnonzero(vm)
            if len(hit) == 1:  # one value (a tenant, a language): one comparison per row
                return row_code == hit[0]
            # One element per row at most: a gather, with code -1 (no element) reading the appended False.
            return np.append(vm, False)[row_code]
        out = np.zeros(self.n_rows, dtype=bool)
        out[self.elem_rows[vm[self.elem_codes]]] = True
        return out

    def _single(self) -> np.ndarray | None:
        if self._row_code is None:
            single = self._single_known
            if single is None:
                single = not (len(self.elem_rows) and np.any(np.bincount(self.elem_rows, minlength=self.n_rows) > 1))
            if not single:
                self._row_code = np.zeros(0, dtype=np.int32)  # marks "some row has several elements"
            else:
                row_code = np.full(self.n_rows, -1, dtype=np.int32)
                row_code[self.elem_rows] = self.elem_codes
                self._row_code = row_code
        return self._row_code if len(self._row_code) == self.n_rows else None

    def mask(self, op: str, arg: Any) -> np.ndarray:
        if op == "$exists":
            return self.present.copy() if arg else ~self.present
        hit = self._any(self._value_mask(op, arg))
        return ~hit if op in ("$ne", "$nin") else hit


MISSING: Any = _MISSING


def compile_mask(flt: Filter | None, column: Callable[[str], Column | None], n_rows: int) -> np.ndarray:
    """The rows of an index a (validated) filter keeps, as one bool array; `column(key)` gives a key's column,
    None when no row has the key. Same meaning as `matches` on every row (tests/test_filters.py checks it)."""
    out = np.ones(n_rows, dtype=bool)
    if not flt:
        return out
    for key, cond in flt.items():
        if key == "$and":
            for sub in cond:
                out &= compile_mask(sub, column, n_rows)
        elif key == "$or":
            any_of = np.zeros(n_rows, dtype=bool)
            for sub in cond:
                any_of |= compile_mask(sub, column, n_rows)
            out &= any_of
        else:
            col = column(key)
            for op, arg in (cond if isinstance(cond, dict) else {"$eq": cond}).items():
                if col is None:  # the key is missing everywhere
                    if not _test(op, arg, _MISSING):
                        out[:] = False
                else:
                    out &= col.mask(op, arg)
    return out


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
