"""Schemas of rerun requests: what one asks for (the API body and the maintainers' form), what the
API shows of a request, and what workers send while they work on one."""

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from runners.timing import PROTOCOL_PRESETS
from runners.types import PASSES, TARGETS

from .models import REQUEST_STATUSES
from .rerun_schemas import Scalar, name_of, string_problem
from .schema_fields import UtcDateTime

MAX_IMPLEMENTATIONS = 64
MAX_SWEEP_VALUES = 64
MAX_LOG_TAIL = 4000  # characters of a worker's log kept with its request


def printable(value: str) -> None:
    """Printable characters only: no control character (not even a line break or a tab) and no lone surrogate, one
    message for either."""
    if not value.isprintable():
        raise ValidationError("must not contain control characters or lone surrogates")


def distinct(values: list) -> None:
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        raise ValidationError(f"names {', '.join(map(repr, repeated))} more than once")


def storable(value: str) -> None:
    """Log text: lines and tabs, but no NUL, other control character or lone surrogate (``rerun_schemas``)."""
    problem = string_problem(value)
    if problem:
        raise ValidationError(f"must not be {problem}")


def text(most: int, **kwargs) -> fields.String:
    """A name or id: 1 to ``most`` characters, no control character (nor lone surrogate)."""
    return fields.String(validate=[validate.Length(min=1, max=most), printable], **kwargs)


def worker_name() -> fields.String:
    """A consumer's name (``host/slot/process``), by the rule ``flask worker`` names it by: no white space at either end."""
    return fields.String(required=True, validate=name_of(200))


def log_text(**kwargs) -> fields.String:
    return fields.String(validate=[validate.Length(max=MAX_LOG_TAIL), storable], **kwargs)


class RerunAskSchema(Schema):
    """A request for a rerun: the work (``run``, ``comparison`` or ``family``), where (``gpu`` or ``target``),
    which implementations (all by default), the protocol preset, and ``params`` to sweep (``--param``)."""

    run = text(16, metadata={"description": "a run id: its workload, every implementation (or those named)"})
    comparison = text(71, metadata={"description": "a comparison group's key: its workload and members"})
    family = text(120, metadata={"description": "every published speed workload of this family (with `pass`)"})
    pass_ = fields.String(data_key="pass", validate=validate.OneOf(PASSES))
    params = fields.Dict(keys=text(80), values=fields.List(Scalar(), validate=validate.Length(1, MAX_SWEEP_VALUES)),
                         metadata={"description": "parameter values to sweep, e.g. {\"seq\": [2048, 4096]}"})
    implementations = fields.List(text(80), validate=[validate.Length(1, MAX_IMPLEMENTATIONS), distinct])
    gpu = fields.String(validate=name_of(120),
                        metadata={"description": "the GPU model to rerun on, e.g. NVIDIA H200"})
    target = fields.String(validate=validate.OneOf(TARGETS), metadata={"description": "`cpu` for a CPU rerun"})
    protocol = fields.String(load_default="standard", validate=validate.OneOf(list(PROTOCOL_PRESETS)))

    @validates_schema
    def names_one_work_and_one_place(self, data, **kwargs):
        named = [name for name in ("run", "comparison", "family") if name in data]
        if len(named) != 1:
            raise ValidationError("name the work with exactly one of run, comparison or family", "run")
        if "pass_" in data and "family" not in data:
            raise ValidationError("pass selects among a family's workloads; give family too", "pass")
        target = data.get("target")
        if ("gpu" in data) == (target == "cpu"):
            raise ValidationError('give either gpu (a GPU model) or "target": "cpu"', "gpu")
        if target == "cuda" and "gpu" not in data:
            raise ValidationError("a cuda rerun names its GPU model in gpu", "gpu")


class RerunWorkloadSchema(Schema):
    """One workload and pass to rerun, as a request holds it: what the harness's ``RerunRequest`` is made of."""

    family = fields.String(required=True)
    pass_ = fields.String(data_key="pass", attribute="pass", required=True)
    parameters = fields.Dict(required=True)
    dtype = fields.String(required=True, allow_none=True)  # null where the source named none
    options = fields.Dict(required=True)
    rerunOf = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "implementation name -> the run id its result reproduces"})


