// serve's PDF page: PDF.js draws the cited page with its text layer, and the cited words get highlight boxes laid
// over them (the boxes of the text layer's own characters), scrolled into view. The quote is found in the page's text
// with whitespace, case, hyphens and Unicode compatibility forms set aside (a PDF's text breaks lines and words where
// its layout does); a quote of several sentences (" … " between them) highlights each one found.
import * as pdfjsLib from '/static/pdfjs/pdf.min.mjs';

pdfjsLib.GlobalWorkerOptions.workerSrc = '/static/pdfjs/pdf.worker.min.mjs';

const viewer = document.getElementById('viewer');
const holder = document.getElementById('pdfpage');
const cited = Number(viewer.dataset.page) || 1;
const quote = viewer.dataset.quote || '';
const say = (text) => { document.getElementById('status').textContent = text; };
let pdf = null;
let current = 0;

const IGNORED = /[\s\-\u00ad\u2010\u2011]/u;

function folded(text, onChar) {
  // Each kept character, folded, with the index of the character of `text` it came from.
  for (let i = 0; i < text.length; i++) {
    for (const ch of text[i].normalize('NFKC').toLowerCase()) {
      if (!IGNORED.test(ch)) onChar(ch, i);
    }
  }
}

function pageText(layer) {
  // The text layer's characters folded into one string, and for each the text node and offset it stands for.
  let flat = '';
  const where = [];
  const walker = document.createTreeWalker(layer, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    folded(node.nodeValue, (ch, i) => { flat += ch; where.push([node, i]); });
  }
  return {flat, where};
}

function foldedQuote(text) {
  let out = '';
  folded(text, (ch) => { out += ch; });
  return out;
}

function spans(flat, text) {
  // Where the page holds each sentence of the quote: [start, end) in the folded page text.
  const found = [];
  for (const part of text.split('…').map((p) => p.trim()).filter((p) => p.length > 1)) {
    const whole = foldedQuote(part);
    const at = whole.length > 1 ? flat.indexOf(whole) : -1;
    if (at >= 0) { found.push([at, at + whole.length]); continue; }
    // Not whole on this page (it goes on to the next, or a value is masked): its sentences, each of some length.
    for (const sentence of part.split(/(?<=[.!?。！？])\s*/u)) {
      const q = foldedQuote(sentence);
      const i = q.length >= 8 ? flat.indexOf(q) : -1;
      if (i >= 0) found.push([i, i + q.length]);
    }
  }
  return found;
}

function highlight(layer, marks) {
  const {flat, where} = pageText(layer);
  const origin = holder.getBoundingClientRect();
  let first = null;
  for (const [start, end] of spans(flat, quote)) {
    // One DOM range per text node the words run through (a line, or a run of a line, of the text layer).
    let i = start;
    while (i < end) {
      const node = where[i][0];
      const from = where[i][1];
      let to = from;
      while (i < end && where[i][0] === node) { to = where[i][1]; i++; }
      const range = document.createRange();
      range.setStart(node, from);
      range.setEnd(node, to + 1);
      for (const r of range.getClientRects()) {
        if (r.width < 0.5 || r.height < 0.5) continue;
        const box = document.createElement('div');
        box.className = 'cited';
        box.style.left = (r.left - origin.left) + 'px';
        box.style.top = (r.top - origin.top) + 'px';
        box.style.width = r.width + 'px';
        box.style.height = r.height + 'px';
        marks.append(box);
        first ||= box;
      }
    }
  }
  if (first) {  // the viewer scrolls, not the page around it (the quote bar stays in view)
    const top = first.getBoundingClientRect().top - viewer.getBoundingClientRect().top;
    viewer.scrollTop += top - viewer.clientHeight / 3;
  }
  return marks.children.length;
}

async function show(n) {
  const page = await pdf.getPage(n);
  const natural = page.getViewport({scale: 1});
  const scale = Math.min(2, Math.max(0.5, (viewer.clientWidth - 24) / natural.width));
  const viewport = page.getViewport({scale});
  const ratio = window.devicePixelRatio || 1;
  const canvas = document.createElement('canvas');
  canvas.width = Math.floor(viewport.width * ratio);
  canvas.height = Math.floor(viewport.height * ratio);
  canvas.style.width = Math.floor(viewport.width) + 'px';
  canvas.style.height = Math.floor(viewport.height) + 'px';
  const marks = document.createElement('div');
  marks.className = 'highlights';
  marks.id = 'highlights';
  const layer = document.createElement('div');
  layer.className = 'textLayer';
  layer.id = 'textlayer';
  holder.style.setProperty('--scale-factor', String(scale));
  holder.style.width = canvas.style.width;
  holder.style.height = canvas.style.height;
  holder.replaceChildren(canvas, marks, layer);
  current = n;
  document.getElementById('pageinfo').textContent = 'page ' + n + ' of ' + pdf.numPages;
  document.getElementById('prev').disabled = n <= 1;
  document.getElementById('next').disabled = n >= pdf.numPages;
  await page.render({canvasContext: canvas.getContext('2d'), viewport,
                     transform: ratio === 1 ? null : [ratio, 0, 0, ratio, 0, 0]}).promise;
  await new pdfjsLib.TextLayer({textContentSource: page.streamTextContent(), container: layer, viewport}).render();
  let marked = 0;
  if (n === cited && quote) {
    marked = highlight(layer, marks);
    say(marked ? '' : 'The quoted words are not found on this page as written; the page is the one cited.');
  }
  document.body.dataset.page = String(n);
  document.body.dataset.highlighted = String(marked);
}

document.getElementById('prev').addEventListener('click', () => { if (current > 1) show(current - 1); });
document.getElementById('next').addEventListener('click', () => { if (pdf && current < pdf.numPages) show(current + 1); });

try {
  pdf = await pdfjsLib.getDocument({url: viewer.dataset.file, cMapUrl: '/static/pdfjs/cmaps/', cMapPacked: true,
                                    isEvalSupported: false, enableXfa: false}).promise;
  await show(Math.min(Math.max(cited, 1), pdf.numPages));
} catch (e) {
  say('Cannot show the PDF here (' + (e && e.message ? e.message : e) + '); open the file itself.');
  document.body.dataset.highlighted = 'error';
}
