"""`citerag serve`: a local web page to ask questions and read the answer with clickable citations; a citation
opens the PDF at the cited page beside the cited sentence (a text file as numbered lines, the cited ones marked).
Document text is HTML-escaped (the page builds every element with textContent, never innerHTML), and only files the
index holds are served."""

from __future__ import annotations

import html
import ipaddress
import json
import mimetypes
import queue
import re
import threading
from pathlib import Path
from typing import Annotated
from urllib.parse import quote, urlsplit

import typer

from citerag.citations.answer import related_wire
from citerag.citations.drafts import drafts_to
from citerag.citations.excerpts import spanning
from citerag.citations.not_found import NOT_FOUND_OPENINGS
from citerag.citations.search_tool import may_see
from citerag.citations.verified import FALLBACK
from citerag.cli.common import IndexOpt, NamespaceOpt, app, components, err, errors, open_index, port_free
from citerag.cli.serve_marks import MARK_ID, mark_html
from citerag.documents.chunking import first_line, line_bounds
from citerag.documents.encodings import decode_text
from citerag.documents.text import resolve_overstrike
from citerag.errors import CiteragError
from citerag.extras import needs
from citerag.search.passage import location
from citerag.search.query import analyze

CONTEXT_LINES = 500  # shown before and after the cited lines of a text file
CITED_LINES_MAX = 1000  # of a cited range shown marked; a passage spans a few dozen lines
LINE_CHARS_MAX = 2000  # of one line shown; the rest is cut with a mark
LINES_MAX_BYTES = 16 * 1024 * 1024  # a text file larger than this opens as itself (/file), not as numbered lines

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>citerag</title><style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:52rem;color:#222}
form{display:flex;gap:.5rem}input{flex:1;font-size:1rem;padding:.4rem}button{font-size:1rem}
#answer{font-size:1.05rem;line-height:1.5;margin-top:1.2rem;min-height:2rem}
a.cite{color:#2559b5;text-decoration:none;font-weight:600;margin-left:.15rem}
#sources li{margin:.4rem 0}.excerpt{color:#555;font-size:.9rem}#status{color:#888;font-size:.85rem}
#drop{border:2px dashed #aab;border-radius:6px;padding:.8rem;text-align:center;color:#555;margin-top:1.5rem}
#drop.over{background:#eef3ff;border-color:#2559b5}#drop label{color:#2559b5;cursor:pointer;text-decoration:underline}
#docs ul{list-style:none;padding:0}#docs li{margin:.3rem 0;display:flex;gap:.6rem;align-items:baseline}
#docs li span{flex:1}#docs button{font-size:.8rem}#jobs li{color:#555;font-size:.9rem}#jobs li.refused{color:#a40000}
#docs-note{color:#888;font-size:.85rem}.draft{color:#555}
</style></head><body><h1>citerag</h1>
<form id="ask"><input id="q" name="q" placeholder="Ask a question about your documents" autofocus>
<button>Ask</button></form><p id="status"></p><div id="answer"></div><h3 id="sources-title" hidden>Sources</h3>
<ol id="sources"></ol><h3 id="related-title" hidden>Where to look</h3><ol id="related"></ol>
<section id="docs"><div id="drop">Drop documents here (PDF, Word, Excel, PowerPoint, Markdown, HTML, text, CSV,
EPUB) or <label>choose files<input type="file" id="pick" multiple hidden></label></div>
<ul id="jobs"></ul><h3>Documents</h3><p id="docs-note"></p><ul id="doclist"></ul></section>
<script>
const $ = (id) => document.getElementById(id);
function place(s) {  // a heading path already starts with the title it would repeat
  if (s.page) return s.title + ', page ' + s.page;
  if (s.section) return s.section.startsWith(s.title) ? s.section : s.title + ', ' + s.section;
  return s.title;
}
function link(s) {
  const a = document.createElement('a');
  a.href = '/source?n=' + s.n + '&uri=' + encodeURIComponent(s.uri) + '&page=' + (s.page || '') +
           '&section=' + encodeURIComponent(s.section || '') + '&quote=' + encodeURIComponent(s.excerpt || '') +
           (s.at ? '&at=' + s.at : '');
  a.target = '_blank';
  return a;
}
async function ask(q) {
  draft = null; $('answer').textContent = ''; $('sources').textContent = ''; $('sources-title').hidden = true;
  $('related').textContent = ''; $('related-title').hidden = true;
  $('status').textContent = 'Searching…';
  let resp;
  try { resp = await fetch('/api/ask?q=' + encodeURIComponent(q)); }
  catch (e) { $('status').textContent = 'Error: the server cannot be reached.'; return; }
  if (!resp.ok) {  // a refused question: one JSON object with the reason, not a stream
    let reason = 'the server answered ' + resp.status;
    try { reason = (await resp.json()).error || reason; } catch (e) {}
    $('status').textContent = 'Error: ' + reason; return;
  }
  const reader = resp.body.getReader(); const dec = new TextDecoder(); let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf('\\n')) >= 0) { show(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); }
  }
}
let draft = null;  // the model's words as it writes them, replaced by the checked answer
function show(ev) {
  if (ev.draft_reset) { if (draft) draft.remove(); draft = null; return; }
  if (ev.draft !== undefined) {
    if (!draft) { draft = document.createElement('span'); draft.className = 'draft'; $('answer').append(draft);
      $('status').textContent = 'Writing… (citations follow when the answer is checked)'; }
    draft.textContent += ev.draft; return;
  }
  if (draft) { draft.remove(); draft = null; }
  if (ev.error) { $('status').textContent = 'Error: ' + ev.error; return; }
  if (ev.text !== undefined) {
    $('status').textContent = '';
    $('answer').append(document.createTextNode(ev.text));
    for (const s of ev.sources || []) { const a = link(s); a.className = 'cite'; a.textContent = '[' + s.n + ']';
      $('answer').append(a); }
    $('answer').append(document.createTextNode(' '));
  }
  if (ev.sources_list) {
    $('sources-title').hidden = ev.sources_list.length === 0;
    for (const s of ev.sources_list) {
      const li = document.createElement('li'); const a = link(s);
      a.textContent = place(s); li.append(a);
      const ex = document.createElement('div'); ex.className = 'excerpt'; ex.textContent = '“' + s.excerpt + '”';
      li.append(ex); $('sources').append(li);
    }
    // When the answer's own text says the documents do not answer (in the question's language), it is said once;
    // any other text that cites nothing is flagged.
    // A refusal the answerer named says why (its Decision's detail, text of this program, set as text).
    $('status').textContent = ev.answered ? '' : ev.reason_detail ? 'Why: ' + ev.reason_detail
      : ev.says_not_found ? '' : 'The documents do not answer this question.';
    // Not an answer: the passages search found, where the answer may be worded otherwise (or not be at all).
    $('related-title').hidden = !(ev.related || []).length;
    for (const s of ev.related || []) {
      const li = document.createElement('li'); const a = link(s); a.textContent = place(s); li.append(a);
      $('related').append(li);
    }
  }
}
let maxUpload = 0, polling = false;
function jobLine(j) {
  const li = document.createElement('li'); li.dataset.state = j.state; li.dataset.status = j.status || '';
  const n = (x) => x.toLocaleString();
  if (j.state === 'queued') li.textContent = 'Waiting to add ' + j.name;
  else if (j.state === 'running') li.textContent = 'Adding ' + j.name + (j.passages_total ? ': ' +
    n(j.passages_done) + ' of ' + n(j.passages_total) + ' passages' : '…');
  else if (j.state === 'preparing') li.textContent = j.name + ' is searchable; preparing answers: ' +
    n(j.passages_done) + ' of ' + n(j.passages_total) + ' statements';
  else if (j.status === 'failed' || j.status === 'skipped') {
    li.className = 'refused'; li.textContent = j.name + ' was not added: ' + (j.reason || j.status);
  } else li.textContent = j.name + ': ' + j.status + ' (' + n(j.passages || 0) + ' passages)';
  if (j.note) li.textContent += '; ' + j.note;
  return li;
}
function said(text, className) {  // a line of the page's own, kept when the server's lines are read again
  const li = document.createElement('li'); li.className = className; li.dataset.state = className;
  li.dataset.local = '1'; li.textContent = text; $('jobs').prepend(li);
}
function refused(name, reason) { said(name + ' was not added: ' + reason, 'refused'); }
async function refreshDocs() {
  let d;
  try { const r = await fetch('/api/documents'); d = await r.json(); } catch (e) { return; }
  maxUpload = d.max_upload_bytes;
  for (const li of [...$('jobs').children]) if (!li.dataset.local) li.remove();
  for (const j of d.jobs.slice().reverse()) $('jobs').append(jobLine(j));
  $('doclist').textContent = '';
  for (const doc of d.documents) {
    const li = document.createElement('li'); const name = document.createElement('span');
    name.textContent = doc.name + (doc.title && doc.title !== doc.name ? ' — ' + doc.title : '') +
      ' (' + doc.passages.toLocaleString() + ' passages)';
    li.dataset.uri = doc.uri; li.append(name);
    if (doc.removable) {
      const b = document.createElement('button'); b.textContent = 'Remove'; b.className = 'remove';
      b.addEventListener('click', () => removeDoc(doc.uri, doc.name)); li.append(b);
    }
    $('doclist').append(li);
  }
  $('docs-note').textContent = d.samples ? 'The bundled sample documents: the ones you add replace them here.'
    : d.more ? 'and ' + d.more.toLocaleString() + ' more' : d.documents.length ? '' : 'No documents yet.';
  watchJobs(d.jobs);
}
function watchJobs(jobs) {  // while an ingest runs, its progress is polled; the list is read again when one is written
  const written = (js) => js.filter((j) => j.state === 'done' || j.state === 'preparing').length;
  const done = written(jobs);
  if (!jobs.some((j) => j.state !== 'done') || polling) return;
  polling = true;
  setTimeout(async () => {
    polling = false;
    let d;
    try { d = await (await fetch('/api/documents?only=jobs')).json(); } catch (e) { return; }
    if (written(d.jobs) !== done) { refreshDocs(); return; }
    for (const li of [...$('jobs').children]) if (!li.dataset.local) li.remove();
    for (const j of d.jobs.slice().reverse()) $('jobs').append(jobLine(j));
    watchJobs(d.jobs);
  }, 500);
}
async function upload(file) {
  if (maxUpload && file.size > maxUpload) {  // the server says the same; a browser may not read its answer
    refused(file.name, 'file is too large (' + file.size.toLocaleString() + ' bytes; the limit for a file added ' +
            'from this page is ' + maxUpload.toLocaleString() + ', CITERAG_SERVE_MAX_UPLOAD_BYTES)');
    return;
  }
  const form = new FormData(); form.append('file', file);
  try {
    const r = await fetch('/api/documents', {method: 'POST', body: form});
    if (!r.ok) { let why = 'the server answered ' + r.status;
      try { why = (await r.json()).error || why; } catch (e) {} refused(file.name, why); }
  } catch (e) { refused(file.name, 'the server cannot be reached'); }
  refreshDocs();
}
async function removeDoc(uri, name) {
  const r = await fetch('/api/documents?uri=' + encodeURIComponent(uri), {method: 'DELETE'});
  if (r.ok) said(name + ' removed', 'removed');
  else { let why = 'the server answered ' + r.status;
    try { why = (await r.json()).error || why; } catch (e) {} said(name + ' was not removed: ' + why, 'refused'); }
  refreshDocs();
}
$('pick').addEventListener('change', (e) => { for (const f of e.target.files) upload(f); e.target.value = ''; });
const drop = $('drop');
for (const t of ['dragenter', 'dragover']) {
  drop.addEventListener(t, (e) => { e.preventDefault(); drop.className = 'over'; });
}
drop.addEventListener('dragleave', () => { drop.className = ''; });
drop.addEventListener('drop', (e) => { e.preventDefault(); drop.className = '';
  for (const f of e.dataTransfer.files) upload(f); });
