"""Text from images of text: a scanned PDF page with no text layer, a PNG, JPEG or TIFF. Tesseract (Debian's
`tesseract-ocr` with its `-eng` and `-jpn` models; nothing is downloaded) run as a process, Pillow (the `ocr`
extra) for the images. Off unless asked for (CITERAG_OCR=true or `citerag ingest --ocr`): a whole A4 page costs about
2.5 CPU seconds, five times what embedding its passages does (docs/formats.md)."""

from __future__ import annotations

import io
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from citerag.errors import DocumentError

DEFAULT_LANGUAGES = "eng+jpn"
MAX_PIXELS = 60_000_000  # a page at 600 dpi is 35 million; above this is a decompression bomb, not a scan
MAX_FRAMES = 5000
PAGE_TIMEOUT_S = 300  # one page; a page that takes longer is not a page of text
# Tesseract's OpenMP threads spin while they wait: on a busy machine a page took 6 CPU seconds with them and 1
# without, in about the same wall time. Pages are many; one thread each is the better use of the cores.
_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}
# Tesseract writes Japanese with a space between characters where a line was set loosely: none is meant there.
_CJK = r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
_CJK_GAP = re.compile(rf"(?<={_CJK}) +(?={_CJK})")


@dataclass(frozen=True)
class Ocr:
    """One OCR engine setting: Tesseract's languages, as `tesseract --list-langs` names them ("eng+jpn")."""

    languages: str = DEFAULT_LANGUAGES

    def read(self, image: Any) -> str:
        """The text of one image (a PIL image), lines as Tesseract found them."""
        # --psm 3: find the page's own layout (columns, blocks), as a scan of a printed page has. A numbered list
        # can lose its numbers to a block of their own (docs/formats.md); --psm 4 keeps them but runs two columns
        # into one line, which would make every quoted sentence a mix of two.
        return tidy(tesseract(_upright(image), "-l", self.languages, "--psm", "3"))

    def image_pages(self, data: bytes) -> list[str]:
        """The text of each frame of an image file (a TIFF may hold many pages; a PNG or JPEG holds one)."""
        try:
            from PIL import Image, UnidentifiedImageError
        except ImportError:
            raise DocumentError("reading images needs Pillow: pip install 'citerag[ocr]'") from None
        Image.MAX_IMAGE_PIXELS = MAX_PIXELS
        try:
            img = Image.open(io.BytesIO(data))
            frames = getattr(img, "n_frames", 1)
            if frames > MAX_FRAMES:
                raise DocumentError(f"the image has {frames:,} pages; the limit is {MAX_FRAMES:,}")
            out = []
            for n in range(frames):
                img.seek(n)
                out.append(self.read(img.copy()))
            return out
        except UnidentifiedImageError:
            raise DocumentError("not an image Pillow can read; the file is corrupt or misnamed") from None
        except Image.DecompressionBombError:
            raise DocumentError(f"the image has more than {MAX_PIXELS:,} pixels; it is refused") from None
        except (OSError, SyntaxError, ValueError) as exc:
            raise DocumentError(f"the image is corrupt and cannot be read ({type(exc).__name__})") from None


def pdf_page_images(page: Any) -> list[Any]:
    """The images a PDF page draws (a scanned page is one, or a few strips), as PIL images, largest first."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    images = []
    try:
        for f in page.images:
            images.append(f.image)
    except Image.DecompressionBombError:
        raise DocumentError(f"a page image has more than {MAX_PIXELS:,} pixels; it is refused") from None
    except Exception as exc:  # pypdf raises many kinds on a damaged image stream
        if "jbig2dec" in str(exc):  # scanners' favourite compression for black and white pages
            raise DocumentError("a scanned page is JBIG2-compressed, which needs jbig2dec: apt-get install "
                                "jbig2dec") from None
        raise DocumentError(f"a page image cannot be read ({type(exc).__name__})") from None
    return sorted((i for i in images if i is not None), key=lambda i: -i.width * i.height)


def tesseract(image: Any, *args: str, check: bool = True) -> str:
    """Tesseract's text output for a PIL image (given on its standard input as PNG)."""
    buf = io.BytesIO()
    image.save(buf, "PNG")
    try:
        done = subprocess.run(["tesseract", "stdin", "stdout", *args], input=buf.getvalue(), capture_output=True,
                              timeout=PAGE_TIMEOUT_S, env=_ENV, check=False)
    except FileNotFoundError:
        raise DocumentError("reading scanned pages needs Tesseract: apt-get install tesseract-ocr "
                            "tesseract-ocr-eng tesseract-ocr-jpn") from None
    except subprocess.TimeoutExpired:
        raise DocumentError(f"OCR of one page took longer than {PAGE_TIMEOUT_S} s; it was stopped") from None
    if done.returncode and check:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DocumentError(f"OCR failed: {' '.join((said[-1] if said else '').split())[:300] or 'no reason given'}")
    return done.stdout.decode("utf-8", "replace")


def _upright(image: Any) -> Any:
    """Greyscale with no alpha (Tesseract reads transparent pixels as black), cleaned of speckle, levelled, and
    turned upright when Tesseract's orientation detection is sure the scan lies on its side or upside down. A 3x3
    median takes out speckle noise (at 5% speckle Japanese lost four characters in ten) and leaves strokes of
    150 dpi text whole."""
    from PIL import ImageFilter

    if "A" in image.mode or image.mode == "P":
        image = image.convert("RGBA").convert("RGB")
    image = _deskewed(image.convert("L").filter(ImageFilter.MedianFilter(3)))
    osd = tesseract(image, "--psm", "0", check=False)  # too little text to tell: it fails, and the page stays
    rotate = re.search(r"^Rotate: (\d+)", osd, re.M)
    sure = re.search(r"^Orientation confidence: ([\d.]+)", osd, re.M)
    if rotate and sure and int(rotate[1]) in (90, 180, 270) and float(sure[1]) >= 2.0:
        image = image.rotate(-int(rotate[1]), expand=True)
    return image


SKEW_LIMIT = 6.0  # degrees either way a scan is searched for the slant of its lines
SKEW_STEP = 0.25


def _deskewed(image: Any) -> Any:
    """The scan turned so its lines run level: the angle at which the rows of a reduced copy are most unequal in ink
    (level lines make rows of all ink and rows of none). Tesseract reads slanted Japanese badly (at 4°, six in ten
    characters were wrong; level, none)."""
    import numpy as np
    from PIL import Image

    small = image.copy()
    small.thumbnail((800, 800))
    ink = small.point(lambda v: 255 if v < 128 else 0)
    best, best_score = 0.0, -1.0
    steps = int(SKEW_LIMIT / SKEW_STEP)
    for n in range(-steps, steps + 1):
        rows = np.asarray(ink.rotate(n * SKEW_STEP, resample=Image.Resampling.NEAREST), dtype=np.float32).sum(axis=1)
        score = float(np.var(rows))
        if score > best_score:
            best, best_score = n * SKEW_STEP, score
    if best == 0.0:
        return image
    return image.rotate(best, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)


def tidy(text: str) -> str:
    lines = [_CJK_GAP.sub("", " ".join(line.split())) for line in text.replace("\x0c", "\n").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
