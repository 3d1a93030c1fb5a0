"""What may name the things KernelIndex stores and shows: one rule, for the harness and the app alike.

The harness checks the names plugins give their families and implementations when it
discovers them, so that nothing is measured under a name the index would refuse to
record; the app checks accounts, tokens, hosts and GPUs with the same rule. It lives
here because the app depends on the harness, never the reverse.
"""

from __future__ import annotations

import unicodedata

FAMILY_NAME_LENGTH = 120
"""The longest family name the index stores (``Family.name``)."""

IMPLEMENTATION_NAME_LENGTH = 80
"""The longest implementation name the index stores (``Run.implementation``)."""


BLANKS = "".join(chr(code) for first, last in (
    (0x115F, 0x1160), (0x3164, 0x3164), (0xFFA0, 0xFFA0),  # the Hangul fillers
    (0x2800, 0x2800),  # the braille blank
    (0x034F, 0x034F), (0x17B4, 0x17B5), (0x180B, 0x180D), (0x180F, 0x180F),  # the grapheme joiner, Khmer's inherent
    (0xFE00, 0xFE0F), (0xE0100, 0xE01EF),  # vowels and the variation selectors: marks that draw nothing
) for code in range(first, last + 1))
"""Characters Python calls printable and no white space that are drawn as nothing (the Hangul fillers, the braille
blank, and the marks among Unicode's default-ignorable characters): at either end of a name they would make a twin
that looks the same, as a space would."""


def name_problem(what: str, text: str, most: int) -> str | None:
    """Why ``text`` cannot name ``what`` (an account, a token, a host, a GPU): one to ``most`` printable characters,
    with no white space or :data:`BLANKS` at either end (sign-in trims a username; a GPU with one more space would
    rank apart), in Unicode's composed form (:func:`decomposed_problem`)."""
    if not _printable_name(text, most):
        return f"{what} is 1 to {most} printable characters with no white space at either end, not {text[:100]!r}"
    return decomposed_problem(what, text)


def _printable_name(text: str, most: int) -> bool:
    return bool(text) and len(text) <= most and text.isprintable() and text == text.strip() == text.strip(BLANKS)


def decomposed_problem(what: str, text: str) -> str | None:
    """Why ``text``, written in decomposed Unicode, cannot name ``what``: ``e`` and a combining accent read as ``é``
    and would name another GPU or implementation, ranked apart."""
    if unicodedata.is_normalized("NFC", text):
        return None
    return f"{what} is written in Unicode's composed form (NFC), as {unicodedata.normalize('NFC', text)!r}, " \
           f"not {text[:100]!r}"


TWIN_SUFFIXES = (".json", ".csv")
"""What ends a page's address to ask for its JSON or CSV twin: ``/families/x.json`` is the twin of ``/families/x``."""


def address_name_problem(what: str, text: str, most: int) -> str | None:
    """Why ``text`` cannot name a family or an implementation: :func:`name_problem`'s rule, and no ``/``, not ``.``
    or ``..`` and no twin's suffix (:data:`TWIN_SUFFIXES`), since each is one segment of page addresses
    (``/families/<name>``) and of run ids (``<kernel>/<pass>/<implementation>/...``), which such a segment would
    leave unreachable."""
    if not _printable_name(text, most) or "/" in text or text in (".", "..") or text.endswith(TWIN_SUFFIXES):
        return (f"{what} is 1 to {most} printable characters with no / and no white space at either end, neither . "
                f"nor .. nor ending {' or '.join(TWIN_SUFFIXES)}: not {text[:100]!r}")
    return decomposed_problem(what, text)