refreshDocs();
$('ask').addEventListener('submit', (e) => { e.preventDefault(); const q = $('q').value.trim(); if (q) ask(q); });
const q0 = new URLSearchParams(location.search).get('q'); if (q0) { $('q').value = q0; ask(q0); }
</script></body></html>"""


def says_not_found(text: str) -> bool:
    """Is the text one of the messages said when the documents do not answer (the answerer's, the agents')?"""
    return text.strip().startswith((*NOT_FOUND_OPENINGS, *FALLBACK.values()))


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)  # "::ffff:127.0.0.1" is 127.0.0.1
    return mapped or address


def _names_no_domain(host: str) -> bool:
    """An IP address or the loopback name: what DNS rebinding cannot be (it needs a domain name the attacker
    controls)."""
    return host == "localhost" or _address(host) is not None


def _loopback(host: str) -> bool:
    address = _address(host)
    return host == "localhost" or (address is not None and address.is_loopback)


def _origin_of(netloc: str, scheme: str) -> tuple[str | None, int | None]:
    """(host, port) of a Host header or an Origin's netloc, the scheme's default port filled in."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None, None
    return (parts.hostname or "").lower() or None, port or (443 if scheme == "https" else 80)


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _only_for(app, bound: str):
    """Requests must name this server as their Host: a page elsewhere that points its own domain at this address
    (DNS rebinding) would otherwise read answers and every indexed file as a same-origin page. Bound to one
    address, the Host must be a loopback name or that address; bound to every address, any IP address or
    localhost, never a domain name. A browser's Origin, when sent, must be this server itself, and a change (any
    method but GET, HEAD and OPTIONS) must send one."""
    from starlette.responses import PlainTextResponse

    bound = bound.strip("[]").lower()
    wildcard = bound == "" or (_address(bound) is not None and _address(bound).is_unspecified)
    said = "an IP address or localhost" if wildcard else f"{bound}, 127.0.0.1 or localhost"

    def allowed(host: str | None) -> bool:
        if not host:
            return False
        return _names_no_domain(host) if wildcard else (_loopback(host) or host == bound)

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            host_header = headers.get("host", "")
            if not allowed(_origin_of(host_header, "http")[0]):
                await PlainTextResponse(f"this server answers requests for {said} only",
                                        status_code=421)(scope, receive, send)
                return
            origin = headers.get("origin")
            if scope.get("method", "GET") not in SAFE_METHODS and (not origin or origin == "null"):
                # A browser sends Origin with every POST and DELETE; without it the change cannot be told from a
                # form another site submitted, so it is refused (a script sends the header itself).
                await PlainTextResponse("a change must come from this server's own page: send the header "
                                        f"Origin: http://{host_header}", status_code=403)(scope, receive, send)
                return
            if origin and origin != "null":
                scheme = urlsplit(origin).scheme
                if _origin_of(urlsplit(origin).netloc, scheme) != _origin_of(host_header, scheme):
                    await PlainTextResponse("requests from other sites are refused", status_code=403)(
                        scope, receive, send)
                    return
        await app(scope, receive, send)

    return guarded


