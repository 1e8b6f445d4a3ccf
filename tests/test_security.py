"""Hostile input, access control and secrets: one test per finding of the attack pass, each failing on the code
before the fix. Fail closed, stay up, leak nothing."""

from __future__ import annotations

import copy
import json
import logging
import os
import stat
import sys
import threading

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from citerag.components import Components
from citerag.errors import FilterSyntaxError, QueryError
from citerag.handlers import ingest as ingest_handler
from citerag.handlers import search as search_handler
from citerag.handlers.local import LocalContext
from citerag.search import filters
from citerag.search.resilience import CircuitBreaker
from citerag.settings import Settings

from conftest import BUCKET, SAMPLES, boto3_pointed_at
from handler_support import assert_action_group_response, event, q, search_event

# --- availability ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tenants(tmp_path_factory):
    """acme's documents, globex's documents and public ones (no tenant), in one index."""
    c = Components(Settings(data_dir=tmp_path_factory.mktemp("tenants"), embedder="hashing"))
    c.ingestor({"tenant": "acme"}).ingest_paths([SAMPLES / "faq-en.md"])
    c.ingestor({"tenant": "globex"}).ingest_paths([SAMPLES / "faq-ja.md"])
    c.ingestor().ingest_paths([SAMPLES / "kumo-pure-300-manual-en.pdf"])
    return c


def _search(comps, params, session=None):
    resp = search_handler.build(comps)(search_event(params, session=session or {}), LocalContext())
    return resp, assert_action_group_response(resp)


def _nested(depth: int) -> dict:
    flt: dict = {"lang": "en"}
    for _ in range(depth):
        flt = {"$and": [flt]}
    return flt


def test_a_deeply_nested_model_filter_is_a_reprompt_and_never_trips_the_breakers(tenants):
    for b in tenants.breakers.values():
        b.reset()
    for depth in (30, 400) * 4:  # deeper than the language allows, then longer than a filter may be
        deep = json.dumps(_nested(depth))
        resp, body = _search(tenants, [q("filter"), {"name": "filters", "type": "string", "value": deep}])
        assert resp["response"]["functionResponse"]["responseState"] == "REPROMPT"
        assert ("nest" if depth == 30 else "limit") in body["hint"] and "Recursion" not in json.dumps(body)
    assert {b.state for b in tenants.breakers.values()} == {"closed"}
    _, body = _search(tenants, [q("warranty")])  # other sessions are unaffected
    assert body["results"]


def test_a_filter_string_too_deep_for_the_json_parser_is_a_reprompt(tenants):
    resp, body = _search(tenants, [q("filter"), {"name": "filters", "type": "string", "value": "[" * 3000}])
    assert resp["response"]["functionResponse"]["responseState"] == "REPROMPT"
    assert "filters" in body["hint"]


def test_caller_mistakes_never_count_toward_a_breaker():
    breaker = CircuitBreaker("dense", threshold=2)
    for exc in (QueryError("empty"), FilterSyntaxError("bad")) * 5:
        with pytest.raises(type(exc)):
            breaker.call(lambda exc=exc: (_ for _ in ()).throw(exc))
    assert breaker.state == "closed"


# The filter language to its documented bounds: depth MAX_DEPTH, MAX_CONDITIONS, MAX_VALUES, MAX_TEXT.
leaf = st.builds(lambda k, v: {k: v}, st.sampled_from(["a", "b", "page"]), st.one_of(st.integers(0, 9), st.text(
    alphabet="xyz", max_size=5), st.fixed_dictionaries({"$in": st.lists(st.integers(0, 9), max_size=5)})))


def _depth(flt) -> int:
    subs = [s for k, v in flt.items() if k in ("$and", "$or") for s in v]
    return 1 + max(map(_depth, subs)) if subs else 0


def _conditions(flt) -> int:
    return sum(_conditions(s) if k in ("$and", "$or") else 1 for k, v in flt.items() for s in (v if k in (
        "$and", "$or") else [None]))


