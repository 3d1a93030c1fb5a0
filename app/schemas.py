"""Marshmallow schemas: one per record kind, per API shape and per query.

Schema instances are made once here and shared. Record-kind schemas validate a
document's structure (the digest is computed elsewhere); API schemas define the
stable JSON of ``/api/v1`` and feed the OpenAPI document.
"""

from marshmallow import EXCLUDE, INCLUDE, Schema, ValidationError, fields, post_load, pre_load, validate, validates_schema

from .manifests import API_VERSION
from .models import EVIDENCE_LEVELS


class MetadataSchema(Schema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=100))
    title = fields.String(required=True)
    labels = fields.Dict(keys=fields.String(), values=fields.String())


class DocumentSchema(Schema):
    """The envelope every record kind shares."""

    kind_name = None
    kind = fields.String(required=True)
    apiVersion = fields.String(required=True, validate=validate.Equal(API_VERSION))
    metadata = fields.Nested(MetadataSchema, required=True)

    @validates_schema
    def kind_matches(self, data, **kwargs):
        if data.get("kind") != self.kind_name:
            raise ValidationError(f"kind must be {self.kind_name}", "kind")


class MeasurementSchema(Schema):
    unit = fields.String(required=True)
    value = fields.Float(required=True)
    metric = fields.String(required=True)
    statistic = fields.String(required=True)


class RunSpecSchema(Schema):
    class Meta:
        unknown = INCLUDE  # timing or memory, sourceNative, rerun sections

    status = fields.String(required=True, validate=validate.OneOf(("passed", "failed")))
    observedAt = fields.String(required=True)
    measurements = fields.List(fields.Nested(MeasurementSchema), required=True)
    protocolDigest = fields.String(required=True, validate=validate.Regexp(r"^sha256:[0-9a-f]{64}$"))
    workloadDigest = fields.String(required=True, validate=validate.Regexp(r"^sha256:[0-9a-f]{64}$"))
    environmentDigest = fields.String(required=True, validate=validate.Regexp(r"^sha256:[0-9a-f]{64}$"))
    implementationDigest = fields.String(required=True, validate=validate.Regexp(r"^sha256:[0-9a-f]{64}$"))


class BenchmarkRunSchema(DocumentSchema):
    kind_name = "BenchmarkRun"
    spec = fields.Nested(RunSpecSchema, required=True)


class ProtocolSpecSchema(Schema):
    harness = fields.Dict(required=True)
    measurement = fields.Dict(required=True)
    comparability = fields.Dict(required=True)


class BenchmarkProtocolSchema(DocumentSchema):
    kind_name = "BenchmarkProtocol"
    spec = fields.Nested(ProtocolSpecSchema, required=True)


class HardwareSchema(Schema):
    class Meta:
        unknown = INCLUDE

    vendor = fields.String(required=True)
    product = fields.String(required=True)
    formFactor = fields.String()
    architecture = fields.String()


class EnvironmentSpecSchema(Schema):
    class Meta:
        unknown = INCLUDE

    hardware = fields.Nested(HardwareSchema, required=True)
    software = fields.Dict(required=True)


class ExecutionEnvironmentSchema(DocumentSchema):
    kind_name = "ExecutionEnvironment"
    spec = fields.Nested(EnvironmentSpecSchema, required=True)


class TensorSchema(Schema):
    name = fields.String(required=True)
    dtype = fields.String(required=True)
    shape = fields.List(fields.Integer(validate=validate.Range(min=0)), required=True)


class WorkloadSpecSchema(Schema):
    family = fields.String(required=True)
    parameters = fields.Dict(required=True)
    dtype = fields.String()
    options = fields.Dict()
    tensors = fields.List(fields.Nested(TensorSchema))
    definition = fields.Dict(required=True)


class WorkloadSchema(DocumentSchema):
    kind_name = "Workload"
    spec = fields.Nested(WorkloadSpecSchema, required=True)


class ImplementationSpecSchema(Schema):
    name = fields.String(required=True)
    family = fields.String(required=True)
    project = fields.String(required=True)
    revision = fields.String(required=True)
    details = fields.Dict()


class ImplementationSchema(DocumentSchema):
    kind_name = "Implementation"
    spec = fields.Nested(ImplementationSpecSchema, required=True)


class CorrectnessPolicySpecSchema(Schema):
    policy = fields.Dict(required=True)
    text = fields.String(required=True)