class _Reader:
    """What the page reads through: an index's components, its answerer and the session's access rules."""

    def __init__(self, comps) -> None:
        from citerag.answerers import open_answerer
        from citerag.ingestion.opening import Verifier

        self.comps = comps
        session: dict[str, str] = {}  # the page's session carries no tenant or groups: it sees public documents
        self.ask = open_answerer(comps, "local", session_attributes=session).ask
        self.visible = may_see(session, comps.search_tool().config)
        self.verifier = Verifier(comps.settings.max_file_bytes)

    def known_file(self, uri: str):
        """(path, the document's record) of a document of this index the page's session may read, as search would
        let it: a tenant's or a group's file is no more served than it is cited."""
        from citerag.ingestion.files import uri_to_path

        ns = self.comps.settings.namespace
        doc = self.comps.index.find_by_uri(uri, ns)
        if doc is None or not self.visible(self.comps.index.document_metadata(doc.doc_id, ns)):
            return None
        path = uri_to_path(uri)
        return (path, doc) if path else None

    def documents(self, limit: int) -> tuple[list, int]:
        """The documents the page may list (at most `limit`, by name), and how many more there are."""
        ns = self.comps.settings.namespace
        seen = [d for d in self.comps.index.list_documents(ns)
                if self.visible(self.comps.index.document_metadata(d.doc_id, ns))]
        seen.sort(key=lambda d: (_name_of(d.source_uri).casefold(), d.source_uri))
        return seen[:limit], max(0, len(seen) - limit)