class RerunRequestSchema(Schema):
    """A rerun request as the API shows it (``GET /api/v1/rerun-requests/<id>``), workers included."""

    id = fields.Integer(required=True)
    url = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(REQUEST_STATUSES))
    run = fields.String(allow_none=True)
    comparison = fields.String(allow_none=True, attribute="comparison_key")
    family = fields.String(required=True)
    target = fields.String(required=True)
    gpu = fields.String(allow_none=True)
    queue = fields.String(required=True)
    protocol = fields.String(required=True)
    implementations = fields.List(fields.String(), allow_none=True)
    workloads = fields.List(fields.Nested(RerunWorkloadSchema), required=True)
    requested_by = fields.String(required=True)
    attempts = fields.Integer(required=True)
    worker = fields.String(allow_none=True, metadata={"description": "the consumer (host/slot/process) holding it last"})
    worker_host = fields.String(allow_none=True)
    worker_gpu = fields.String(allow_none=True)
    created_at = UtcDateTime(required=True)
    started_at = UtcDateTime(allow_none=True)
    finished_at = UtcDateTime(allow_none=True)
    lease_expires_at = UtcDateTime(allow_none=True)
    result_runs = fields.List(fields.String(), required=True)
    recorded = fields.List(fields.String(), required=True, metadata={
        "description": "idempotency keys of the results recorded (workload and implementation)"})
    error = fields.String(allow_none=True)
    log_tail = fields.String(allow_none=True)


class CreatedRequestSchema(Schema):
    id = fields.Integer(required=True)
    url = fields.String(required=True)
    status = fields.String(required=True)


class WorkerSchema(Schema):
    """A consumer: its name (host/slot/process) and what it runs on."""

    worker = worker_name()
    target = fields.String(required=True, validate=validate.OneOf(TARGETS))
    gpu = fields.String(required=True, validate=name_of(120),
                        metadata={"description": "the GPU model the worker found (the CPU's name)"})


class RenewSchema(Schema):
    """The worker that holds a request and the tail of its log: renewing its lease, or giving the request back."""

    worker = worker_name()
    log_tail = log_text()


class RequestResultsSchema(Schema):
    """Results of one of a request's workloads (bundle lines), recorded once per implementation."""

    worker = worker_name()
    workload = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    results = fields.List(fields.Dict(), required=True, validate=validate.Length(min=1),
                          metadata={"description": "bundle lines, as POST /api/v1/reruns takes them"})


class LeaseRenewedSchema(Schema):
    """The answer to a renewal the worker holds the request for (a worker that holds it no more gets 409)."""

    held = fields.Boolean(required=True, metadata={"description": "always true: the lease was renewed"})


class ResultsRecordedSchema(Schema):
    """The answer to a workload's results (201)."""

    created = fields.List(fields.String(), required=True, metadata={
        "description": "the ids of the runs created (none for a delivery again of results recorded before)"})


class FinishedSchema(Schema):
    """The answer to a worker closing its request."""

    status = fields.String(required=True, validate=validate.OneOf(("done", "failed")),
                           metadata={"description": "the status the request closed with"})


class ReleasedSchema(Schema):
    """The answer to a stopping worker giving its request back."""

    status = fields.String(required=True, validate=validate.Equal("queued"),
                           metadata={"description": "always queued: the request waits for the next worker"})


class CheckedInSchema(Schema):
    """The answer to a worker's check-in."""

    requeued = fields.List(fields.Integer(), required=True, metadata={
        "description": "the ids of the requests whose lease had expired, queued again"})


class FinishSchema(Schema):
    worker = worker_name()
    status = fields.String(required=True, validate=validate.OneOf(("done", "failed")))
    error = log_text(allow_none=True)
    log_tail = log_text()

    @validates_schema
    def no_error_when_done(self, data, **kwargs):
        """A request done with an error would read as both on its page ("done: ..."): a worker that met one failed."""
        if data.get("status") == "done" and data.get("error"):
            raise ValidationError("a request done has no error; finish it as failed to give one", "error")


rerun_ask_schema = RerunAskSchema()
rerun_request_schema = RerunRequestSchema()
rerun_workload_schema = RerunWorkloadSchema()
created_request_schema = CreatedRequestSchema()
worker_schema = WorkerSchema()
renew_schema = RenewSchema()
request_results_schema = RequestResultsSchema()
finish_schema = FinishSchema()
lease_renewed_schema = LeaseRenewedSchema()
results_recorded_schema = ResultsRecordedSchema()
finished_schema = FinishedSchema()
released_schema = ReleasedSchema()
checked_in_schema = CheckedInSchema()
