"""Text KernelIndex accepts from outside: no NUL or other control characters, on either database.

PostgreSQL refuses a NUL in any string (a 500 if it reaches a query) while SQLite stores
it, and no name, id or filter here ever holds a control character, so every request's
path and query (names and values) is checked once, before any view runs: one answers
400. Tabs and line breaks stay allowed (pasted into the search box, they are spaces),
as does any other Unicode text. The Liger importer applies the same rule to its cells.
What readers post and maintainers' reasons refuse the invisible text-direction
controls as well (:data:`DIRECTION_CONTROLS`). Messages of other programs passed on (a database driver's,
a web server's) are put on one line (:func:`one_line`).
"""

from flask import request
from werkzeug.exceptions import BadRequest
from werkzeug.routing import IntegerConverter

CONTROL_CHARACTERS = frozenset(chr(c) for c in range(32) if chr(c) not in "\n\t") | {"\x7f"}
# The same rule as a JSON Schema pattern, for the OpenAPI document's string parameters.
TEXT_PATTERN = "^[^" + "".join(f"\\x{ord(c):02x}" for c in sorted(CONTROL_CHARACTERS)) + "]*$"
DIRECTION_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's explicit embeddings, overrides and isolates: invisible, they reorder the text after them, so a posted
name or link could read as another (``evil``, U+202E, ``gnp.exe`` shows as ``evilexe.png``). Plain
right-to-left text needs none of them."""


def control_character_in(text: str) -> str | None:
    """The first control character in ``text`` (tab and newline excepted), or None."""
    return next((character for character in text if character in CONTROL_CHARACTERS), None)


def direction_control_in(text: str) -> str | None:
    """The first text-direction control in ``text`` (:data:`DIRECTION_CONTROLS`), or None."""
    return next((character for character in text if character in DIRECTION_CONTROLS), None)


def one_line(message) -> str:
    """``message`` on one line, its lines joined by spaces: a driver's or library's message spread over several
    (PostgreSQL's "Is the server running on that host ...?", urllib's redirect loop) inside a one-line error."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def describe(character: str) -> str:
    return f"U+{ord(character):04X}"


def refuse_control_characters():
    """``before_request``: a 400 for a path or query argument holding a control character."""
    for where, text in (("address", request.path),
                        *((f"query argument {name[:40]!r}", f"{name}{value}")
                          for name, value in request.args.items(multi=True))):
        character = control_character_in(text)
        if character:
            raise BadRequest(description=f"the {where} contains a control character ({describe(character)}); "
                                         "names, ids and filters never do")


MAX_ROW_ID = 2 ** 31 - 1
"""The largest integer key a row can have (PostgreSQL's ``integer``; SQLite refuses to compare past 2^63)."""


class RowIdConverter(IntegerConverter):
    """``<row_id:name>``: a URL's integer key of a row, 1 to :data:`MAX_ROW_ID`; any other number matches no route
    (a 404), so that no query sees a key the database cannot compare."""

    def __init__(self, url_map):
        super().__init__(url_map, min=1, max=MAX_ROW_ID)


def init_app(app):
    app.url_map.converters["row_id"] = RowIdConverter
    app.before_request(refuse_control_characters)