def _name_of(uri: str) -> str:
    from urllib.parse import unquote

    return unquote(uri.rstrip("/").rsplit("/", 1)[-1], errors="replace")


DOCUMENTS_LISTED = 500  # on the page; the rest are counted
FORM_OVERHEAD_BYTES = 64 * 1024  # a multipart body's boundaries and part headers, beyond the file itself


class _OverCap(Exception):
    pass


def build_app(comps, host: str = "127.0.0.1", own=None):
    """The Starlette app over loaded components (the model loads once, at start), answering requests for `host`
    (the address it is bound to) and the loopback names only. `own`: the Components documents added from the page
    are written into when `comps` is the bundled samples' index; the page reads from them once the first is
    written. None: `comps` itself."""
    import asyncio

    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import UploadFile
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    from citerag.cli.serve_documents import UploadRefused, Uploads, safe_name
    from citerag.ingestion.files import uri_to_path
    from citerag.ingestion.opening import LinkOnPath, NotIndexedFile, chunks_of, expected_hashes

    writes = own if own is not None else comps
    lib = {"reader": _Reader(comps)}

    def switch_to_own() -> None:
        """The first document of the user's own is written: the page now reads their index, not the samples."""
        if own is not None and lib["reader"].comps is not own:
            lib["reader"] = _Reader(own)

    s = writes.settings
    uploads = Uploads(lambda: writes, s.data_dir / "documents" / (s.namespace or "default"),
                      s.serve_max_upload_bytes, on_written=switch_to_own)

    def opened(uri: str):
        """The indexed file, opened without following a link on any component of its path and checked to be the
        one indexed before a byte of it is read; a response saying why not otherwise."""
        known = lib["reader"].known_file(uri)
        if known is None:
            return None, PlainTextResponse("not a document of this index", status_code=404)
        path, doc = known
        try:
            return lib["reader"].verifier.open(path, expected_hashes(doc)), None
        except (LinkOnPath, NotIndexedFile) as exc:
            return None, PlainTextResponse(str(exc), status_code=409)
        except CiteragError as exc:
            return None, PlainTextResponse(f"cannot read {path.name}: {exc}", status_code=404)
        except OSError as exc:
            return None, PlainTextResponse(f"cannot read {path.name}: {exc.strerror or 'I/O error'}",
                                           status_code=503)

    def refusal(message: str, status: int):
        return JSONResponse({"error": message}, status_code=status)

    async def documents(request):
        if request.query_params.get("only") == "jobs":  # what the page polls while an ingest runs: cheap
            return JSONResponse({"jobs": uploads.jobs(), "max_upload_bytes": uploads.max_upload_bytes})
        reader = lib["reader"]
        listed, more = await run_in_threadpool(reader.documents, DOCUMENTS_LISTED)
        mine = reader.comps is writes
        return JSONResponse({
            "documents": [{"uri": d.source_uri, "name": _name_of(d.source_uri), "title": d.title, "kind": d.kind,
                           "passages": d.n_chunks, "removable": mine} for d in listed],
            "more": more, "jobs": uploads.jobs(), "samples": not mine,
            "max_upload_bytes": uploads.max_upload_bytes})

    async def add_document(request):
        cap = uploads.max_upload_bytes + FORM_OVERHEAD_BYTES
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > cap:  # said before a byte of the body is read
            return refusal(uploads.too_large("", None), 413)
        if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
            return refusal("send the document as multipart/form-data, in a field named file", 400)
        received = 0

        async def counted():
            nonlocal received
            message = await request.receive()
            received += len(message.get("body", b""))
            if received > cap:
                raise _OverCap
            return message

        capped = Request(request.scope, counted)
        try:
            form = await capped.form(max_files=1, max_fields=4)
        except _OverCap:
            return refusal(uploads.too_large("", None), 413)
        except HTTPException as exc:
            return refusal(f"not a form this server reads: {exc.detail}", 400)
        try:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                return refusal("send the document in a multipart form field named file", 400)
            name = safe_name(upload.filename or "")
            uploads.check_type(name)
            if upload.size is not None and upload.size > uploads.limit_for(name):
                return refusal(uploads.too_large(name, upload.size), 413)
            replace = str(form.get("replace", "")).lower() in ("1", "true", "yes")
            upload.file.seek(0)
            path, note, new = await run_in_threadpool(uploads.store, name, upload.file, replace)
        except UploadRefused as exc:
            return refusal(str(exc), exc.status)
        except OSError as exc:
            return refusal(f"cannot store the file: {exc.strerror or 'I/O error'}", 507 if exc.errno == 28 else 500)
        finally:
            await form.close()
        job = uploads.submit(path, note, new)
        if request.query_params.get("wait", "").lower() in ("1", "true", "yes"):  # a script's: the outcome itself
            await asyncio.wrap_future(job.future)
            ok = job.result is not None and job.result.status in ("added", "replaced", "unchanged")
            return JSONResponse(job.wire(), status_code=200 if ok else 422)
        return JSONResponse(job.wire(), status_code=202)

    async def remove_document(request):
        uri = request.query_params.get("uri", "")
        reader = lib["reader"]
        if reader.comps is not writes:
            return refusal("the bundled sample documents are not removed; the ones you add replace them here", 409)
        if await run_in_threadpool(reader.known_file, uri) is None:
            return refusal("not a document of this index", 404)
        if uploads.busy_with(uri):
            return refusal("the document is being added; remove it once that is done", 409)
        passages = await run_in_threadpool(uploads.remove, writes, uri)
        return JSONResponse({"removed": uri, "passages": passages})

    async def documents_route(request):
        if request.method == "POST":
            return await add_document(request)
        if request.method == "DELETE":
            return await remove_document(request)
        return await documents(request)

    async def index(request):
        return HTMLResponse(PAGE)

    async def api_ask(request):
        question = request.query_params.get("q", "").strip()
        try:  # refused with 400 before the stream starts (an error was a 200, a long question cut silently)
            analyze(question)
        except CiteragError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

        ask = lib["reader"].ask

        def lines():
            # The answer is asked on a thread of its own, which hears the model's draft as it is written (a model
            # on an OpenAI-compatible server streams it): each piece is sent on at once, then the checked answer
            # with its citations, which replaces the draft.
            heard: queue.SimpleQueue = queue.SimpleQueue()

            def asking() -> None:
                try:
                    with drafts_to(lambda piece: heard.put(("draft", piece))):
                        heard.put(("answer", ask(question)))
                except CiteragError as exc:
                    heard.put(("error", str(exc)))
                except Exception as exc:  # a bug: said on the page, never a traceback
                    heard.put(("error", f"the answer failed ({type(exc).__name__})"))

            threading.Thread(target=asking, name="citerag-serve-ask", daemon=True).start()
            while True:
                kind, value = heard.get()
                if kind == "draft":
                    yield json.dumps({"draft": value} if value is not None else {"draft_reset": True},
                                     ensure_ascii=False) + "\n"
                elif kind == "error":
                    yield json.dumps({"error": value}) + "\n"
                    return
                else:
                    answer = value
                    break
            numbers: dict[str, int] = {}
            for s in answer.sources:
                numbers.setdefault(s.source_id, len(numbers) + 1)

            listed = {s.source_id: s.section for s in answer.sources}

            def src(s):
                # A text file's citation opens with every line its source is cited for marked (the answer's list
                # says "lines 98-102"; a citation of one of its sentences marked only that sentence's 98-99), at
                # the lines of this sentence.
                section, at = s.section, line_bounds(s.section)
                if at and line_bounds(listed.get(s.source_id)):
                    section = spanning(listed[s.source_id], s.section)
                return {"n": numbers[s.source_id], "uri": s.uri, "page": s.page, "section": section,
                        "title": s.title, "excerpt": s.excerpt, "at": at[0] if at else None}

            cursor = 0
            for c in answer.citations:  # one line per cited span, as the client renders them
                yield json.dumps({"text": answer.text[cursor:c.end], "sources": [src(s) for s in c.sources]},
                                 ensure_ascii=False) + "\n"
                cursor = c.end
            if answer.text[cursor:]:
                yield json.dumps({"text": answer.text[cursor:]}, ensure_ascii=False) + "\n"
            related = [{"n": n, **related_wire(p), "excerpt": ""} for n, p in enumerate(answer.related, start=1)]
            yield json.dumps({"answered": answer.answered, "sources_list": [src(s) for s in answer.sources],
                              # Named by the offline answerer's decision; a model's own text by its wording.
                              "says_not_found": not answer.answered and (
                                  answer.decision.reason is not None if answer.decision
                                  else says_not_found(answer.text)),
                              "reason": answer.decision.reason if answer.decision else None,
                              "reason_detail": answer.decision.detail if answer.decision else "",
                              "related": related}, ensure_ascii=False) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    async def source(request):
        uri = request.query_params.get("uri", "")
        known = lib["reader"].known_file(uri)
        if known is None:
            return PlainTextResponse("not a document of this index", status_code=404)
        path = known[0]
        page = request.query_params.get("page", "")
        page_n = _number(page) or None
        section = request.query_params.get("section", "")[:500]
        quote_text = request.query_params.get("quote", "")[:2000]
        # A PDF opens in PDF.js at the cited page with the cited words highlighted; a text file as numbered lines
        # at the cited ones.
        target = f"/file?uri={quote(uri, safe='')}"
        lines = line_bounds(section) if first_line(section, uri) is not None else None
        if lines:
            at = _number(request.query_params.get("at", ""))
            at = at if lines[0] <= at <= lines[1] else lines[0]  # the cited sentence's first line
            target = f"/lines?uri={quote(uri, safe='')}&from={lines[0]}&to={lines[1]}#L{at}"
        elif path.suffix.lower() in MARKED_SUFFIXES and quote_text.strip():  # a web page, its cited words marked
            target = f"/marked?uri={quote(uri, safe='')}&quote={quote(quote_text, safe='')}#{MARK_ID}"
        place = location(page_n, section)
        where = f", {place}" if place else ""
        # An empty bar said nothing: a place to look (a refusal's) has no quote.
        bar = f"<blockquote id='quote'>{html.escape(quote_text)}</blockquote>" if quote_text.strip() else ""
        heading = f"<h2 id='where'>{html.escape(path.name + where)}</h2>{bar}"
        if path.suffix.lower() == ".pdf" and not lines:
            return HTMLResponse(_pdf_page(path.name, heading, f"/file?uri={quote(uri, safe='')}", page_n or 1,
                                          quote_text), headers={"Content-Security-Policy": PDF_PAGE_CSP})
        # A document is shown, never run: an indexed web page's scripts would run on this server's origin and could
        # read every other indexed file.
        body = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(path.name)}"
                f"</title><style>body{{font-family:system-ui,sans-serif;margin:1rem}}blockquote{{background:"
                f"#fff3b0;padding:.6rem;margin:0 0 .8rem 0}}iframe{{width:100%;height:85vh;border:1px solid #ccc}}"
                f"</style></head><body>{heading}"
                f"<iframe id='doc' sandbox='' src='{html.escape(target)}'></iframe></body></html>")
        return HTMLResponse(body)

    def read_whole(request, shown_as: str):
        """(the indexed file's bytes, None), or (None, the response that refuses it: not indexed, changed, or over
        LINES_MAX_BYTES to be shown whole)."""
        got, refused = opened(request.query_params.get("uri", ""))
        if refused is not None:
            return None, refused
        try:
            if got.size > LINES_MAX_BYTES:
                return None, PlainTextResponse(f"the file is over {LINES_MAX_BYTES:,} bytes, too large to show "
                                               f"{shown_as}; open the file itself", status_code=413)
            return got.read(), None
        finally:
            got.close()

    async def marked(request):
        """An indexed web page with the quote's words in <mark> elements (serve_marks), shown as /file shows it:
        in a sandbox, no script run. Only a web page: a Markdown or text file's markup ("<img src=…>" written in
        it) was served as a page of HTML, its images fetched."""
        path = uri_to_path(request.query_params.get("uri", ""))
        if path is None or path.suffix.lower() not in MARKED_SUFFIXES:
            return PlainTextResponse("only a web page (.html, .htm) is shown marked; open the file itself",
                                     status_code=404)
        data, refused = read_whole(request, "marked")
        if refused is not None:
            return refused
        try:  # read as the loader reads it, so the words found are the words cited
            text = decode_text(data, html=True)
        except CiteragError:
            text = data.decode("utf-8", errors="replace")
        page, _ = mark_html(text, request.query_params.get("quote", "")[:2000])
        return HTMLResponse(page, headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy":
                                           "sandbox; script-src 'none'; object-src 'none'"})

    async def static(request):
        """The PDF page's script and style, and PDF.js (pdfjs-dist's built files and character maps, shipped in the
        package): files of the static folder only."""
        target = (STATIC_DIR / request.path_params["path"]).resolve()
        media = STATIC_TYPES.get(target.suffix)
        if media is None or STATIC_DIR.resolve() not in target.parents or not target.is_file():
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(target, media_type=media, headers={"X-Content-Type-Options": "nosniff",
                                                               "Cache-Control": "max-age=3600"})

    async def file(request):
        got, refused = opened(request.query_params.get("uri", ""))
        if refused is not None:
            return refused
        path = uri_to_path(request.query_params["uri"])
        # Opened on its own, an HTML document gets a unique origin and no scripts (CSP sandbox), and nothing is
        # sniffed into HTML; the PDF viewer needs no sandbox and would not render in one.
        headers = {"X-Content-Type-Options": "nosniff", "Content-Length": str(got.size)}
        if path.suffix.lower() != ".pdf":
            headers["Content-Security-Policy"] = "sandbox; script-src 'none'; object-src 'none'"
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if media.startswith("text/"):
            media += "; charset=utf-8"

        def body():  # from the descriptor that was checked, never the name again
            try:
                yield from chunks_of(got.fd, got.size)
            finally:
                got.close()

        return StreamingResponse(body(), media_type=media, headers=headers)

    async def numbered(request):
        data, refused = read_whole(request, "as numbered lines")
        if refused is not None:
            return refused
        bounds = [request.query_params.get(k, "") for k in ("from", "to")]
        first, last = (_number(b) for b in bounds)
        return HTMLResponse(numbered_lines(data, first, last))

    routes = [Route("/", index), Route("/api/ask", api_ask), Route("/source", source), Route("/file", file),
              Route("/lines", numbered), Route("/marked", marked), Route("/static/{path:path}", static),
              Route("/api/documents", documents_route, methods=["GET", "POST", "DELETE"])]
    web = Starlette(routes=routes)
    web.state.uploads = uploads
    return _only_for(web, host)


