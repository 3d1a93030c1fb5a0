"""Marshmallow schemas of what readers post on a run: notes, reproductions and issue reports.

They load the run page's forms (trimming text, refusing control characters, saying in
plain words what to fix) and dump what the API shows of a stored post.
"""

import unicodedata

from marshmallow import EXCLUDE, Schema, ValidationError, fields, post_load, pre_load, validate, validates_schema

from . import formatting
from .inputs import control_character_in, direction_control_in
from .schema_fields import UtcDateTime

TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}  # factor to the run's ns
MEMORY_UNITS = dict(formatting.MEMORY_UNITS[:2])  # MB and GB: factor to the run's MB, as pages show memory
ATTESTATION_UNITS = (*TIME_UNITS, *MEMORY_UNITS)
PLAUSIBLE_FIGURES = {"time": (1e-3, 86_400e9, "from 1 ps to one day"), "memory": (1e-6, 1e9, "from 1 byte to 1 PB")}
"""What a reproduction's figures may be, in the run's unit (ns or MB): anything outside is a typo or a prank, and
would print as hundreds of digits."""
UNIT_SPELLINGS = {"µs": "us", "μs": "us", "sec": "s", "mb": "MB", "gb": "GB"}
ISSUE_REASONS = {
    "wrong-figure": "The figures look wrong",
    "wrong-metadata": "The identity, workload or environment is wrong",
    "not-comparable": "It should not be ranked with this group",
    "duplicate": "It duplicates another run",
    "abuse": "A note here is spam or abuse",
    "other": "Something else",
}
MAX_POST_BODY_CHARS = 4000
CHOOSE_KIND = "Choose a note or a reproduction."


def _blank(value) -> bool:
    """Whether posted text shows nothing: white space and invisible format characters (a zero-width space, a byte
    order mark, a word joiner) alone."""
    return all(character.isspace() or unicodedata.category(character) == "Cf" for character in str(value or ""))


def _clean_form_text(data: dict, optional: tuple) -> dict:
    """Posted form text as the schema wants it: trimmed, newlines as \\n, blank text empty, empty optional fields
    absent."""
    cleaned = {}
    for name, value in dict(data).items():
        if isinstance(value, str):
            value = value.replace("\r\n", "\n").replace("\r", "\n")
            value = value.lstrip("\n").rstrip() if name == "body" else value.strip()  # keep markdown indents
            if _blank(value):
                value = ""
            if value == "" and name in optional:
                continue
        cleaned[name] = value
    return cleaned


def _at_most(characters: int, what: str) -> validate.Length:
    return validate.Length(max=characters, error=f"Keep {what} to {characters} characters.")


def _number_messages(what: str, hint: str) -> dict:
    return {"invalid": f"Enter {what} as a number, {hint}.", "special": f"Enter {what} as a finite number, {hint}."}


def _character_problems(data: dict, names: tuple) -> dict:
    """A message for each of ``names`` whose text holds a control character or a text-direction control."""
    problems = {}
    for name in names:
        value = data.get(name)
        if not isinstance(value, str):
            continue
        if control_character_in(value):
            problems[name] = ["Remove the control characters (only text, tabs and new lines are allowed)."]
        elif direction_control_in(value):
            problems[name] = ["Remove the invisible text-direction controls (U+202A to U+202E, U+2066 to U+2069): "
                              "they make text read as something else."]
    return problems