trees = st.recursive(leaf, lambda c: st.builds(lambda op, xs: {op: xs}, st.sampled_from(["$and", "$or"]),
                                                st.lists(c, min_size=1, max_size=3)), max_leaves=80)


@settings(max_examples=400, deadline=None)
@given(trees)
def test_the_validator_accepts_exactly_the_language_within_its_bounds(flt):
    within = _depth(flt) <= filters.MAX_DEPTH and _conditions(flt) <= filters.MAX_CONDITIONS
    try:
        filters.validate(flt)
        accepted = True
    except FilterSyntaxError as exc:
        accepted = False
        assert "nest" in str(exc) or "conditions" in str(exc)
    assert accepted == within


def test_oversized_lists_and_strings_are_refused_with_the_limit():
    with pytest.raises(FilterSyntaxError, match="limit is 100"):
        filters.validate({"a": {"$in": list(range(101))}})
    with pytest.raises(FilterSyntaxError, match="longer than 512"):
        filters.validate({"a": "x" * 513})
    with pytest.raises(FilterSyntaxError, match="not a finite number"):
        filters.validate({"a": float("nan")})


# --- access control ----------------------------------------------------------------------------------------------


def _uris(body) -> set[str]:
    return {r["uri"].rsplit("/", 1)[-1] for r in body["results"]}


@pytest.mark.parametrize("session", [{}, {"tenant": ""}, {"tenant": "   "}, {"tenant": "null"}, {"tenant": "None"}])
def test_a_session_without_a_valid_tenant_sees_only_public_documents(tenants, session):
    for query in ("warranty", "HEPA filter", "フィルター"):
        _, body = _search(tenants, [q(query)], session)
        assert _uris(body) <= {"kumo-pure-300-manual-en.pdf"}, (session, query)


def test_a_tenant_sees_its_own_and_public_documents_never_another_tenants(tenants):
    seen = set()
    for query in ("warranty", "HEPA filter", "フィルター 交換"):
        _, body = _search(tenants, [q(query)], {"tenant": "acme"})
        seen |= _uris(body)
    assert "faq-ja.md" not in seen and "faq-en.md" in seen


def test_an_invalid_tenant_id_is_denied_not_widened(tenants):
    _, body = _search(tenants, [q("warranty")], {"tenant": '{"$ne": "x"}'})
    assert body["results"] == [] and "not a valid id" in body["error"]


def test_without_public_documents_a_session_needs_a_tenant(tmp_path):
    c = Components(Settings(data_dir=tmp_path, embedder="hashing", public_without_tenant=False))
    c.ingestor().ingest_paths([SAMPLES / "faq-en.md"])
    _, body = _search(c, [q("warranty")])
    assert body["results"] == [] and "no 'tenant'" in body["error"]


def test_reingesting_with_other_access_metadata_replaces_the_document(fast, tmp_path):
    path = tmp_path / "policy.md"
    path.write_text("# Policy\n\nRefunds take 14 days.\n", encoding="utf-8")
    assert fast.ingestor({"tenant": "acme"}).ingest_path(path).status == "added"
    assert fast.ingestor({"tenant": "acme"}).ingest_path(path).status == "unchanged"
    assert fast.ingestor({"tenant": "globex"}).ingest_path(path).status == "replaced"
    hits = fast.index.query_dense(fast.embedder.embed_query("refunds"), 5)
    assert {m.metadata["tenant"] for m in hits} == {"globex"}


@pytest.fixture
def s3env(s3_ingest):
    return s3_ingest


def _notification(key: str, name: str = "ObjectCreated:Put", **obj) -> str:
    rec = copy.deepcopy(json.loads(event("ingest-created.json")["Records"][0]["body"])["Records"][0])
    rec["eventName"] = name
    rec["s3"]["bucket"]["name"] = BUCKET
    rec["s3"]["object"]["key"] = key
    rec["s3"]["object"].update(obj)
    return json.dumps({"Records": [rec]})