MARKED_SUFFIXES = (".html", ".htm")  # shown with the cited words marked (serve_marks)
STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".bcmap": "application/octet-stream"}
# The PDF page runs the server's own scripts only (PDF.js, with eval off); its worker is a file of this server.
PDF_PAGE_CSP = ("default-src 'self'; script-src 'self'; worker-src 'self'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data: blob:; font-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
                "form-action 'none'")


def _pdf_page(name: str, heading: str, file_url: str, page: int, quote_text: str) -> str:
    """The PDF shown by PDF.js (static/viewer.mjs) at `page`, the quote's words highlighted on it. Every value is
    an escaped attribute, read by the script as text."""
    e = html.escape
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(name)}</title>"
            "<link rel='stylesheet' href='/static/viewer.css'></head><body>"
            f"{heading}<div id='bar'><button id='prev'>Previous page</button><span id='pageinfo'></span>"
            "<button id='next'>Next page</button><span id='status'></span>"
            f"<a href='{e(file_url)}#page={page}' target='_blank'>Open the PDF file</a></div>"
            f"<div id='viewer' data-file='{e(file_url)}' data-page='{page}' data-quote='{e(quote_text)}'>"
            "<div id='pdfpage'></div></div><script type='module' src='/static/viewer.mjs'></script></body></html>")