class CorrectnessPolicySchema(DocumentSchema):
    """The policy a rerun's outputs were judged under; its run cites it by digest."""

    kind_name = "CorrectnessPolicy"
    spec = fields.Nested(CorrectnessPolicySpecSchema, required=True)


DOCUMENT_SCHEMAS = {schema.kind_name: schema for schema in (
    BenchmarkRunSchema(), BenchmarkProtocolSchema(), ExecutionEnvironmentSchema(), WorkloadSchema(),
    ImplementationSchema(), CorrectnessPolicySchema())}


def document_errors(document: dict) -> dict:
    """Validation errors of a record document against its kind's schema ({} when valid)."""
    schema = DOCUMENT_SCHEMAS.get(document.get("kind"))
    if schema is None:
        return {"kind": [f"unknown kind {document.get('kind')!r}"]}
    return schema.validate(document)


# --- API shapes -------------------------------------------------------------------------------

class RunFilterSchema(Schema):
    """Query parameters of ``GET /api/v1/runs``; anything else is a 400."""

    kernel = fields.String()
    implementation = fields.String()
    pass_ = fields.String(data_key="pass")
    metric = fields.String()
    gpu = fields.String()
    evidence = fields.String(validate=validate.OneOf(EVIDENCE_LEVELS))
    source = fields.String()
    external_id = fields.String()
    page = fields.Integer(load_default=1, validate=validate.Range(min=1))
    per_page = fields.Integer(load_default=50, validate=validate.Range(min=1, max=500))


class RunItemSchema(Schema):
    id = fields.String()
    external_id = fields.String()
    kernel = fields.String(attribute="kernel_id")
    implementation = fields.String()
    pass_ = fields.String(data_key="pass")
    metric = fields.String()
    gpu = fields.String()
    median = fields.Float()
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)
    unit = fields.String()
    rank = fields.Integer(allow_none=True)
    group_size = fields.Integer()
    evidence = fields.String()
    status = fields.String()
    observed_at = fields.DateTime(format="iso")
    url = fields.String()


class RunListSchema(Schema):
    items = fields.List(fields.Nested(RunItemSchema))
    total = fields.Integer()
    next = fields.String(allow_none=True)


class ComparisonSummarySchema(Schema):
    key = fields.String()
    rank = fields.Integer(allow_none=True)
    size = fields.Integer()
    leader = fields.String(allow_none=True)
    kind = fields.String()


TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}  # factor to the run's ns
MEMORY_UNITS = {"MB": 1.0, "GB": 1e3}  # factor to the run's MB, as pages show memory (formatting.py)
ATTESTATION_UNITS = (*TIME_UNITS, *MEMORY_UNITS)
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
CONTROL_CHARACTERS = frozenset(chr(c) for c in range(32) if chr(c) not in "\n\t") | {"\x7f"}


def _clean_form_text(data: dict, optional: tuple) -> dict:
    """Posted form text as the schema wants it: trimmed, newlines as \\n, empty optional fields absent."""
    cleaned = {}
    for name, value in dict(data).items():
        if isinstance(value, str):
            value = value.replace("\r\n", "\n").replace("\r", "\n")
            value = value.lstrip("\n").rstrip() if name == "body" else value.strip()  # keep markdown indents
            if value == "" and name in optional:
                continue
        cleaned[name] = value
    return cleaned


def _at_most(characters: int, what: str) -> validate.Length:
    return validate.Length(max=characters, error=f"Keep {what} to {characters} characters.")


def _number_messages(what: str, hint: str) -> dict:
    return {"invalid": f"Enter {what} as a number, {hint}.", "special": f"Enter {what} as a finite number, {hint}."}


