"""One page of a longer listing: which page, how many per page, how many in all.

Every paginated page (the API's run list, search, the family table, rerun requests, moderation) reads its
page number with :func:`page_number` and slices with :class:`Pagination`, so their page
numbers, links and refusals agree. A page number past ``MAX_PAGE`` is refused rather than
turned into an offset that overflows the database's 64-bit integers (a 500 on both backends);
the pages a reader follows (search, the family table) also refuse one past their last, while
lists whose rows leave as people act (the rerun requests, moderation) show their last.
"""

import math
from dataclasses import dataclass, replace

MAX_PAGE = 1_000_000  # times the largest page size (500) still fits a 64-bit offset, with room to spare


class BadPage(ValueError):
    """A page number that is not a whole number from 1 to ``MAX_PAGE``; views answer 400 with its message."""


def written_in_digits(text: str) -> bool:
    """Whether a query value is a whole number as links write it, ASCII digits alone: Python's ``int``
    also reads ``1_0``, ``+3``, `` 3`` and full-width digits, which would name the same page in many ways."""
    return text.isascii() and text.isdigit()


def page_number(text) -> int:
    """The page a query argument asks for; absent means the first (no link or form sends it empty)."""
    if text is None:
        return 1
    if not written_in_digits(text):
        raise BadPage(f"page must be a whole number, not {text[:20]!r}")
    page = int(text)
    if page < 1:
        raise BadPage("page must be 1 or more")
    if page > MAX_PAGE:
        raise BadPage(f"page must be at most {MAX_PAGE}")
    return page


@dataclass(frozen=True)
class Pagination:
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def has_next(self) -> bool:
        return self.page * self.per_page < self.total

    def refuse_past_last(self) -> None:
        """Raise BadPage for a page past the last one: it would count the matches, then list none of them."""
        if self.page > self.pages:
            raise BadPage(f"page {self.page} is past the last page ({self.pages})")

    def within_last(self) -> "Pagination":
        """This page, or the last where this is past it: for lists whose rows leave as people act on them (a
        maintainer's on a later page's last row, requests finishing while a reader pages), where the page asked
        for was there a moment ago."""
        return replace(self, page=min(self.page, self.pages))

    def of(self, items):
        """This page of ``items``: a peewee query (paginated in SQL) or a list (sliced)."""
        if isinstance(items, list):
            return items[self.offset:self.offset + self.per_page]
        return items.paginate(self.page, self.per_page)
