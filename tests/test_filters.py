from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citerag.errors import FilterSyntaxError
from citerag.search.filters import combine, matches, parse_cli, validate

MD = {"page": 3, "lang": "ja", "tags": ["manual", "faq"], "public": True, "score": 0.5}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"page": 3}, True),
        ({"page": {"$eq": 4}}, False),
        ({"page": {"$ne": 4}}, True),
        ({"page": {"$gt": 2, "$lte": 3}}, True),
        ({"page": {"$lt": 3}}, False),
        ({"lang": {"$in": ["en", "ja"]}}, True),
        ({"lang": {"$nin": ["ja"]}}, False),
        ({"tags": "faq"}, True),
        ({"tags": {"$nin": ["faq"]}}, False),
        ({"missing": {"$exists": False}}, True),
        ({"missing": {"$ne": 1}}, True),
        ({"missing": {"$eq": 1}}, False),
        ({"public": True}, True),
        ({"public": 1}, False),  # booleans and numbers stay apart
        ({"$or": [{"page": 1}, {"lang": "ja"}]}, True),
        ({"$and": [{"page": 3}, {"lang": "en"}]}, False),
    ],
)
def test_operators(flt, expected):
    assert matches(validate(flt), MD) is expected


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ({"page": {"$regex": "x"}}, "unknown operator"),
        ({"$not": {"page": 1}}, "unknown operator"),
        ({"page": {"$gt": "3"}}, "needs a number"),
        ({"page": {"$in": 3}}, "needs a list"),
        ({"page": {"$exists": "yes"}}, "true or false"),
        ({"$and": []}, "non-empty list"),
        ({"page": None}, "string, number or boolean"),
        ({"page": {}}, "no operator"),
        ([1, 2], "must be an object"),
    ],
)
def test_invalid_filters_name_the_problem(flt, message):
    with pytest.raises(FilterSyntaxError, match=message):
        validate(flt)


def test_cli_filters():
    assert parse_cli(["lang=ja"]) == {"lang": {"$eq": "ja"}}
    assert parse_cli(["page>=2", "lang=ja,en"]) == {
        "$and": [{"page": {"$gte": 2}}, {"lang": {"$in": ["ja", "en"]}}]
    }
    assert parse_cli(['{"page": {"$lt": 3}}']) == {"page": {"$lt": 3}}
    for bad in ["lang", "page>=two", "=x", '{"page": ', "page=="]:
        with pytest.raises(FilterSyntaxError):
            parse_cli([bad])


def test_combine_only_narrows():
    assert combine({"tenant": "a"}, None) == {"tenant": "a"}
    assert combine({"tenant": "a"}, {"page": 1}) == {"$and": [{"tenant": "a"}, {"page": 1}]}


# --- property test against a straightforward reference ---------------------------------------------------

scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "c"]), st.booleans())
fields = st.sampled_from(["x", "y", "z"])
metadata = st.dictionaries(fields, st.one_of(scalars, st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)))
ops = st.one_of(
    st.tuples(st.sampled_from(["$eq", "$ne"]), scalars),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), st.integers(-3, 3)),
    st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(scalars, min_size=1, max_size=3)),
    st.tuples(st.just("$exists"), st.booleans()),
)
leaf = st.builds(lambda f, o: {f: {o[0]: o[1]}}, fields, ops)
filters_st = st.recursive(
    leaf,
    lambda children: st.builds(lambda k, xs: {k: xs}, st.sampled_from(["$and", "$or"]),
                               st.lists(children, min_size=1, max_size=3)),
    max_leaves=6,
)


def _same(a, b):
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def reference(flt, md):
    """Written independently and plainly: one branch per operator, lists expanded explicitly."""
    if "$and" in flt:
        return all(reference(f, md) for f in flt["$and"])
    if "$or" in flt:
        return any(reference(f, md) for f in flt["$or"])
    (field, cond), = flt.items()
    (op, arg), = cond.items()
    if op == "$exists":
        return (field in md) == arg
    if field not in md:
        return op in ("$ne", "$nin")
    vals = md[field] if isinstance(md[field], list) else [md[field]]
    if op == "$eq":
        return any(_same(v, arg) for v in vals)
    if op == "$ne":
        return all(not _same(v, arg) for v in vals)
    if op == "$in":
        return any(_same(v, a) for v in vals for a in arg)
    if op == "$nin":
        return all(not _same(v, a) for v in vals for a in arg)
    nums = [v for v in vals if type(v) in (int, float)]
    return {
        "$gt": any(v > arg for v in nums), "$gte": any(v >= arg for v in nums),
        "$lt": any(v < arg for v in nums), "$lte": any(v <= arg for v in nums),
    }[op]


@settings(max_examples=1000, deadline=None)
@given(filters_st, metadata)
def test_filter_evaluator_agrees_with_reference(flt, md):
    assert matches(validate(flt), md) == reference(flt, md)
