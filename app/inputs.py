"""Text KernelIndex accepts from outside: no NUL or other control characters, on either database.

PostgreSQL refuses a NUL in any string (a 500 if it reaches a query) while SQLite stores
it, and no name, id or filter here ever holds a control character, so every request's
path and query (names and values) is checked once, before any view runs: one answers
400, as does a query argument given twice (a view reads one value). Tabs and line breaks
stay allowed (pasted into the search box, they are spaces), as does any other Unicode
text. The Liger importer applies the same rule to its cells. What readers post and
maintainers' reasons refuse the invisible text-direction controls as well
(:data:`DIRECTION_CONTROLS`). Messages of other programs passed on (a database driver's,
a web server's) are put on one line (:func:`one_line`).

Text arrives as UTF-8 (:func:`utf8_text`): a posted form or JSON body holding bytes no
UTF-8 text has is a 400 saying so, never stored as Werkzeug would read it (``%E9``, or
U+FFFD in a multipart field); so is an address whose path or query holds them, never
answered as Werkzeug reads it (``?q=%E9`` searched ``%E9``; a raw byte in the query was a 500).
"""

import codecs
from collections import Counter
from collections.abc import Iterator
from urllib.parse import unquote_to_bytes

from flask import request
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge, UnsupportedMediaType
from werkzeug.formparser import MultiPartParser
from werkzeug.routing import IntegerConverter
from werkzeug.sansio.multipart import Data, Epilogue, Field, File, MultipartDecoder, NeedData

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


def surrogate_in(text: str) -> str | None:
    """The first lone surrogate in ``text`` (how Python reads bytes that are not UTF-8 on a command line), or None:
    no UTF-8 text holds one, and no database takes it."""
    return next((character for character in text if "\ud800" <= character <= "\udfff"), None)


class NotUtf8(ValueError):
    """Bytes from outside that are not UTF-8 text; the message says where."""


def utf8_text(data: bytes) -> str:
    """Bytes from outside (a posted body, an imported file: a Liger CSV, a rerun bundle) as text, without the
    byte-order mark that Windows editors and spreadsheets put first (it is no part of the text); NotUtf8 naming the
    first byte that is not UTF-8."""
    unmarked = data.removeprefix(codecs.BOM_UTF8)
    try:
        return unmarked.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotUtf8(f"not UTF-8 text ({error.reason} at byte {error.start + len(data) - len(unmarked)})") from error


URLENCODED_FORM, MULTIPART_FORM = "application/x-www-form-urlencoded", "multipart/form-data"
SEND_UTF8 = "Send it as UTF-8 text, as a browser does."


def whole_body() -> bytes:
    """The request's body, read once and kept (a form is parsed from it next); 413 for one sent in chunks (no
    Content-Length) that reaches the limit: Werkzeug stops reading there without a word, and what was read would be
    taken for the whole, cut JSON refused as no JSON at all or a form missing its last fields."""
    body = request.get_data(cache=True)
    if request.content_length is None and request.max_content_length is not None \
            and len(body) >= request.max_content_length:
        raise RequestEntityTooLarge()
    return body


def refuse_body_not_form() -> None:
    """A 415 for a post whose body is of another type than a form (JSON, plain text): its fields would read as none,
    and a JSON client's note was answered "Choose a note or a reproduction", its sign-in "wrong password", as if it had
    sent an empty form. A post with no body (a button's) has no type and passes."""
    if request.mimetype and request.mimetype not in (URLENCODED_FORM, MULTIPART_FORM):
        raise UnsupportedMediaType(description=f"Nothing was saved: send the post as a form ({URLENCODED_FORM} or "
                                               f"{MULTIPART_FORM}), not {request.mimetype[:80]!r}.")


def refuse_form_not_utf8() -> None:
    """A 400 for a posted form whose body, or one of whose fields, is not text in its encoding (UTF-8; a multipart
    field may declare ASCII or Latin-1, which Werkzeug honours): Werkzeug would read those bytes as ``%E9`` or
    U+FFFD, and a post would store them so."""
    if request.mimetype not in (URLENCODED_FORM, MULTIPART_FORM):
        return
    body = whole_body()
    if request.mimetype == URLENCODED_FORM:
        try:
            fields = _urlencoded_fields(utf8_text(body))
        except NotUtf8 as error:
            raise BadRequest(description=f"Nothing was saved: the form is {error}. {SEND_UTF8}") from error
    else:
        fields = _multipart_fields(body, request.mimetype_params.get("boundary", ""))
    for name, value, encoding in fields:
        try:
            value.decode(encoding)
        except UnicodeDecodeError as error:
            raise BadRequest(description=f"Nothing was saved: the field {name[:40]!r} is not {encoding.upper()} "
                                         f"text ({error.reason}). {SEND_UTF8}") from error


def refuse_repeated_fields(form) -> None:
    """A 400 for a posted form that sends a field more than once (no page's form does): a view reads one value, and
    storing it, or acting on it, would drop the others without a word (``hidden=1&hidden=0``)."""
    repeated = [name[:40] for name, values in form.lists() if len(values) > 1]
    if repeated:
        raise BadRequest(description=f"The form sends {', '.join(repeated)} more than once, so nothing was saved: "
                                     "send each field once.")