def _deliver(env, *bodies) -> dict:
    base = event("ingest-created.json")["Records"][0]
    records = [{**copy.deepcopy(base), "messageId": f"m{i}", "body": b} for i, b in enumerate(bodies)]
    return ingest_handler.build(env["comps"])({"Records": records}, LocalContext(function_name="citerag-ingest"))


def _dead(env) -> list[dict]:
    out = env["sqs"].receive_message(QueueUrl=env["dlq"], MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return out.get("Messages", [])


def _docs(env) -> set[str]:
    return {d.source_uri for d in env["comps"].index.list_documents()}


def test_a_stale_removal_after_a_newer_upload_keeps_the_live_document(s3env):
    s3env["s3"].put_object(Bucket=BUCKET, Key="guide.md", Body=b"# Guide\n\nVersion two.\n")
    # Delivered out of order: the newer ObjectCreated first, then the older ObjectRemoved.
    _deliver(s3env, _notification("guide.md", sequencer="0055"))
    _deliver(s3env, _notification("guide.md", "ObjectRemoved:Delete", sequencer="0044"))
    assert f"s3://{BUCKET}/guide.md" in _docs(s3env)


def test_a_copy_in_place_with_another_tenant_replaces_the_access_metadata(s3env):
    body = b"# Guide\n\nVersion one.\n"
    s3env["s3"].put_object(Bucket=BUCKET, Key="guide.md", Body=body, Metadata={"tenant": "acme"})
    _deliver(s3env, _notification("guide.md"))
    s3env["s3"].put_object(Bucket=BUCKET, Key="guide.md", Body=body, Metadata={"tenant": "globex"})
    _deliver(s3env, _notification("guide.md"))
    idx = s3env["comps"].index
    hits = idx.query_dense(s3env["comps"].embedder.embed_query("guide"), 5)
    assert {m.metadata["tenant"] for m in hits} == {"globex"}


@pytest.mark.parametrize("field", [{"size": "12"}, {"key": 12}, {"sequencer": 7}])
def test_wrongly_typed_fields_go_to_the_dlq_at_once_with_a_reason(s3env, field):
    body = json.loads(_notification("guide.md"))
    body["Records"][0]["s3"]["object"].update(field)
    assert _deliver(s3env, json.dumps(body)) == {"batchItemFailures": []}  # not retried as transient
    (dead,) = _dead(s3env)
    assert dead["MessageAttributes"]["reason"]["StringValue"].startswith("record 0")


def test_wrong_structure_is_dead_lettered_with_a_reason(s3env):
    body = json.loads(_notification("guide.md"))
    body["Records"][0]["s3"]["bucket"] = "not-an-object"
    assert _deliver(s3env, json.dumps(body)) == {"batchItemFailures": []}
    assert "s3.bucket" in _dead(s3env)[0]["MessageAttributes"]["reason"]["StringValue"]


def test_folder_placeholders_and_empty_objects_are_not_failures(s3env):
    s3env["s3"].put_object(Bucket=BUCKET, Key="manuals/", Body=b"")
    s3env["s3"].put_object(Bucket=BUCKET, Key="empty.md", Body=b"")
    assert _deliver(s3env, _notification("manuals/", size=0), _notification("empty.md", size=0)) == {
        "batchItemFailures": []}
    assert _dead(s3env) == []


def test_a_document_over_the_chunk_cap_is_refused_with_the_limit(tmp_path):
    c = Components(Settings(data_dir=tmp_path, embedder="hashing", max_chunks_per_document=5))
    path = tmp_path / "long.txt"
    path.write_text("A sentence about filters. " * 400, encoding="utf-8")
    r = c.ingestor().ingest_path(path)
    assert r.status == "failed" and "limit is 5" in r.reason and c.index.list_documents() == []


# --- the file system -----------------------------------------------------------------------------------------


def test_links_out_of_the_folder_are_not_followed(fast, tmp_path):
    secret = tmp_path / "outside" / "credentials.txt"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = TOPSECRETVALUE123\n", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nHello.\n", encoding="utf-8")
    (docs / "creds.txt").symlink_to(secret)
    (docs / "linked").symlink_to(secret.parent, target_is_directory=True)
    results = fast.ingestor().ingest_paths([docs])
    assert {r.status for r in results if "creds" in r.source} == {"skipped"}
    assert all("linked" not in r.source for r in results if r.status == "added")
    hits = fast.pipeline().search("aws secret access key", top_k=5).hits
    assert not any("TOPSECRETVALUE123" in h.text for h in hits)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_not_read_forever(fast, tmp_path):
    named = tmp_path / "zero.txt"  # a supported name on a file that never ends
    named.symlink_to("/dev/zero")
    # Reading it to its end would never return (pytest's timeout fails the test then); no clock is asserted here.
    (r,) = fast.ingestor().ingest_paths([named])  # named by the user: the link is followed, to the device
    assert r.status == "failed" and r.source == "file:///dev/zero"
    from pathlib import Path

    from citerag.errors import DocumentError
    from citerag.ingestion.files import read_regular_file

    with pytest.raises(DocumentError, match="regular file"):  # opened, never read to its end
        read_regular_file(Path("/dev/zero"), 1_000_000)


