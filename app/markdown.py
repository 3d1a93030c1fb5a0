"""Safe markdown for community notes.

Two independent layers: markdown-it-py renders CommonMark with raw HTML turned
off (any ``<tag>`` a reader types comes out as text) and refuses unsafe link
schemes; bleach then keeps only an allowlist of tags, attributes and URL
schemes, so a bug in either layer alone cannot let script through. Headings and
images are not rendered (a note must not restyle the page or load third-party
content); links get ``rel="nofollow noopener ugc"``.

A bleach ``Cleaner`` keeps its HTML parser's state between calls, so two threads
cleaning with one garble each other's notes (a note shown with another's text, or
a 500): each thread of a threaded server cleans with a Cleaner of its own.
"""

import threading
from functools import partial

import bleach
from bleach.linkifier import LinkifyFilter
from markdown_it import MarkdownIt
from markupsafe import Markup

ALLOWED_TAGS = frozenset({"a", "p", "br", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li", "hr",
                          "s", "del"})
ALLOWED_ATTRIBUTES = {"a": ["href", "title", "rel"], "ol": ["start"]}
ALLOWED_PROTOCOLS = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener ugc"

_renderer = (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
             .enable("strikethrough")
             .disable(["heading", "lheading", "image", "html_block", "html_inline"]))


def _set_link_rel(attrs, new=False):
    attrs[(None, "rel")] = LINK_REL
    return attrs


_per_thread = threading.local()


def _cleaner() -> bleach.Cleaner:
    """This thread's Cleaner (bleach's are not thread-safe), made on its first note."""
    cleaner = getattr(_per_thread, "cleaner", None)
    if cleaner is None:
        cleaner = _per_thread.cleaner = bleach.Cleaner(
            tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, protocols=ALLOWED_PROTOCOLS, strip=True,
            filters=[partial(LinkifyFilter, callbacks=[_set_link_rel], skip_tags=["pre", "code"],
                             parse_email=False)])
    return cleaner


def render_markdown(text: str | None) -> Markup:
    """The note's markdown as safe HTML: allowlisted tags only, links marked nofollow."""
    if not text:
        return Markup("")
    html = _renderer.render(text)
    html = _cleaner().clean(html)
    return Markup(html.strip())
