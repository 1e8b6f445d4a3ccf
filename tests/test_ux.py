"""What a new user runs into: each test reproduces a friction point found by trying citerag as a newcomer (the
samples mixed into the user's index, a mistyped --index creating an index, a mistyped filter key answering
"No results", no way to list or remove documents, no --version, `<bool>` after plain flags)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from citerag.cli import app
from citerag.cli.common import app as common_app

from conftest import SAMPLES


@pytest.fixture
def cli(tmp_path):
    env = {"CITERAG_EMBEDDER": "hashing", "CITERAG_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()

    def run(*args):
        return runner.invoke(app, list(args), env=env)

    return run


@pytest.fixture
def mine(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "policy.md").write_text("# Refund policy\n\nRefunds take 14 days after the return arrives.\n",
                                      encoding="utf-8")
    (folder / "shipping.md").write_text("# Shipping\n\nOrders ship within 2 business days.\n", encoding="utf-8")
    return folder


def test_the_samples_answer_first_and_never_mix_into_the_users_index(cli, mine):
    first = cli("ask", "What does error E2 mean?", "--json")
    assert first.exit_code == 0 and json.loads(first.stdout)["citations"]  # from the bundled samples
    assert cli("ingest", str(mine)).exit_code == 0
    listed = json.loads(cli("docs", "--json").stdout)
    assert sorted(d["title"] for d in listed) == ["Refund policy", "Shipping"]
    hits = json.loads(cli("search", "filter error E2", "--json").stdout)
    assert hits and all("/mine/" in h["uri"] for h in hits)  # the samples are not in the user's index
    answer = json.loads(cli("ask", "How long do refunds take?", "--agent", "none", "--json").stdout)
    assert all("/mine/" in c["uri"] for c in answer["citations"])


def test_a_mistyped_index_is_an_error_and_creates_nothing(cli, tmp_path):
    missing = tmp_path / "data" / "indx.sqlite"
    for args in (("search", "filter"), ("ask", "filter?"), ("docs",), ("status",)):
        r = cli(*args, "--index", str(missing))
        assert r.exit_code == 1 and "no index at" in r.output, args
    assert not missing.exists()


def test_an_unknown_filter_key_names_the_keys_there_are(cli, mine):
    cli("ingest", str(mine), "--meta", "tenant=acme")
    for args in (("search", "refunds", "--filter", "langg=ja"),
                 ("ask", "refunds?", "--agent", "none", "--filter", "langg=ja")):
        r = cli(*args)
        assert r.exit_code == 1 and "'langg'" in r.output and "lang" in r.output and "tenant" in r.output
    ok = cli("search", "refunds", "--filter", "lang=en", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)
    status = json.loads(cli("status", "--json").stdout)
    assert {"lang", "tenant", "section"} <= set(status["metadata_keys"]) and "text" not in status["metadata_keys"]


def test_docs_remove_and_reset(cli, mine):
    cli("ingest", str(mine), "--meta", "tenant=acme")
    listed = json.loads(cli("docs", "--json").stdout)
    assert {d["tenant"] for d in listed} == {"acme"} and all(d["chunks"] >= 1 for d in listed)
    assert "2 documents" in cli("docs").stdout
    r = cli("remove", str(mine / "policy.md"))
    assert r.exit_code == 0 and "removed" in r.stdout
    assert [d["title"] for d in json.loads(cli("docs", "--json").stdout)] == ["Shipping"]
    assert "no indexed document" in cli("remove", str(mine / "nothing.md")).output
    assert cli("remove", str(mine)).exit_code == 0  # a folder removes what is under it
    assert json.loads(cli("docs", "--json").stdout) == []
    assert cli("reset", "--json").exit_code == 1  # never without --yes
    assert cli("reset", "--yes").exit_code == 0
    assert "no index at" in cli("docs").output


def test_version_and_help_without_bool_after_flags(cli):
    r = cli("--version")
    assert r.exit_code == 0 and r.stdout.startswith("citerag ")
    help_text = CliRunner().invoke(common_app, ["search", "--help"], env={"COLUMNS": "120"}).stdout
    assert "--json" in help_text and "<bool>" not in help_text and "<int" in help_text


def test_samples_stay_out_of_an_index_given_explicitly(cli, tmp_path, mine):
    index = tmp_path / "team.sqlite"
    assert cli("ingest", str(mine), "--index", str(index)).exit_code == 0
    r = cli("ask", "What does error E2 mean?", "--index", str(index), "--agent", "none", "--json")
    assert r.exit_code == 0 and not any("samples" in c["uri"] for c in json.loads(r.stdout)["citations"])
    assert len(json.loads(cli("docs", "--index", str(index), "--json").stdout)) == 2
    assert SAMPLES.exists()