def test_a_fifo_is_skipped_instead_of_hanging(fast, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    os.mkfifo(docs / "pipe.txt")
    (docs / "guide.md").write_text("# Guide\n\nHello.\n", encoding="utf-8")
    out: list = []
    worker = threading.Thread(target=lambda: out.append(fast.ingestor().ingest_paths([docs])), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "ingest hung on a FIFO"
    by_name = {r.source.rsplit("/", 1)[-1]: r for r in out[0]}
    assert by_name["pipe.txt"].status == "failed" and "regular file" in by_name["pipe.txt"].reason
    assert by_name["guide.md"].status == "added"
    assert stat.S_ISFIFO(os.stat(docs / "pipe.txt").st_mode)


def test_a_full_disk_stops_the_batch_with_a_summary_not_a_traceback(tmp_path):
    from typer.testing import CliRunner

    from citerag.cli import app

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\n" + "Some text about filters. " * 200, encoding="utf-8")
    index = tmp_path / "i.sqlite"
    c = Components(Settings(data_dir=tmp_path, index_path=index, embedder="hashing"))
    c.ingestor().ingest_path(docs / "note0.md")
    pages = c.index._conn.execute("PRAGMA page_count").fetchone()[0]
    c.index.close()

    import sqlite3

    real_connect = sqlite3.connect

    def tiny_disk(*args, **kwargs):  # every connection to the index sees a full disk
        conn = real_connect(*args, **kwargs)
        if str(args[0]) == str(index):
            # (not one page more: these notes repeat one sentence, and compressed, three fit in two pages)
            conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", tiny_disk)
        mp.setenv("CITERAG_EMBEDDER", "hashing")
        r = runner.invoke(app, ["ingest", str(docs), "--index", str(index), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    out = json.loads(r.stdout)
    reasons = [x["reason"] or "" for x in out["results"]]
    assert any("disk" in x and "full" in x for x in reasons)
    assert out["summary"]["unchanged"] == 1


# --- logs and messages -------------------------------------------------------------------------------------------


def test_debug_logging_never_shows_the_pinecone_key_or_the_session_token(monkeypatch, caplog):
    from citerag.adapters import aws

    monkeypatch.setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLETOKEN0123456789")
    with mock_aws():
        # The test's own setup, before DEBUG: run alone, its create_secret request was the only leak.
        boto3.client("secretsmanager", region_name="ap-northeast-1").create_secret(
            Name="citerag/pinecone", SecretString='{"apiKey": "pcsk_live_DEBUGSECRET42"}')
        caplog.set_level(logging.DEBUG)  # the root logger at DEBUG, as a Lambda with LOG_LEVEL=DEBUG has it
        for name in ("botocore", "urllib3", "aws_lambda_powertools"):
            logging.getLogger(name).setLevel(logging.DEBUG)
        from aws_lambda_powertools.utilities import parameters

        parameters.clear_caches()
        assert aws.pinecone_api_key("citerag/pinecone") == "pcsk_live_DEBUGSECRET42"
        logging.getLogger("citerag.test").info("key is %s", "pcsk_live_DEBUGSECRET42")
    assert "DEBUGSECRET42" not in caplog.text
    assert "EXAMPLETOKEN" not in caplog.text


def test_access_denied_reaches_the_model_without_account_or_role(monkeypatch, fast):
    from citerag.adapters.titan import TitanEmbedder
    from citerag.testing.doubles import BedrockRuntimeDouble

    arn = "arn:aws:sts::123456789012:assumed-role/citerag-Search-ABC/citerag-Search"
    with boto3_pointed_at(BedrockRuntimeDouble(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", monkeypatch) as d:
        d.behaviour.fail_status = 403
        d.behaviour.fail_headers = {"x-amzn-ErrorType": "AccessDeniedException"}
        d.behaviour.fail_body = {"message": f"User: {arn} is not authorized to perform: bedrock:InvokeModel"}
        from citerag.adapters import aws

        fast.ingestor().ingest_paths([SAMPLES / "faq-en.md"])
        fast.embedder.inner = TitanEmbedder(aws.client("bedrock-runtime"), dimensions=256)
        monkeypatch.setattr(fast.index, "query_sparse", lambda *a, **k: (_ for _ in ()).throw(ConnectionError()))
        _, body = _search(fast, [q("HEPA filter")])
    text = json.dumps(body)
    assert "search unavailable" in body["error"] and "AccessDenied" in body["error"]
    assert "arn:" not in text and "123456789012" not in text and "citerag-Search" not in text


def test_a_huge_function_name_is_not_echoed(tenants, caplog):
    ev = event("search-basic.json")
    ev["function"] = "x" * 1_000_000
    resp = search_handler.build(tenants)(ev, LocalContext())
    assert len(json.dumps(resp)) < 2_000
    assert resp["response"]["function"] == "unknown"
    assert all(len(r.getMessage()) < 2_000 for r in caplog.records)


def test_the_deployed_source_id_key_is_a_generated_secret_never_a_known_value():
    pytest.importorskip("aws_cdk")
    from infra.app import build_app

    app = build_app({"aws:cdk:bundling-stacks": []})
    template = app.synth().get_stack_by_name("Citerag").template
    secrets = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::SecretsManager::Secret"]
    generated = [s for s in secrets if s.get("GenerateSecretString", {}).get("GenerateStringKey") == "current"]
    assert len(generated) == 1 and len(secrets) == 2
    envs = [r["Properties"].get("Environment", {}).get("Variables", {}) for r in template["Resources"].values()
            if r["Type"] == "AWS::Lambda::Function"]
    assert not any("CITERAG_SOURCE_ID_KEY" in e for e in envs)
    readers = [e for e in envs if "CITERAG_SOURCE_ID_KEY_SECRET" in e]
    assert len(readers) == 2  # the search and parser functions


def test_the_local_source_id_key_is_random_and_private(tmp_path):
    a = Components(Settings(data_dir=tmp_path / "a", embedder="hashing")).source_id_keys()
    b = Components(Settings(data_dir=tmp_path / "b", embedder="hashing")).source_id_keys()
    assert a != b and len(a[0]) >= 32
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "source-id.key").st_mode) == 0o600
    assert Components(Settings(data_dir=tmp_path / "a", embedder="hashing")).source_id_keys() == a


def test_a_rotated_key_still_verifies_ids_signed_before_the_rotation(monkeypatch):
    from citerag.citations import source_ids
    from citerag.citations.parser import ParserConfig, parse

    old, new = "o" * 32, "n" * 32
    sid = source_ids.make(old, "abc", 1)
    raw = f"<answer><answer_part><text>x</text><sources><source>{sid}</source></sources></answer_part></answer>"
    ev = {"messageVersion": "1.0", "promptType": "ORCHESTRATION", "invokeModelRawResponse": raw}
    rotated = parse(ev, ParserConfig(source_id_key=new, previous_source_id_keys=[old]))
    assert rotated["orchestrationParsedResponse"]["responseDetails"]["invocationType"] == "FINISH"
    unknown = parse(ev, ParserConfig(source_id_key=new))
    assert "parsingErrorDetails" in unknown["orchestrationParsedResponse"]


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("POSIX file-system behaviour")


# --- the terminal (issue 12, E1) -------------------------------------------------------------------------------


def test_markup_and_escape_sequences_in_documents_never_reach_the_terminal(tmp_path):
    from typer.testing import CliRunner

    from citerag.cli import app

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide [bold red]x.md").write_text(
        "# Guide [/bold] \x1b[31mred\x1b[0m\n\nThe filter [/] lasts [link=file:///etc/passwd]six[/link] months."
        "\x1b]0;pwned\x07\n", encoding="utf-8")
    # File names hold escapes too: `ingest` printed them raw (the screen cleared, the window title changed).
    (folder / "ok\x1b[31mred.txt").write_text("The pump needs a new seal every year.\n", encoding="utf-8")
    (folder / "bad\x1b]0;OWNED\x07\x1b[2Jx.txt").write_text("", encoding="utf-8")
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()
    r = runner.invoke(app, ["ingest", str(folder)], env=env)
    assert r.exit_code == 0 and "ok[31mred.txt" in r.output and "bad]0;OWNED[2Jx.txt: file is empty" in r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    for args in (["search", "filter months"], ["ask", "How long does the filter last?", "--agent", "none"],
                 ["ask", "How long does the filter last?"]):
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 0, r.output  # was: MarkupError, closing tag '[/]'
        assert "\x1b" not in r.output and "\x07" not in r.output
        if args[0] == "search":
            assert "[/bold]" in r.output and "[/]" in r.output  # shown as text, not interpreted


# --- a second attack pass: half characters, numbers JSON cannot hold, ids, sizes, turns ----------------------------


def test_half_a_character_in_a_query_is_a_reprompt_and_never_trips_the_breakers(tenants):
    # "\ud83d" is valid JSON (an emoji cut in half at the model's length limit); no UTF-8 encoder writes it, so it
    # failed the embedding call, and five such calls opened the breaker for every session of the container.
    for b in tenants.breakers.values():
        b.reset()
    half = json.loads('"HEPA filter \\ud83d"')
    for _ in range(6):
        resp, body = _search(tenants, [q(half)])
        assert resp["response"]["functionResponse"]["responseState"] == "REPROMPT"
        assert "half of a character" in body["hint"]
        json.dumps(resp, ensure_ascii=False).encode("utf-8")  # the reply itself is writable
    assert {b.state for b in tenants.breakers.values()} == {"closed"}
    _, body = _search(tenants, [q("warranty")])
    assert body["results"] and not body.get("notes")


@pytest.mark.parametrize("value", ['{"page": {"$gte": NaN}}', '{"page": {"$lt": -Infinity}}', '{"page": 1e400}',
                                   '{"lang": "en\\ud800"}', '{"lang": {"$e\\ud83dq": "en"}}'])
def test_numbers_json_cannot_hold_and_half_characters_in_filters_are_refused(tenants, value):
    # Python's json reads NaN, Infinity and 1e400; the Pinecone SDK would send each as null, and the local index
    # matched nothing, telling the model nothing was relevant.
    from awslambdaric.lambda_runtime_marshaller import to_json

    resp, body = _search(tenants, [q("warranty"), {"name": "filters", "type": "string", "value": value}])
    assert resp["response"]["functionResponse"]["responseState"] == "REPROMPT"
    assert "not a valid filter" in body["hint"]
    assert ("finite number" in body["hint"]) + ("half of a character" in body["hint"]) \
        + ("unknown operator" in body["hint"]) == 1
    os.environ["AWS_EXECUTION_ENV"] = "AWS_Lambda_python3.13"
    try:  # an operator name echoed with half a character in it was a reply the runtime could not write
        to_json(resp).encode("utf-8")
    finally:
        del os.environ["AWS_EXECUTION_ENV"]


@pytest.mark.parametrize("forge", ["S\u0661-", "S\uff11-", "S01-"])
def test_an_id_with_other_digits_than_the_one_issued_is_reprompted(forge):
    # `\d` took the Arabic-Indic and full-width "1" for S1, and "S01" verified as S1 too.
    from citerag.citations import source_ids
    from citerag.citations.parser import ParserConfig, parse

    issued = source_ids.make("k" * 16, "abc", 1)
    forged = issued.replace("S1-", forge)
    raw = f"<answer><answer_part><text>Twelve months.</text><sources><source>{forged}</source></sources>" \
          "</answer_part></answer>"
    out = parse({"messageVersion": "1.0", "promptType": "ORCHESTRATION", "invokeModelRawResponse": raw},
                ParserConfig(source_id_key="k" * 16))["orchestrationParsedResponse"]
    assert "which no search returned" in out["parsingErrorDetails"]["repromptResponse"]
    assert source_ids.verify("k" * 16, issued)


def test_the_parsers_reply_is_writable_and_bounded_whatever_the_model_wrote():
    from awslambdaric.lambda_runtime_marshaller import to_json

    from citerag.citations import source_ids
    from citerag.citations.parser import MAX_ASK, ParserConfig, parse

    def orchestration(raw: str) -> dict:
        return parse({"messageVersion": "1.0", "promptType": "ORCHESTRATION", "invokeModelRawResponse": raw},
                     ParserConfig(source_id_key="k" * 16))

    sid = source_ids.make("k" * 16, "abc", 1)
    # Half an emoji in the answer: the runtime writes the reply as UTF-8 (python3.12 on), which failed on it.
    text = f"<answer><answer_part><text>Replace it yearly \\ud83d</text><sources><source>{sid}</source></sources>" \
           "</answer_part></answer>"
    out = orchestration('{"content":[{"type":"text","text":"' + text + '"}],"stop_reason":"end_turn"}')
    final = out["orchestrationParsedResponse"]["responseDetails"]["agentFinalResponse"]["responseText"]
    assert final == "Replace it yearly \ufffd"
    os.environ["AWS_EXECUTION_ENV"] = "AWS_Lambda_python3.13"
    try:
        to_json(out).encode("utf-8")
    finally:
        del os.environ["AWS_EXECUTION_ENV"]
    # What the model wrote is echoed back bounded: a 900,000-character "id", a 15,000-character question.
    bogus = orchestration("<answer><answer_part><text>x</text><sources><source>" + "Z" * 900_000
                          + "</source></sources></answer_part></answer>")
    assert len(bogus["orchestrationParsedResponse"]["parsingErrorDetails"]["repromptResponse"]) < 400
    ask = orchestration("<function_calls><invoke><tool_name>user::askuser</tool_name><parameters><question>"
                        + "Which one? " * 1500 + "</question></parameters></invoke></function_calls>")
    assert len(ask["orchestrationParsedResponse"]["responseDetails"]["agentAskUser"]["responseText"]) <= MAX_ASK
    # A null query is no query, not the query "null".
    null = orchestration('{"content":[{"type":"tool_use","id":"t1","name":"docs__search_documents",'
                         '"input":{"query":null}}],"stop_reason":"tool_use"}')
    assert "needs a <query>" in null["orchestrationParsedResponse"]["parsingErrorDetails"]["repromptResponse"]


def test_session_attributes_that_leave_no_room_for_passages_are_refused_within_the_budget(tenants):
    ev = search_event([q("warranty")])
    ev["sessionAttributes"], ev["promptSessionAttributes"] = {"app": "x" * 12_000}, {"p": "y" * 12_000}
    resp = search_handler.build(tenants)(ev, LocalContext())
    body = assert_action_group_response(resp, budget=25_000)
    assert "together are larger than 16,384 bytes" in body["error"]
    assert resp["sessionAttributes"] == ev["sessionAttributes"]  # the session's own state is kept
    ev["sessionAttributes"], ev["promptSessionAttributes"] = {"app": "x" * 8_000}, {"p": "y" * 8_000}
    body = assert_action_group_response(search_handler.build(tenants)(ev, LocalContext()), budget=25_000)
    assert body["results"]


def test_a_new_question_gets_every_retry_even_after_a_turn_that_ended_mid_retry(tenants):
    # sessionAttributes outlive the turn (botocore bedrock-agent-runtime SessionState: "persist across a session"):
    # the count a turn left behind made the next question's first miss its last.
    handler = search_handler.build(tenants)

    def miss(question: str, session: dict) -> tuple[str, dict]:
        ev = search_event([q("zzqx unknown vocabulary")], session=session)
        ev["inputText"] = question
        resp = handler(ev, LocalContext())
        body = assert_action_group_response(resp)
        return body.get("hint") or body.get("message"), resp["sessionAttributes"]

    session: dict = {}
    for _ in range(2):
        said, session = miss("Who won the 2022 World Cup?", session)
    assert "Attempt 2 of 3" in said
    said, session = miss("What is the capital of Australia?", session)
    assert "Attempt 1 of 3" in said
    said, _ = miss("What is the capital of Australia?", session)
    assert "Attempt 2 of 3" in said


def test_a_loaded_secret_is_withheld_from_tracebacks_and_structured_fields_too():
    # Only the message was cleaned: a secret in an exception (logged by logger.exception, as the handlers log every
    # failure) or in an `extra` field was written whole.
    import io

    from aws_lambda_powertools import Logger

    from citerag.adapters import log_safety

    secret = "pcsk_test_" + "7" * 24
    log_safety.register_secret(secret)
    buf = io.StringIO()
    logger = Logger(service="citerag-test-secrets", level="INFO", logger_handler=logging.StreamHandler(buf))
    try:
        raise ConnectionError(f"POST /query failed, headers={{'Api-Key': '{secret}'}}")
    except ConnectionError:
        logger.exception("search failed")
    logger.info("object", extra={"reason": f"boom {secret}", "nested": {"key": [secret]}})
    out = buf.getvalue()
    assert secret not in out
    assert out.count("[secret withheld]") >= 3 and "search failed" in out and "ConnectionError" in out


def test_with_a_secret_loaded_logging_odd_fields_never_raises():
    # Every record is cleaned once a secret is loaded: a namedtuple field was rebuilt wrongly (TypeError) and a
    # structure holding itself recursed without end, in any library's logging call.
    import collections
    import io

    from citerag.adapters import log_safety

    secret = "pcsk_test_" + "8" * 24
    log_safety.register_secret(secret)
    buf = io.StringIO()
    log = logging.getLogger("citerag.test.odd-fields")
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(message)s %(where)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    point = collections.namedtuple("Point", "x y")
    cyclic: dict = {"key": secret}
    cyclic["self"] = cyclic
    try:
        log.info("a point", extra={"where": point(1, 2)})
        log.info("a cycle", extra={"where": cyclic})
        log.info("a secret in an object", extra={"where": point(secret, 2)})
    finally:
        log.removeHandler(handler)
    out = buf.getvalue()
    assert "Point(x=1, y=2)" in out and "a cycle" in out and secret not in out