def _refuse_control_characters(data: dict, names: tuple):
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and any(ch in CONTROL_CHARACTERS for ch in value):
            raise ValidationError("Remove the control characters (only text, tabs and new lines are allowed).", name)


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
    kind = fields.String(required=True, validate=validate.OneOf(("note", "reproduction")),
                         error_messages={"required": "Choose a note or a reproduction."})
    author = fields.String(allow_none=True, validate=_at_most(80, "the name"))
    body = fields.String(load_default="", validate=_at_most(MAX_POST_BODY_CHARS, "the text"))
    median = fields.Float(allow_none=True,
                          validate=validate.Range(min=0, min_inclusive=False, error="The median must be above 0."),
                          error_messages=_number_messages("the median", "e.g. 84.6"))
    p20 = fields.Float(allow_none=True, validate=validate.Range(min=0, error="p20 cannot be negative."),
                       error_messages=_number_messages("p20", "or leave it empty"))
    p80 = fields.Float(allow_none=True, validate=validate.Range(min=0, error="p80 cannot be negative."),
                       error_messages=_number_messages("p80", "or leave it empty"))
    unit = fields.String(allow_none=True, validate=validate.OneOf(
        ATTESTATION_UNITS, error="Choose a unit: ns, µs, ms or s (MB or GB for memory)."))
    gpu = fields.String(allow_none=True, validate=_at_most(120, "the GPU name"))
    software = fields.String(allow_none=True, validate=_at_most(500, "the versions"))
    link = fields.Url(allow_none=True, schemes={"http", "https"}, validate=_at_most(2000, "the link"),
                      error_messages={"invalid": "Enter a full http:// or https:// address."})
    created_at = fields.DateTime(dump_only=True, format="iso")

    @pre_load
    def clean_form(self, data, **kwargs):
        data = _clean_form_text(data, optional=("author", "median", "p20", "p80", "unit", "gpu", "software", "link"))
        if isinstance(data.get("unit"), str):
            data["unit"] = UNIT_SPELLINGS.get(data["unit"], data["unit"])
        return data

    @validates_schema
    def complete_and_consistent(self, data, **kwargs):
        _refuse_control_characters(data, self.TEXT_FIELDS)
        errors = {}
        if data.get("kind") == "note" and not data.get("body", "").strip():
            errors["body"] = ["Write the note (it is empty)."]
        if data.get("kind") == "reproduction":
            for name, message in (("median", "Give the median you measured."),
                                  ("unit", "Choose the median's unit."),
                                  ("gpu", "Name the GPU you measured on."),
                                  ("software", "Give the software versions you ran "
                                               "(e.g. torch 2.6, triton 3.2, CUDA 12.4)."),
                                  ("link", "Link to your script, log or results (http or https).")):
                if data.get(name) is None:
                    errors[name] = [message]
            median, p20, p80 = data.get("median"), data.get("p20"), data.get("p80")
            if median is not None and p20 is not None and p20 > median:
                errors["p20"] = ["p20 cannot be above the median."]
            if median is not None and p80 is not None and p80 < median:
                errors["p80"] = ["p80 cannot be below the median."]
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
    created_at = fields.DateTime(dump_only=True, format="iso")

    @pre_load
    def clean_form(self, data, **kwargs):
        return _clean_form_text(data, optional=())

    @validates_schema
    def described_when_other(self, data, **kwargs):
        _refuse_control_characters(data, ("body",))
        if data.get("reason") == "other" and not data.get("body", "").strip():
            raise ValidationError("Describe the problem.", "body")


class RunDetailSchema(Schema):
    id = fields.String()
    manifest = fields.Dict()
    evidence = fields.String()
    status = fields.String()
    comparison = fields.Nested(ComparisonSummarySchema)
    superseded_by = fields.String(allow_none=True)
    supersedes = fields.List(fields.String())
    rerun_of = fields.String(allow_none=True)
    reruns = fields.List(fields.String())
    attestations = fields.List(fields.Nested(AttestationSchema))
    links = fields.Dict(keys=fields.String(), values=fields.String())


class ComparisonMemberSchema(Schema):
    id = fields.String()
    rank = fields.Integer()
    implementation = fields.String()
    median = fields.Float()
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)
    unit = fields.String()
    ratio = fields.Float(allow_none=True)
    within_noise_of_leader = fields.Boolean()
    tied_with_leader = fields.Boolean()
    url = fields.String()


class ComparisonSchema(Schema):
    key = fields.String()
    shared = fields.Dict()
    size = fields.Integer()
    leader = fields.String(allow_none=True)
    members = fields.List(fields.Nested(ComparisonMemberSchema))
    within_noise = fields.List(fields.List(fields.String()))


class ErrorSchema(Schema):
    error = fields.String()
    details = fields.Dict()


run_filter_schema = RunFilterSchema()
run_item_schema = RunItemSchema()
run_list_schema = RunListSchema()
run_detail_schema = RunDetailSchema()
comparison_schema = ComparisonSchema()
attestation_schema = AttestationSchema()
issue_report_schema = IssueReportSchema()