def _number(param: str) -> int:
    """A page or line number from the query string; 0 for anything else ("²" is a digit to str.isdigit)."""
    return int(param) if re.fullmatch(r"[0-9]{1,9}", param) else 0


def numbered_lines(data: bytes, first: int, last: int) -> str:
    """A text file as the loader counts its lines (documents/loaders.py: any line ending), each with its number
    and an anchor, lines first..last marked and CONTEXT_LINES either side of them shown; the text is escaped,
    never markup."""
    try:  # in the encoding the loader read it in, so the lines shown are the lines cited
        text = decode_text(data)
    except CiteragError:
        text = data.decode("utf-8-sig", errors="replace")
    text = resolve_overstrike(text)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # A bounded window whatever the query says: from=0&to=0 (or a range of a million lines) rendered the whole
    # file, 82 MB of HTML from a 4 MB file. Lines first..last (at most CITED_LINES_MAX of them) are marked.
    cited = first > 0
    first = min(max(first, 1), len(lines))
    last = min(max(last, first), first + CITED_LINES_MAX - 1, len(lines))
    start = max(1, first - CONTEXT_LINES)
    stop = min(len(lines), last + CONTEXT_LINES)
    rows = []
    for n in range(start, stop + 1):
        mark = " class='cited'" if cited and first <= n <= last else ""
        line = lines[n - 1]
        shown = html.escape(line[:LINE_CHARS_MAX]) + (" <b>[…]</b>" if len(line) > LINE_CHARS_MAX else "")
        rows.append(f"<span id='L{n}'{mark}><i>{n}</i>{shown}</span>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><style>pre{font:13px/1.5 monospace;margin:0}"
            "span{display:block;white-space:pre-wrap}i{display:inline-block;width:4em;color:#999;font-style:normal;"
            "user-select:none}.cited{background:#fff3b0}</style></head><body><pre>"
            + "".join(rows) + "</pre></body></html>")


@app.command()
def serve(
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="the port to listen on")] = 8765,
    host: Annotated[str, typer.Option("--host", help="the address to bind")] = "127.0.0.1",
    index: IndexOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """A local web page: ask, read the streamed answer, click a citation to see the cited words highlighted in the
    PDF; add documents (drag and drop) and remove them."""
    with errors(False):
        try:
            import uvicorn
        except ImportError:
            raise CiteragError(needs("citerag serve", "local")) from None
        port_free(host, port)
        comps = open_index(index, namespace)
        own = components(index, namespace)
        if own.settings.resolved_index_path == comps.settings.resolved_index_path:
            own = None
        else:  # the bundled samples are shown until a document of the user's own is added from the page
            own.embedder = comps.embedder  # the model loads once
        web = build_app(comps, host, own)
        err.print(f"citerag on http://{host}:{port}/", highlight=False)
        from citerag.cli.serve_http import with_deadlines

        uvicorn.run(web, host=host, port=port, log_level="warning", http=with_deadlines())
