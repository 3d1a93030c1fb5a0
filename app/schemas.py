"""Marshmallow schemas: one per record kind, per API shape and per query.

Schema instances are made once here and shared. Record-kind schemas validate a
document's structure (the digest is computed elsewhere); API schemas define the
stable JSON of ``/api/v1`` and feed the OpenAPI document. What readers post
(notes, reproductions, issue reports) has its schemas in ``app.post_schemas``.
"""

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate, validates_schema

from runners import memory
from runners.types import MATH_MODES

from .manifests import API_VERSION
from .models import EVIDENCE_LEVELS, INVALIDATED, REINSTATED, Family, Run
from .pages.pagination import MAX_PAGE

# Characters of an external id: 4 bytes each stay under PostgreSQL's largest btree index entry
# (2704 bytes), which ``Run.external_id``'s index needs; SQLite would store any length.
MAX_EXTERNAL_ID = 600
from .post_schemas import AttestationSchema
from .schema_fields import QueryWholeNumber, UtcDateTime, text_filter


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
    mathMode = fields.String(validate=validate.OneOf(MATH_MODES))
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
    """Query parameters of ``GET /api/v1/runs``; anything else, or a value longer than its column, is a 400."""

    kernel = text_filter(Family.name.max_length)
    implementation = text_filter(Run.implementation.max_length)
    pass_ = text_filter(Run.pass_.max_length, data_key="pass")
    metric = fields.String(validate=validate.OneOf(("speed", memory.METRIC)))
    gpu = text_filter(Run.gpu.max_length)
    evidence = fields.String(validate=validate.OneOf(EVIDENCE_LEVELS))
    source = text_filter(Run.source.max_length)
    external_id = text_filter(MAX_EXTERNAL_ID)
    page = QueryWholeNumber(load_default=1, validate=validate.Range(min=1, max=MAX_PAGE))
    per_page = QueryWholeNumber(validate=validate.Range(min=1))  # default and maximum: API_PAGE_SIZE, API_MAX_PAGE_SIZE
    after = text_filter(120, description=(
        "the last run of the page before, as ``next`` gives it: the page starts after it (``page`` then only numbers "
        "the page). Following ``next`` costs the same on every page; ``page`` alone skips the runs before it, which "
        "takes longer the deeper the page"))


class InvalidationSchema(Schema):
    """Why a result cannot be trusted: it keeps its page and leaves every ranking."""

    reason = fields.String(metadata={"description": "what the harness caught, or the maintainer's reason"})
    by = fields.String(metadata={"description": "the rerun harness at run time, or the maintainer who decided"})
    at = UtcDateTime()


class InvalidationDecisionSchema(Schema):
    """A maintainer's decision on a run: it invalidated the run, or reinstated it as invalidated by mistake."""

    action = fields.String(validate=validate.OneOf((INVALIDATED, REINSTATED)))
    reason = fields.String(metadata={"description": "the maintainer's reason"})
    by = fields.String(metadata={"description": "the maintainer who decided"})
    at = UtcDateTime()


class RunItemSchema(Schema):
    id = fields.String()
    external_id = fields.String()
    kernel = fields.String(attribute="kernel_id")
    implementation = fields.String()
    pass_ = fields.String(data_key="pass")
    metric = fields.String()
    gpu = fields.String()
    median = fields.Float(allow_none=True)  # a failed rerun has no figures
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)
    unit = fields.String()
    rank = fields.Integer(allow_none=True)
    group_size = fields.Integer()
    evidence = fields.String()
    status = fields.String()
    invalidation = fields.Nested(InvalidationSchema, allow_none=True,
                                 metadata={"description": "null unless the result was found gamed"})
    observed_at = UtcDateTime()
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


class RunDetailSchema(Schema):
    id = fields.String()
    manifest = fields.Dict()
    evidence = fields.String()
    status = fields.String()
    invalidation = fields.Nested(InvalidationSchema, allow_none=True,
                                 metadata={"description": "null unless the result was found gamed"})
    invalidation_history = fields.List(fields.Nested(InvalidationDecisionSchema), metadata={
        "description": "every maintainer's decision to invalidate or reinstate the result, oldest first (the "
                       "harness's invalidations at run time are in invalidation alone)"})
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
    median = fields.Float(allow_none=True)
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


class BulkRunSchema(Schema):
    """One current run in the bulk downloads (``/downloads/runs.csv``, ``/downloads/runs.jsonl``), in column order.

    Figures are stored ones at full precision in ``unit`` (latency ns, memory MB); in the CSV,
    ``parameters`` is compact JSON.
    """

    id = fields.String()
    digest = fields.String()
    external_id = fields.String()
    kernel = fields.String()
    implementation = fields.String()
    pass_ = fields.String(data_key="pass")
    metric = fields.String()
    gpu = fields.String()
    gpu_product = fields.String()
    x_name = fields.String(metadata={"description": "the swept parameter"})
    x_value = fields.String()
    parameters = fields.Dict()
    dtype = fields.String(allow_none=True)
    median = fields.Float(allow_none=True)
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)
    unit = fields.String()
    status = fields.String()
    evidence = fields.String()
    rank = fields.Integer(allow_none=True)
    comparison_key = fields.String()
    observed_at = fields.String(metadata={"description": "ISO 8601, UTC"})
    source = fields.String()
    rerun_of = fields.String(allow_none=True)
    invalidated_at = fields.String(allow_none=True, metadata={
        "description": "ISO 8601, UTC: when the result was found gamed (it keeps its status and ranks nowhere); "
                       "null while it stands"})
    invalidated_by = fields.String(allow_none=True, metadata={"description": "the rerun harness or the maintainer"})
    invalidated_reason = fields.String(allow_none=True)


class RerunsRecordedSchema(Schema):
    """The answer to posted rerun results (``POST /api/v1/reruns``, 201)."""

    created = fields.List(fields.String(), required=True, metadata={"description": "the ids of the runs created"})
    unchanged = fields.Integer(required=True, metadata={"description": "how many results were recorded before"})
    replicated = fields.Integer(required=True, metadata={
        "description": "how many runs this post raised to kernelindex-replicated"})


class RerunTokenSchema(Schema):
    """What a rerun-host token may do (``GET /api/v1/rerun-token``), so that a host checks it before it measures."""

    host = fields.String(required=True, metadata={"description": "the host its results are recorded as"})
    gpus = fields.List(fields.String(), required=True, allow_none=True, metadata={
        "description": "the GPU models it may post results for; null: any hardware"})
    may_request = fields.Boolean(required=True, metadata={"description": "whether it may also ask for reruns"})


class ErrorSchema(Schema):
    """Every 4xx and 5xx answer of the API and the twins; ``details`` only on a refused post, ``existing`` only on
    a repeated one."""

    error = fields.String(required=True)
    status = fields.Integer(required=True, metadata={"description": "the HTTP status, repeated"})
    details = fields.Dict()
    existing = fields.Dict(metadata={"description": "the post stored before, as its 201 answer showed it "
                                                    "(409 to a repeated post)"})


run_filter_schema = RunFilterSchema()
run_list_schema = RunListSchema()
run_detail_schema = RunDetailSchema()
comparison_schema = ComparisonSchema()
reruns_recorded_schema = RerunsRecordedSchema()
