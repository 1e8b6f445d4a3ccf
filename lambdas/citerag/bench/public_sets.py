"""`citerag datasets`: the public benchmark sets the published figures come from, downloaded from where their
authors publish them (or read from a copy already on disk), checked against the checksums in `public_sets.json`,
and written in the layout `citerag bench` reads: corpus.jsonl, queries.jsonl, qrels.tsv, answers.jsonl.

Nothing here is needed at run time; it exists so a user can reproduce the benchmark figures."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from citerag.errors import CiteragError

# The biggest published file is 2.8 MB; a response many times that is not the file the catalog names.
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
# Inside the BEIR zip, the members read (nothing is extracted to disk).
MAX_MEMBER_BYTES = 256 * 1024 * 1024
TIMEOUT_S = 60
# MTEB's JaQuADRetrieval: the validation split shuffled with seed 42, first 2,048 questions
# (mteb/tasks/Retrieval/jpn/JaQuADRetrieval.py; the Hugging Face `datasets` shuffle is default_rng(seed).permutation).
JAQUAD_SEED = 42
JAQUAD_QUESTIONS = 2048


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    url: str = Field(pattern=r"^https://")
    bytes: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    md5: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")


class PublicSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str
    licence: str
    homepage: str
    format: Literal["jaquad-mteb", "squad", "beir-zip"]
    files: list[SourceFile]


def catalog() -> dict[str, PublicSet]:
    raw = json.loads((resources.files("citerag.bench") / "public_sets.json").read_text(encoding="utf-8"))
    return {name: PublicSet.model_validate(spec) for name, spec in raw.items()}


def datasets_root(data_dir: Path) -> Path:
    return Path(data_dir) / "datasets"


def resolve(dataset: Path, data_dir: Path) -> Path:
    """A benchmark argument: a folder, or the name of a public set (`jaquad`) fetched into the data dir."""
    if dataset.exists() or len(dataset.parts) != 1:
        return dataset
    name = str(dataset)
    if name not in catalog():
        return dataset  # load_dataset names what is missing
    path = datasets_root(data_dir) / name
    if not (path / "corpus.jsonl").is_file():
        raise CiteragError(f"the {name} dataset is not in {path.parent} yet: run citerag datasets fetch {name}")
    return path


Progress = Callable[[str], None]


def fetch(name: str, data_dir: Path, *, source_dir: Path | None = None,
          progress: Progress | None = None) -> Path:
    """Fetch (or, with `source_dir`, read from disk) the published files of `name`, check them, convert them, and
    replace DATA_DIR/datasets/NAME as a whole, so an interrupted run never leaves half a dataset."""
    sets = catalog()
    if name not in sets:
        raise CiteragError(f"unknown dataset {name!r}: choose {', '.join(sorted(sets))}")
    spec = sets[name]
    say = progress or (lambda _m: None)
    root = datasets_root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=root) as tmp:
        work = Path(tmp)
        blobs: dict[str, bytes] = {}
        for f in spec.files:
            if source_dir is None:
                say(f"downloading {f.url}")
                data = _download(f, name)
            else:
                data = _from_disk(f, source_dir, name)
            if data is not None:
                _verify(f, data)
                blobs[f.name] = data
        out = work / name
        out.mkdir()
        if spec.format == "beir-zip" and not blobs:
            _write_beir(_beir_folder(source_dir), out)  # type: ignore[arg-type]
        elif spec.format == "beir-zip":
            _write_beir(_zip_reader(blobs[spec.files[0].name]), out)
        elif spec.format == "jaquad-mteb":
            _write_jaquad_mteb([_squad(blobs[f.name], f.name) for f in spec.files], out)
        else:
            _write_squad([_squad(blobs[f.name], f.name) for f in spec.files], out)
        (out / "SOURCE.json").write_text(json.dumps({"dataset": name, **spec.model_dump()}, ensure_ascii=False,
                                                    indent=1) + "\n", encoding="utf-8")
        target = root / name
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    return target


def _download(f: SourceFile, name: str) -> bytes:
    request = urllib.request.Request(f.url, headers={"User-Agent": "citerag-datasets"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            data = response.read(MAX_DOWNLOAD_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise CiteragError(f"{f.url} answered HTTP {exc.code}; the dataset was not changed") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CiteragError(
            f"could not download {f.url} ({reason}). Without a network, download the file on another machine and "
            f"run: citerag datasets fetch {name} --from DIR") from None
    if len(data) > MAX_DOWNLOAD_BYTES:
        raise CiteragError(f"{f.url} is larger than {MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB: not the published "
                           f"file ({f.bytes:,} bytes)")
    return data


def _from_disk(f: SourceFile, source_dir: Path, name: str) -> bytes | None:
    if not source_dir.is_dir():
        raise CiteragError(f"--from {source_dir}: not a folder")
    hits = sorted(p for p in source_dir.rglob(f.name) if p.is_file())
    if hits:
        if hits[0].stat().st_size > MAX_DOWNLOAD_BYTES:
            raise CiteragError(f"{hits[0]} is larger than the published {f.name} ({f.bytes:,} bytes)")
        return hits[0].read_bytes()
    if name == "scifact" and _beir_folder(source_dir, required=False) is not None:
        return None  # the zip already extracted: its files are read as they are
    wanted = f.name if name != "scifact" else "scifact.zip, or its corpus.jsonl, queries.jsonl and qrels/test.tsv"
    raise CiteragError(f"--from {source_dir}: no {wanted} in it (the published files: "
                       f"{', '.join(x.url for x in catalog()[name].files)})")


def _verify(f: SourceFile, data: bytes) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != f.sha256:
        raise CiteragError(f"{f.name}: SHA-256 {digest} is not the published file's {f.sha256} ({len(data):,} bytes, "
                           f"expected {f.bytes:,}); the dataset was not changed")
    if f.md5 and hashlib.md5(data, usedforsecurity=False).hexdigest() != f.md5:
        raise CiteragError(f"{f.name}: MD5 is not the published {f.md5}; the dataset was not changed")


def _squad(data: bytes, name: str) -> list[dict[str, Any]]:
    """SQuAD v1 layout (JaQuAD, JSQuAD): one row per question, in file order."""
    try:
        doc = json.loads(data.decode("utf-8"))
        rows = []
        for article in doc["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    rows.append({"title": str(article.get("title") or ""), "context": str(paragraph["context"]),
                                 "id": str(qa["id"]), "question": str(qa["question"]),
                                 "answers": [a for a in qa["answers"] if isinstance(a, dict) and a.get("text")],
                                 "question_type": qa.get("question_type")})
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CiteragError(f"{name}: not in the SQuAD layout ({type(exc).__name__}: {exc})") from None
    return rows


def _write_jaquad_mteb(files: list[list[dict[str, Any]]], out: Path) -> None:
    """MTEB's JaQuADRetrieval: for each of the first 2,048 shuffled questions, its context paragraph and its first
    answer string are documents (running integer ids shared with the queries); both are relevant (qrels.tsv), or
    the paragraph alone (qrels_context_only.tsv)."""
    import numpy as np

    rows = [r for f in files for r in f]
    order = np.random.default_rng(JAQUAD_SEED).permutation(len(rows))[:JAQUAD_QUESTIONS]
    corpus: list[dict[str, str]] = []
    queries: list[dict[str, str]] = []
    qrels: list[tuple[str, str]] = []
    context_only: list[tuple[str, str]] = []
    answers: list[dict[str, Any]] = []
    ids: dict[str, int] = {}
    n = 0
    for i in order:
        r = rows[int(i)]
        if not r["answers"]:
            continue
        q = str(n)
        queries.append({"_id": q, "text": r["question"]})
        n += 1
        first = r["answers"][0]["text"]
        for text in (r["context"], first):
            if text not in ids:
                ids[text] = n
                corpus.append({"_id": str(n), "title": r["title"], "text": text})
                n += 1
        qrels += [(q, str(ids[first])), (q, str(ids[r["context"]]))]
        context_only.append((q, str(ids[r["context"]])))
        answers.append({"_id": q, "jaquad_id": r["id"], "answers": [a["text"] for a in r["answers"]],
                        "context_doc": str(ids[r["context"]]), "question_type": r["question_type"],
                        "answer_type": [a.get("answer_type") for a in r["answers"]]})
    _write(out, corpus, queries, qrels, answers)
    _tsv(out / "qrels_context_only.tsv", context_only)


def _write_squad(files: list[list[dict[str, Any]]], out: Path) -> None:
    """Every question with an answer; each context paragraph once (JSQuAD writes "title [SEP] text")."""
    corpus: list[dict[str, str]] = []
    queries: list[dict[str, str]] = []
    qrels: list[tuple[str, str]] = []
    answers: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for r in (r for f in files for r in f):
        if not r["answers"]:
            continue
        title, sep, text = r["context"].partition(" [SEP] ")
        if not sep:
            title, text = r["title"], r["context"]
        if r["context"] not in ids:
            ids[r["context"]] = f"c{len(ids)}"
            corpus.append({"_id": ids[r["context"]], "title": title, "text": text})
        doc = ids[r["context"]]
        queries.append({"_id": r["id"], "text": r["question"]})
        qrels.append((r["id"], doc))
        answers.append({"_id": r["id"], "answers": list(dict.fromkeys(a["text"] for a in r["answers"])),
                        "context_doc": doc})
    _write(out, corpus, queries, qrels, answers)


class _Members:
    """The three files of a BEIR dataset, from its zip or from the folder it unzips to."""

    def __init__(self, read: Callable[[str], bytes | None]) -> None:
        self.read = read


def _zip_reader(data: bytes) -> _Members:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise CiteragError("scifact.zip is not a zip file") from None

    def read(member: str) -> bytes | None:
        for info in archive.infolist():
            if info.filename.endswith(member) and not info.is_dir():
                if info.file_size > MAX_MEMBER_BYTES:
                    raise CiteragError(f"scifact.zip: {info.filename} is larger than any published file")
                return archive.read(info)
        return None

    return _Members(read)


def _beir_folder(source_dir: Path, required: bool = True) -> _Members | None:
    for corpus in sorted(source_dir.rglob("corpus.jsonl")):
        folder = corpus.parent
        if (folder / "queries.jsonl").is_file() and (folder / "qrels" / "test.tsv").is_file():
            return _Members(lambda member, folder=folder: (folder / member).read_bytes()
                            if (folder / member).is_file() else None)
    if required:
        raise CiteragError(f"--from {source_dir}: no corpus.jsonl with queries.jsonl and qrels/test.tsv beside it")
    return None


def _write_beir(members: _Members, out: Path) -> None:
    """BEIR's test split: every abstract, the queries the test qrels judge (SciFact: 300 of 1,109)."""
    parts = {m: members.read(m) for m in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")}
    missing = [m for m, data in parts.items() if data is None]
    if missing:
        raise CiteragError(f"the BEIR files lack {', '.join(missing)}")
    try:
        qrels: list[tuple[str, str, str]] = []
        for n, line in enumerate(parts["qrels/test.tsv"].decode("utf-8").splitlines()):  # type: ignore[union-attr]
            cols = line.split("\t")
            if n == 0 and not cols[-1].strip().lstrip("-").isdigit():
                continue
            if len(cols) >= 3:
                qrels.append((cols[0], cols[1], cols[2].strip()))
        judged = {q for q, _, _ in qrels}
        corpus = [{"_id": str(d["_id"]), "title": str(d.get("title") or ""), "text": str(d.get("text") or "")}
                  for d in _lines(parts["corpus.jsonl"])]  # type: ignore[arg-type]
        queries = [{"_id": str(q["_id"]), "text": str(q["text"])} for q in _lines(parts["queries.jsonl"])  # type: ignore[arg-type]
                   if str(q["_id"]) in judged]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CiteragError(f"the BEIR files are not in BEIR's layout ({type(exc).__name__}: {exc})") from None
    _jsonl(out / "corpus.jsonl", corpus)
    _jsonl(out / "queries.jsonl", queries)
    _tsv(out / "qrels.tsv", qrels)


def _lines(data: bytes) -> Iterable[dict[str, Any]]:
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _write(out: Path, corpus: list[dict[str, str]], queries: list[dict[str, str]], qrels: list[tuple[str, str]],
           answers: list[dict[str, Any]]) -> None:
    _jsonl(out / "corpus.jsonl", corpus)
    _jsonl(out / "queries.jsonl", queries)
    _tsv(out / "qrels.tsv", qrels)
    _jsonl(out / "answers.jsonl", answers)


def _jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _tsv(path: Path, rows: Iterable[tuple[str, ...]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for row in rows:
            fh.write("\t".join(row if len(row) == 3 else (*row, "1")) + "\n")
