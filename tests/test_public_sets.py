"""`citerag datasets fetch`: the public sets downloaded from a local HTTP server that serves small files in the
upstream formats (JaQuAD's and JSQuAD's SQuAD JSON, BEIR's zip), checked against their SHA-256, and written in the
layout `citerag bench NAME` reads."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citerag.bench import public_sets
from citerag.cli import app

runner = CliRunner()


def _squad(articles: list[tuple[str, list[tuple[str, list[tuple[str, str, str]]]]]], *, jsquad: bool = False) -> bytes:
    data = []
    for title, paragraphs in articles:
        paras = []
        for context, qas in paragraphs:
            ctx = f"{title} [SEP] {context}" if jsquad else context
            paras.append({"context": ctx, "qas": [
                {"question": q, "id": qid, "answers": [{"text": a, "answer_start": context.find(a),
                                                        **({} if jsquad else {"answer_type": "Object"})}],
                 **({"is_impossible": False} if jsquad else {"question_type": "Syntactic variation"})}
                for qid, q, a in qas]})
        data.append({"title": title, "paragraphs": paras})
    doc = {"data": data} if jsquad else {"version": "JaQuAD-version-0.1.0", "data": data}
    return json.dumps(doc, ensure_ascii=False, indent="\t").encode()


JAQUAD = [
    _squad([("東大寺", [("奈良の大仏は高さ約15メートルの盧舎那仏像である。", [
        ("de-000-00-000", "奈良の大仏の高さは?", "約15メートル"),
        ("de-000-00-001", "奈良の大仏は何の像?", "盧舎那仏像")])])]),
    _squad([("富士山", [("富士山は標高3776メートルの日本最高峰である。", [
        ("de-001-00-000", "富士山の標高は?", "3776メートル")])])]),
    _squad([("琵琶湖", [("琵琶湖は滋賀県にある日本最大の湖である。", [
        ("de-002-00-000", "琵琶湖はどこにある?", "滋賀県")])])]),
    _squad([("梅雨", [("梅雨は東アジアの雨季の一種である。", [
        ("de-003-00-000", "梅雨は何季の一種?", "雨季")])])]),
]
JSQUAD = _squad([("梅雨", [("梅雨は北海道と小笠原諸島を除く日本で見られる雨季である。", [
    ("a1p0q0", "日本で梅雨がないのは北海道とどこか。", "小笠原諸島"),
    ("a1p0q1", "梅雨とは何季か?", "雨季")])]),
    ("富士山", [("富士山は静岡県と山梨県にまたがる山である。", [("a2p0q0", "富士山はどの県にある?", "静岡県")])])],
    jsquad=True)


def _beir_zip() -> bytes:
    corpus = [{"_id": "4983", "title": "Microstructural development of human newborn cerebral white matter",
               "text": "Alterations of the architecture of cerebral white matter in the developing brain.",
               "metadata": {}},
              {"_id": "5836", "title": "Induction of myelodysplasia",
               "text": "Myelodysplastic syndromes are a group of clonal disorders.", "metadata": {}}]
    queries = [{"_id": "1", "text": "0-dimensional biomaterials show inductive properties.", "metadata": {}},
               {"_id": "3", "text": "Newborn white matter develops its architecture early.", "metadata": {}}]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("scifact/corpus.jsonl", "".join(json.dumps(d) + "\n" for d in corpus))
        z.writestr("scifact/queries.jsonl", "".join(json.dumps(q) + "\n" for q in queries))
        z.writestr("scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\n3\t4983\t1\n")
        z.writestr("scifact/qrels/train.tsv", "query-id\tcorpus-id\tscore\n1\t5836\t1\n")
    return buf.getvalue()


@pytest.fixture
def upstream():
    """A local HTTP server with the published files at their published paths, and a catalog naming it."""
    files = {f"/jaquad/jaquad_dev_000{i}.json": body for i, body in enumerate(JAQUAD)}
    files["/jsquad/valid-v1.3.json"] = JSQUAD
    files["/beir/scifact.zip"] = _beir_zip()
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    real = public_sets.catalog()

    def spec(name: str, paths: list[str]) -> public_sets.PublicSet:
        return real[name].model_copy(update={"files": [
            public_sets.SourceFile.model_construct(name=p.rsplit("/", 1)[1], url=base + p, bytes=len(files[p]),
                                                   sha256=hashlib.sha256(files[p]).hexdigest(), md5=None)
            for p in paths]})

    sets = {"jaquad": spec("jaquad", [f"/jaquad/jaquad_dev_000{i}.json" for i in range(4)]),
            "jsquad": spec("jsquad", ["/jsquad/valid-v1.3.json"]),
            "scifact": spec("scifact", ["/beir/scifact.zip"])}
    yield {"sets": sets, "files": files, "hits": hits}
    server.shutdown()


@pytest.fixture
def served(upstream, monkeypatch):
    monkeypatch.setattr(public_sets, "catalog", lambda: upstream["sets"])
    return upstream


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_catalog_names_published_files_with_checksums():
    sets = public_sets.catalog()
    assert set(sets) == {"jaquad", "jsquad", "scifact"}
    assert all(f.url.startswith("https://") and len(f.sha256) == 64 for s in sets.values() for f in s.files)


def test_jaquad_is_fetched_in_mteb_layout_and_bench_reads_it_by_name(served, tmp_path):
    r = runner.invoke(app, ["datasets", "fetch", "jaquad"])
    assert r.exit_code == 0, r.output
    folder = tmp_path / "data" / "datasets" / "jaquad"
    assert "citerag bench jaquad" in r.output and str(folder) in r.output
    queries = _rows(folder / "queries.jsonl")
    corpus = _rows(folder / "corpus.jsonl")
    assert len(queries) == 5
    # Each question's context and its first answer string are documents, both relevant (MTEB's qrels).
    answers = {a["_id"]: a for a in _rows(folder / "answers.jsonl")}
    texts = {d["_id"]: d["text"] for d in corpus}
    qrels = (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore"
    for q in queries:
        relevant = {line.split("\t")[1] for line in qrels[1:] if line.split("\t")[0] == q["_id"]}
        assert {texts[d] for d in relevant} >= {answers[q["_id"]]["answers"][0]}
        assert answers[q["_id"]]["context_doc"] in relevant
    r = runner.invoke(app, ["bench", "jaquad", "--mode", "bm25", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output.splitlines()[-1])
    assert report["bm25"]["queries"] == 5 and report["_run"]["documents"] == len(corpus)


def test_jsquad_questions_point_at_their_paragraph(served, tmp_path):
    assert runner.invoke(app, ["datasets", "fetch", "jsquad"]).exit_code == 0
    folder = tmp_path / "data" / "datasets" / "jsquad"
    corpus = {d["_id"]: d for d in _rows(folder / "corpus.jsonl")}
    assert {d["title"] for d in corpus.values()} == {"梅雨", "富士山"}
    assert all("[SEP]" not in d["text"] for d in corpus.values())
    qrels = dict(line.split("\t")[:2] for line in (folder / "qrels.tsv").read_text().splitlines()[1:])
    assert "小笠原諸島" in corpus[qrels["a1p0q0"]]["text"]
    assert "静岡県" in corpus[qrels["a2p0q0"]]["text"]


def test_scifact_keeps_the_test_queries_of_the_beir_zip(served, tmp_path):
    r = runner.invoke(app, ["datasets", "fetch", "scifact", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"dataset": "scifact", "path": str(tmp_path / "data" / "datasets" / "scifact"),
                                        "documents": 2, "queries": 1}
    folder = tmp_path / "data" / "datasets" / "scifact"
    assert [q["_id"] for q in _rows(folder / "queries.jsonl")] == ["3"]
    assert (folder / "qrels.tsv").read_text().splitlines()[1:] == ["3\t4983\t1"]


def test_a_file_that_differs_from_the_published_one_is_refused_and_changes_nothing(served, tmp_path):
    assert runner.invoke(app, ["datasets", "fetch", "jsquad"]).exit_code == 0
    before = (tmp_path / "data" / "datasets" / "jsquad" / "corpus.jsonl").read_bytes()
    served["files"]["/jsquad/valid-v1.3.json"] = JSQUAD.replace("梅雨".encode(), "台風".encode())
    r = runner.invoke(app, ["datasets", "fetch", "jsquad"])
    assert r.exit_code == 1
    assert "SHA-256" in r.output and "not the published file" in r.output and "Traceback" not in r.output
    assert (tmp_path / "data" / "datasets" / "jsquad" / "corpus.jsonl").read_bytes() == before
    assert [p.name for p in (tmp_path / "data" / "datasets").iterdir()] == ["jsquad"]


def test_offline_says_how_to_use_a_copy_on_disk(upstream, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sets = {k: v.model_copy(update={"files": [f.model_copy(update={"url": f"http://127.0.0.1:{port}/x"})
                                              for f in v.files]}) for k, v in upstream["sets"].items()}
    monkeypatch.setattr(public_sets, "catalog", lambda: sets)
    r = runner.invoke(app, ["datasets", "fetch", "scifact"])
    assert r.exit_code == 1
    assert "could not download" in r.output and "citerag datasets fetch scifact --from DIR" in r.output


def test_from_a_folder_converts_without_downloading(served, tmp_path):
    src = tmp_path / "clone" / "data" / "dev"
    src.mkdir(parents=True)
    for i, body in enumerate(JAQUAD):
        (src / f"jaquad_dev_000{i}.json").write_bytes(body)
    r = runner.invoke(app, ["datasets", "fetch", "jaquad", "--from", str(tmp_path / "clone")])
    assert r.exit_code == 0, r.output
    assert served["hits"] == []
    assert len(_rows(tmp_path / "data" / "datasets" / "jaquad" / "queries.jsonl")) == 5


def test_from_an_unzipped_beir_folder(served, tmp_path):
    with zipfile.ZipFile(io.BytesIO(served["files"]["/beir/scifact.zip"])) as z:
        z.extractall(tmp_path / "unzipped")
    r = runner.invoke(app, ["datasets", "fetch", "scifact", "--from", str(tmp_path / "unzipped")])
    assert r.exit_code == 0, r.output
    assert served["hits"] == []


def test_bench_names_the_fetch_command_for_a_set_not_fetched_yet():
    r = runner.invoke(app, ["bench", "scifact"])
    assert r.exit_code == 1
    assert "citerag datasets fetch scifact" in r.output


def test_an_unknown_name_lists_the_sets():
    r = runner.invoke(app, ["datasets", "fetch", "msmarco"])
    assert r.exit_code == 1
    assert "jaquad, jsquad, scifact" in r.output
