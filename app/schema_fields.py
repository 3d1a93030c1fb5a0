"""Field types the API schemas (``app.schemas``) and the post schemas (``app.post_schemas``) share, and the one
line every refusal of a schema's input reads as (:func:`validation_message`)."""

from datetime import timezone

from marshmallow import fields, validate

from .inputs import TEXT_PATTERN
from .pages.pagination import written_in_digits


class UtcDateTime(fields.DateTime):
    """A timestamp the database keeps as naive UTC, dumped with its offset (``...T10:00:00+00:00``),
    so that it is the RFC 3339 ``date-time`` the OpenAPI document declares."""

    def __init__(self, **kwargs):
        super().__init__(format="iso", **kwargs)

    def _serialize(self, value, attr, obj, **kwargs):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return super()._serialize(value, attr, obj, **kwargs)


class QueryWholeNumber(fields.Integer):
    """A whole number in a query string, in ASCII digits alone (:func:`~app.pages.pagination.written_in_digits`),
    as the pages' own page numbers are read."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not (isinstance(value, str) and written_in_digits(value)):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


def text_filter(max_length: int, description: str | None = None, **kwargs) -> fields.String:
    """A query filter of at most ``max_length`` characters (a column's: SQLite would compare a longer value,
    PostgreSQL never store it); the document also says it holds no control character (``app.inputs``)."""
    metadata = {"pattern": TEXT_PATTERN, **({"description": description} if description else {})}
    return fields.String(validate=validate.Length(max=max_length), metadata=metadata, **kwargs)


def validation_message(messages) -> str:
    """marshmallow's error messages, however nested, as one line a reader can act on:
    ``params.seq[0]: must not be ...; run: ...`` (a dict field's ``value`` and ``key`` levels left out)."""
    found: dict[str, list[str]] = {}

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, inner in node.items():
                step = (f"[{key}]" if isinstance(key, int) else "" if key in ("value", "key", "_schema")
                        else f".{key}" if path else str(key))
                walk(inner, path + step)
        elif isinstance(node, list):
            for inner in node:
                walk(inner, path)
        else:
            found.setdefault(path, []).append(str(node))

    walk(messages, "")
    return "; ".join(f"{path}: {' '.join(texts)}" if path else " ".join(texts) for path, texts in found.items())
