"""Pages as pdfminer.six lays them out, the same on every run, with a glyph it cannot map as U+FFFD.

pdfminer.six groups a page's text boxes closest pair first, in a heap of (distance, id(box1), id(box2), ...): two
pairs as close as each other are taken in the order of their memory addresses, which change from run to run. TeX
Live's Japanese guide, whose emphasis dots make boxes of equal size side by side, loaded as "・ さ ・ れ" in some runs
and "・ れ ・ さ" in others, so re-ingesting an unchanged file could change its passages. The grouping here is
pdfminer.six's own (`LTLayoutContainer.group_textboxes`, 20260107, MIT licence), except that a tie goes to the pair
made first: boxes in pdfminer's order, then groups as they form.
"""

from __future__ import annotations

import heapq
import io
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import (
    LAParams,
    LTComponent,
    LTFigure,
    LTLayoutContainer,
    LTPage,
    LTTextBox,
    LTTextBoxVertical,
    LTTextContainer,
    LTTextGroup,
    LTTextGroupLRTB,
    LTTextGroupTBRL,
)
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage
from pdfminer.utils import Plane


def _distance(a: LTComponent, b: LTComponent) -> float:
    """pdfminer's: the area of the rectangle around both, less their own areas."""
    x0, y0 = min(a.x0, b.x0), min(a.y0, b.y0)
    x1, y1 = max(a.x1, b.x1), max(a.y1, b.y1)
    return (x1 - x0) * (y1 - y0) - a.width * a.height - b.width * b.height


class _StableGrouping(LTLayoutContainer):
    def group_textboxes(self, laparams: LAParams, boxes: Sequence[LTTextBox]) -> list[LTTextGroup]:
        serial = itertools.count()
        number: dict[int, int] = {id(box): next(serial) for box in boxes}
        plane: Plane[Any] = Plane(self.bbox)

        def between(a: Any, b: Any) -> bool:
            area = (min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1))
            return any(o is not a and o is not b for o in plane.find(area))

        heap = [(False, _distance(a, b), number[id(a)], number[id(b)], a, b)
                for i, a in enumerate(boxes) for b in boxes[i + 1:]]
        heapq.heapify(heap)
        plane.extend(boxes)
        done: set[int] = set()
        while heap:
            checked, d, n1, n2, a, b = heapq.heappop(heap)
            if n1 in done or n2 in done:
                continue
            if not checked and between(a, b):
                heapq.heappush(heap, (True, d, n1, n2, a, b))
                continue
            vertical = isinstance(a, (LTTextBoxVertical, LTTextGroupTBRL)) \
                or isinstance(b, (LTTextBoxVertical, LTTextGroupTBRL))
            group: LTTextGroup = LTTextGroupTBRL([a, b]) if vertical else LTTextGroupLRTB([a, b])
            n = next(serial)
            number[id(group)] = n
            plane.remove(a)
            plane.remove(b)
            done.update((n1, n2))
            for other in plane:
                heapq.heappush(heap, (False, _distance(group, other), n, number[id(other)], group, other))
            plane.add(group)
        return list(plane)


class _Page(_StableGrouping, LTPage):
    pass


class _Figure(_StableGrouping, LTFigure):
    pass


class _Aggregator(PDFPageAggregator):
    """pdfminer's aggregator, building pages and forms that group their boxes as above."""

    def handle_undefined_char(self, font: Any, cid: int) -> str:
        # pdfminer writes a glyph it cannot map as "(cid:127)", which search indexed as the words "cid" and "127":
        # 886 times in 109 Japanese TeX PDFs, whose manuals discuss CID fonts (bullets and math symbols in Computer
        # Modern fonts embedded as CFF, whose built-in encoding pdfminer does not read). U+FFFD is Unicode's
        # "unknown".
        return "\ufffd"

    def begin_page(self, page: PDFPage, ctm: Any) -> None:
        super().begin_page(page, ctm)
        self.cur_item = _Page(self.cur_item.pageid, self.cur_item.bbox)

    def begin_figure(self, name: str, bbox: Any, matrix: Any) -> None:
        super().begin_figure(name, bbox, matrix)
        figure = self.cur_item
        self.cur_item = _Figure(figure.name, bbox, figure.matrix)


def layout_pages(data: bytes, numbers: list[int], laparams: LAParams) -> Iterator[LTPage]:
    """`pdfminer.high_level.extract_pages` for those pages (0-based), with the stable grouping."""
    manager = PDFResourceManager(caching=True)
    device = _Aggregator(manager, laparams=laparams)
    interpreter = PDFPageInterpreter(manager, device)
    for page in PDFPage.get_pages(io.BytesIO(data), set(numbers)):
        interpreter.process_page(page)
        yield device.get_result()


def page_boxes(item: Any) -> list[str]:
    """The text of a page's boxes in reading order, those of the forms it draws included."""
    if isinstance(item, LTTextContainer):
        return [item.get_text().strip()]
    if isinstance(item, LTFigure) or hasattr(item, "pageid"):  # a page, or a form drawn on it
        return [text for child in item for text in page_boxes(child)]
    return []