def _urlencoded_fields(text: str) -> Iterator[tuple[str, bytes, str]]:
    """Each name and each value of a URL-encoded form, percent-decoded, with the field's name and its encoding."""
    for pair in text.split("&"):
        name, value = (unquote_to_bytes(part.replace("+", " ")) for part in pair.partition("=")[::2])
        shown = name.decode("utf-8", "replace")
        yield shown, name, "utf-8"
        yield shown, value, "utf-8"


def _multipart_fields(body: bytes, boundary: str) -> Iterator[tuple[str, bytes, str]]:
    """Each text field of a multipart form (files are no text) as its name, its bytes and the encoding Werkzeug
    reads it in; none from a body Werkzeug could not parse either (it reads no field from it)."""
    name, chunks, encoding = "", None, "utf-8"
    charset_of = MultiPartParser().get_part_charset
    try:
        decoder = MultipartDecoder(boundary.encode("latin-1"))
        decoder.receive_data(body)
        decoder.receive_data(None)
        while boundary and not isinstance(event := decoder.next_event(), (Epilogue, NeedData)):
            if isinstance(event, (Field, File)):
                name, chunks = event.name, [] if isinstance(event, Field) else None
                encoding = charset_of(event.headers)
            elif isinstance(event, Data) and chunks is not None:
                chunks.append(event.data)
                if not event.more_data:
                    yield name, b"".join(chunks), encoding
    except ValueError:
        return


def one_line(message) -> str:
    """``message`` on one line, its lines joined by spaces: a driver's or library's message spread over several
    (PostgreSQL's "Is the server running on that host ...?", urllib's redirect loop) inside a one-line error."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


class RepeatedKey(ValueError):
    """A JSON object that names one key twice: reading one value would drop the other."""


def object_of(pairs: list) -> dict:
    """A JSON object from its pairs (``json``'s ``object_pairs_hook``); RepeatedKey when one key comes twice. ``json``
    alone keeps the last value without a word, where other readers keep the first. Linear in the pairs: a posted
    body and a CSV cell of thousands of keys are read as fast as without the check."""
    found = dict(pairs)
    if len(found) != len(pairs):
        counts = Counter(name for name, _ in pairs)
        raise RepeatedKey(next(name for name, count in counts.items() if count > 1))
    return found


def describe(character: str) -> str:
    return f"U+{ord(character):04X}"


SEND_UTF8_ADDRESS = "percent-encode UTF-8 text, as a browser does"


def refuse_address_not_utf8() -> None:
    """A 400 for a path or query argument, percent-decoded, that is not UTF-8 text: Werkzeug reads such bytes as
    U+FFFD in the path and keeps their escapes in the query (``%E9``), and a raw one in the query makes its reading
    of the arguments raise (a 500)."""
    path = request.environ.get("PATH_INFO", "").encode("latin-1")  # WSGI's path: its bytes as Latin-1 text
    for where, data in (("path", path), ("query", request.query_string)):
        try:
            utf8_text(data)
        except NotUtf8 as error:
            raise BadRequest(description=f"the {where} is {error}; {SEND_UTF8_ADDRESS}") from error
    for name, data, encoding in _urlencoded_fields(request.query_string.decode()):
        try:
            data.decode(encoding)
        except UnicodeDecodeError as error:
            raise BadRequest(description=f"the query argument {name[:40]!r} is not UTF-8 text ({error.reason}); "
                                         f"{SEND_UTF8_ADDRESS}") from error


def refuse_unreadable_queries():
    """``before_request``: a 400 for a path or query argument that is not UTF-8 text or holds a control character,
    or for a query argument given more than once (no page's link or form repeats one: taking the first value would
    drop the others without a word)."""
    refuse_address_not_utf8()
    for where, text in (("address", request.path),
                        *((f"query argument {name[:40]!r}", f"{name}{value}")
                          for name, value in request.args.items(multi=True))):
        character = control_character_in(text)
        if character:
            raise BadRequest(description=f"the {where} contains a control character ({describe(character)}); "
                                         "names, ids and filters never do")
    repeated = next((name for name, values in request.args.lists() if len(values) > 1), None)
    if repeated is not None:
        raise BadRequest(description=f"the query argument {repeated[:40]!r} is given more than once; give it once")


def unknown_argument(args, known) -> str | None:
    """The first query argument's name (in sorted order, cut to 40 characters) that is none of ``known``, or None: a
    listing refuses an argument it does not know by that name, since one misspelt would be answered as if it were
    not there."""
    unknown = sorted(set(args) - set(known))
    return unknown[0][:40] if unknown else None


MAX_ROW_ID = 2 ** 31 - 1
"""The largest integer key a row can have (PostgreSQL's ``integer``; SQLite refuses to compare past 2^63)."""


class RowIdConverter(IntegerConverter):
    """``<row_id:name>``: a URL's integer key of a row, 1 to :data:`MAX_ROW_ID`; any other number matches no route
    (a 404), so that no query sees a key the database cannot compare. Only in ASCII digits without a leading zero, so
    that a row has one URL (``01``, full-width or Arabic-Indic digits name no row, as no page number is written so)."""

    regex = "[1-9][0-9]*"

    def __init__(self, url_map):
        super().__init__(url_map, min=1, max=MAX_ROW_ID)


def init_app(app):
    app.url_map.converters["row_id"] = RowIdConverter
    app.before_request(refuse_unreadable_queries)