class Figure(fields.Float):
    """A float a reader writes in ASCII digits: ``float()`` also reads ``1_000`` and other scripts' digits (``١٢``),
    which no results table writes, so a figure spelled so is more likely a slip than a measurement."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and (not value.isascii() or "_" in value):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class AttestationSchema(Schema):
    """A community note or reproduction: what a reader posts and what the API shows.

    A note is markdown text. A reproduction is the reader's own measurement of the
    run's workload: median with its unit (a time unit for latency runs, MB/GB for
    memory runs; the view checks it against the run), the GPU, the software
    versions and a link to the evidence, optionally the p20/p80 spread and a
    comment. Neither ever changes the run's evidence level or rank.
    """

    class Meta:
        unknown = EXCLUDE  # the form's csrf_token and submit button

    TEXT_FIELDS = ("author", "body", "gpu", "software", "link")
    REPRODUCTION_FIELDS = ("median", "p20", "p80", "unit", "gpu", "software", "link")

    id = fields.Integer(dump_only=True)
    kind = fields.String(required=True, validate=validate.OneOf(("note", "reproduction"), error=CHOOSE_KIND),
                         error_messages={"required": CHOOSE_KIND})
    author = fields.String(allow_none=True, validate=_at_most(80, "the name"))
    body = fields.String(load_default="", validate=_at_most(MAX_POST_BODY_CHARS, "the text"))
    median = Figure(allow_none=True,
                    validate=validate.Range(min=0, min_inclusive=False, error="The median must be above 0."),
                    error_messages=_number_messages("the median", "e.g. 84.6"))
    p20 = Figure(allow_none=True, validate=validate.Range(min=0, error="p20 cannot be negative."),
                 error_messages=_number_messages("p20", "or leave it empty"))
    p80 = Figure(allow_none=True, validate=validate.Range(min=0, error="p80 cannot be negative."),
                 error_messages=_number_messages("p80", "or leave it empty"))
    unit = fields.String(allow_none=True, validate=validate.OneOf(
        ATTESTATION_UNITS, error="Choose a unit: ns, µs, ms or s (MB or GB for memory)."))
    gpu = fields.String(allow_none=True, validate=_at_most(120, "the GPU name"))
    software = fields.String(allow_none=True, validate=_at_most(500, "the versions"))
    link = fields.Url(allow_none=True, schemes={"http", "https"}, validate=_at_most(2000, "the link"),
                      error_messages={"invalid": "Enter a full http:// or https:// address."})
    created_at = UtcDateTime(dump_only=True)

    def __init__(self, *, units: dict | None = None, **kwargs):
        """``units``: those the run takes (:data:`TIME_UNITS` or :data:`MEMORY_UNITS`); None takes either."""
        super().__init__(**kwargs)
        self.units = units

    @pre_load
    def clean_form(self, data, **kwargs):
        data = _clean_form_text(data, optional=("author", "median", "p20", "p80", "unit", "gpu", "software", "link"))
        if isinstance(data.get("unit"), str):
            data["unit"] = UNIT_SPELLINGS.get(data["unit"], data["unit"])
        return data

    @validates_schema(skip_on_field_errors=False, pass_original=True)
    def complete_and_consistent(self, data, original_data, **kwargs):
        """Every problem the fields' own checks leave, in the same answer: the reader fixes the form in one round.
        ``data`` lacks a field that failed its own check, so "give X" is said only of a field left empty."""
        errors = _character_problems(data, self.TEXT_FIELDS)
        left_empty = {name for name in ("body", *self.REPRODUCTION_FIELDS)
                      if not data.get(name) and _blank(original_data.get(name))}
        if data.get("kind") == "note" and "body" in left_empty:
            errors["body"] = ["Write the note (it is empty)."]
        if data.get("kind") == "reproduction":
            for name, message in (("median", "Give the median you measured."),
                                  ("unit", "Choose the median's unit."),
                                  ("gpu", "Name the GPU you measured on."),
                                  ("software", "Give the software versions you ran "
                                               "(e.g. torch 2.6, triton 3.2, CUDA 12.4)."),
                                  ("link", "Link to your script, log or results (http or https).")):
                if name in left_empty:
                    errors[name] = [message]
            median, p20, p80 = data.get("median"), data.get("p20"), data.get("p80")
            unit = data.get("unit")
            if unit is not None and self.units is not None and unit not in self.units:
                errors["unit"] = ["This run measures memory; choose MB or GB." if self.units is MEMORY_UNITS
                                  else "This run measures time; choose ns, µs, ms or s."]
            elif unit is not None:
                kind, factor = ("time", TIME_UNITS[unit]) if unit in TIME_UNITS else ("memory", MEMORY_UNITS[unit])
                least, most, words = PLAUSIBLE_FIGURES[kind]
                for name, value in (("median", median), ("p20", p20), ("p80", p80)):
                    if value is not None and not least <= value * factor <= most:
                        errors[name] = [f"Give a {kind} {words}."]
            if median is not None and p20 is not None and p20 > median:
                errors.setdefault("p20", ["p20 cannot be above the median."])
            if median is not None and p80 is not None and p80 < median:
                errors.setdefault("p80", ["p80 cannot be below the median."])
        if errors:
            raise ValidationError(errors)

    @post_load
    def drop_reproduction_fields_from_notes(self, data, **kwargs):
        if data["kind"] == "note":
            for name in self.REPRODUCTION_FIELDS:
                data.pop(name, None)
        return data


class IssueReportSchema(Schema):
    """A reader's report that something about a run is wrong; ``other`` needs a description."""

    class Meta:
        unknown = EXCLUDE

    id = fields.Integer(dump_only=True)
    reason = fields.String(required=True, validate=validate.OneOf(tuple(ISSUE_REASONS), error="Choose what is wrong."),
                           error_messages={"required": "Choose what is wrong."})
    body = fields.String(load_default="", validate=_at_most(MAX_POST_BODY_CHARS, "the description"))
    resolved = fields.Boolean(dump_only=True)
    created_at = UtcDateTime(dump_only=True)

    @pre_load
    def clean_form(self, data, **kwargs):
        return _clean_form_text(data, optional=())

    @validates_schema(skip_on_field_errors=False, pass_original=True)
    def described_when_other(self, data, original_data, **kwargs):
        errors = _character_problems(data, ("body",))
        if data.get("reason") == "other" and _blank(original_data.get("body")):
            errors["body"] = ["Describe the problem."]
        if errors:
            raise ValidationError(errors)


attestation_schema = AttestationSchema()
issue_report_schema = IssueReportSchema()
