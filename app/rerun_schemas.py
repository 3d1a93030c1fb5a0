"""The rerun result, validated completely before any builder runs (issue 19, "Bounded inputs").

A result is a bundle line (``runners.types.RerunResult.as_document``), posted by a rerun
host or read from a bundle file. ``json_problem`` bounds the whole value first: nesting
depth, string lengths, control characters, and numbers a canonical (RFC 8785) document
can hold. ``result_schema`` then checks every part a builder reads: its type, the
lengths of the columns and document names it fills, timing sanity and sample counts.
The parts documents show as posted (implementation, environment, correctness,
protocol, cost) are checked by their schema but loaded exactly as written, key order
included, so the documents of results recorded before these checks do not change.
"""

import math
import re
from datetime import datetime, timezone

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate, validates_schema

from runners import memory
from runners.isolation import CHILD_PROCESS, HARNESS_PROCESS
from runners.names import FAMILY_NAME_LENGTH, IMPLEMENTATION_NAME_LENGTH, address_name_problem, name_problem
from runners.timing import PROTOCOL_VERSION
from runners.types import DTYPE_NAMES, MATH_MODES, PASSES, TARGETS

MAX_DEPTH = 16  # a bundle line nests 6 deep
MAX_STRING = 100_000  # characters in any one string (the policy text has 2,500)
MAX_SAFE_INTEGER = 2 ** 53 - 1  # canonical JSON holds no larger integer
DOCUMENT_NAME = 100  # characters in a document's metadata name
EARLIEST_OBSERVATION = datetime(2000, 1, 1, tzinfo=timezone.utc)  # no result here is from before it
FIRST_RERUN = datetime(2026, 11, 29, tzinfo=timezone.utc)
"""The day the rerun harness's first version was written: a KernelIndex rerun observed before it is a forged one."""
OBSERVABLE = validate.Range(min=FIRST_RERUN, max=datetime(9999, 1, 1, tzinfo=timezone.utc),  # UTC cannot overflow
                            error=f"must be between {FIRST_RERUN:%Y-%m-%d}, when the rerun harness was written, and "
                                  "the year 9999")
FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")  # tab, newline and CR are text


def string_problem(text: str) -> str | None:
    if len(text) > MAX_STRING:
        return f"a string of {len(text)} characters (at most {MAX_STRING})"
    if FORBIDDEN.search(text):
        return "a NUL, control character or lone surrogate"
    return None


def value_problem(value) -> str | None:
    """What makes one JSON scalar unfit for a document (a bad string or number), or None."""
    if isinstance(value, str):
        return string_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} (only finite numbers)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        return f"an integer beyond ±{MAX_SAFE_INTEGER}"
    return None


def json_problem(value) -> str | None:
    """Where and why a parsed JSON value is unfit to store (too deep, a bad key, string or number), or None.

    Iterative, so that no nesting, however deep, exhausts the interpreter's stack; a place is
    named only for containers and for the value at fault, so a million samples cost no strings.
    """
    if not isinstance(value, (dict, list)):
        problem = value_problem(value)
        return problem and f"the result is {problem}"
    stack = [(value, 1, "the result")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            return f"{where} nests deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            bad_key = next((key for key in item if string_problem(key)), None)
            if bad_key is not None:
                return f"a key in {where} is {string_problem(bad_key)}"
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if type(child) is float and math.isfinite(child):
                continue  # the samples: most of a body
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, f"{where} > {str(key)[:40]}"))
            elif (problem := value_problem(child)) is not None:
                return f"{where} > {str(key)[:40]} is {problem}"
    return None


def gpu_name(hardware: dict) -> str:
    """The hardware a rerun ran on, named as harnesses name it (``NVIDIA H200``, or the CPU model)."""
    return hardware.get("name") or " ".join(
        part for part in (hardware.get("product"), hardware.get("formFactor")) if part) or "unknown"


class Checked(fields.Dict):
    """An object validated by ``schema`` and loaded exactly as written (documents show it as posted)."""

    def __init__(self, schema: Schema, **kwargs):
        super().__init__(keys=fields.String(), **kwargs)
        self.schema = schema

    def _deserialize(self, value, attr, data, **kwargs):
        loaded = super()._deserialize(value, attr, data, **kwargs)
        errors = self.schema.validate(loaded)
        if errors:
            raise ValidationError(errors)
        return loaded


class Scalar(fields.Field):
    """A workload parameter or option: a number, a boolean or a short string, never an object, a list or null."""

    default_error_messages = {"null": "must be a number, a boolean or a string of at most 80 characters, not null"}

    def _deserialize(self, value, attr, data, **kwargs):
        if not (isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 80)):
            raise ValidationError("must be a number, a boolean or a string of at most 80 characters")
        problem = value_problem(value)
        if problem:
            raise ValidationError(f"must not be {problem}")
        return value


class JsonNumber(fields.Float):
    """A JSON number, never a numeric string or a boolean: documents keep the value as written and pages format it."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class JsonBoolean(fields.Boolean):
    """``true`` or ``false``, never a number or a string that reads as one."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def count(least: int = 0, **kwargs) -> fields.Integer:
    return fields.Integer(strict=True, validate=validate.Range(min=least), **kwargs)


def length(most: int, least: int = 1) -> validate.Length:
    return validate.Length(min=least, max=most)


def name_of(most: int, rule=name_problem):
    """The validator of a name that groups results (a GPU's: one more space makes another GPU and another ranking):
    :func:`runners.names.name_problem`'s rule, or ``rule``."""
    def one_line(text: str) -> None:
        problem = rule("a name", text, most)
        if problem:
            raise ValidationError(problem)
    return one_line


def address_name_of(most: int):
    """The validator of a family's or an implementation's name, which page addresses and run ids hold: the rule
    :func:`runners.names.address_name_problem` applies to plugins' names when they are discovered."""
    return name_of(most, address_name_problem)


class RerunImplementationSchema(Schema):
    name = fields.String(required=True, validate=address_name_of(IMPLEMENTATION_NAME_LENGTH))
    project = fields.String(validate=name_of(100))  # shown beside the name: no direction override or invisible mark
    revision = fields.String(validate=name_of(64))
    details = fields.Dict(keys=fields.String())
    mathMode = fields.String(validate=validate.OneOf(MATH_MODES))  # absent from bundles made before math modes


class RerunHardwareSchema(Schema):
    class Meta:
        unknown = INCLUDE  # clocks, memory, SM count: shown as captured

    vendor = fields.String(required=True, validate=name_of(80))
    product = fields.String(required=True, validate=name_of(120))  # Run.gpu_product
    name = fields.String(validate=name_of(120))  # Run.gpu
    formFactor = fields.String(validate=name_of(40))
    architecture = fields.String(validate=name_of(40))
    uuid = fields.String(validate=length(100))  # tells two GPUs apart for replication

    @validates_schema
    def name_fits(self, data, **kwargs):
        if len(gpu_name(data)) > 120:
            raise ValidationError("product and formFactor name a GPU of more than 120 characters", "product")


class RerunEnvironmentSchema(Schema):
    class Meta:
        unknown = INCLUDE

    hardware = fields.Nested(RerunHardwareSchema, required=True)
    software = fields.Dict(keys=fields.String())
    host = fields.String(validate=length(120))  # Run.host, where the operator vouches for a bundle
    target = fields.String(validate=validate.OneOf(TARGETS))
    cpu = fields.Dict()


class RerunPolicySchema(Schema):
    class Meta:
        unknown = INCLUDE

    name = fields.String(validate=length(DOCUMENT_NAME))
    version = count(1)
    tolerances = fields.Dict(keys=fields.String(validate=length(20)), values=JsonNumber())


class OutputFiguresSchema(Schema):
    """One output's figures in every trial: what ``flask rejudge`` judges again by."""

    differenceNorms = fields.List(JsonNumber(allow_nan=True), required=True)
    referenceNorms = fields.List(JsonNumber(validate=validate.Range(min=0)), required=True)
    shape = fields.List(count(), required=True)


class RerunCorrectnessSchema(Schema):
    class Meta:
        unknown = INCLUDE  # what a later harness records beside these

    policy = fields.Nested(RerunPolicySchema)
    policyText = fields.String()
    passed = JsonBoolean()
    tf32 = JsonBoolean()
    trials = count(1)
    relL2Error = JsonNumber(allow_none=True, allow_nan=True, validate=validate.Range(min=0))
    tolerance = JsonNumber(validate=validate.Range(min=0, min_inclusive=False))
    outputErrors = fields.Dict(keys=fields.String(), values=JsonNumber(allow_nan=True))
    outputFigures = fields.Dict(keys=fields.String(), values=fields.Nested(OutputFiguresSchema))


class LaunchQueueSchema(Schema):
    class Meta:
        unknown = INCLUDE

    method = fields.String(validate=length(200))
    minDelayNs = count()
    maxDelayNs = count()
    delayFactor = count()


class RerunProtocolSchema(Schema):
    class Meta:
        unknown = INCLUDE  # what a later protocol records beside these; pages show every field they know

    name = fields.String(validate=length(DOCUMENT_NAME))
    version = fields.Integer(strict=True, validate=validate.Range(min=1, max=PROTOCOL_VERSION))  # absent before version 3
    preset = fields.String(validate=length(80))
    harness = fields.Dict()
    comparabilityFamily = fields.String(validate=length(80))
    trials = count(1)
    samplesPerTrial = count(1)
    warmupReps = count()
    correctnessTrials = count()
    inputSets = count()
    auditCalls = count()
    l2FlushBytes = count(allow_none=True)  # None on CPUs
    budgetSeconds = JsonNumber(validate=validate.Range(min=0, min_inclusive=False))
    inputSeeds = fields.List(fields.Integer(strict=True))
    statistics = fields.List(fields.String(validate=length(40)))
    launchQueue = fields.Nested(LaunchQueueSchema, allow_none=True)  # None on CPUs
    timer = fields.String(validate=length(200))
    primaryStatistic = fields.String(validate=length(40))


class RerunCostSchema(Schema):
    """Both counts, as the family's ``workload_cost`` hook gives them: the importer compares them with its count."""

    flops = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    bytes = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))


def positive(**kwargs) -> fields.Float:
    return fields.Float(allow_nan=False, validate=validate.Range(min=0, min_inclusive=False), **kwargs)


class HostInclusiveSchema(Schema):
    """What an eager caller pays: back-to-back calls, timed on the host (``runners.timing``)."""

    median = positive(required=True)
    p20 = positive(required=True)
    p80 = positive(required=True)
    samples = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))


class HostSynchronizationSchema(Schema):
    detected = fields.Boolean(required=True, truthy={True}, falsy={False})
    detail = fields.String(allow_none=True, validate=length(2000, 0))


class RerunTimingSchema(Schema):
    unit = fields.String(required=True, validate=validate.Equal("ns"))
    median = positive(required=True)
    p20 = positive(required=True)
    p80 = positive(required=True)
    samples = fields.List(fields.List(positive(), validate=length(100_000)), required=True, validate=length(10_000))
    trials = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))
    samplesPerTrial = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))
    cv = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=0))
    hostExposedSamples = fields.Integer(load_default=0, strict=True, validate=validate.Range(min=0))
    hostInclusive = fields.Nested(HostInclusiveSchema, allow_none=True)  # absent before host-inclusive timing
    hostSynchronization = fields.Nested(HostSynchronizationSchema, allow_none=True)  # None where not checked (CPU)

    @validates_schema
    def figures_agree(self, data, **kwargs):
        """The statistics fit the samples they summarize, and the samples are as many as the counts say."""
        samples, trials, per_trial = data["samples"], data["trials"], data["samplesPerTrial"]
        if not data["p20"] <= data["median"] <= data["p80"]:
            raise ValidationError("must satisfy p20 <= median <= p80", "median")
        if len(samples) != trials or any(len(trial) != per_trial for trial in samples):
            raise ValidationError(f"must hold trials ({trials}) lists of samplesPerTrial ({per_trial}) samples",
                                  "samples")
        low, high = min(map(min, samples)), max(map(max, samples))
        if not (low <= data["p20"] and data["p80"] <= high):
            raise ValidationError(f"p20, median and p80 must lie within the samples ({low:g} to {high:g} ns)",
                                  "median")
        if data["hostExposedSamples"] > trials * per_trial:
            raise ValidationError("cannot exceed the number of samples", "hostExposedSamples")


class RerunMemorySchema(Schema):
    """A memory result's figures (``runners.memory.memory_summary``): peaks in MB, as upstream's rows count them."""

    unit = fields.String(required=True, validate=validate.Equal(memory.UNIT))
    median = positive(required=True)
    p20 = positive(required=True)
    p80 = positive(required=True)
    samples = fields.List(positive(), required=True, validate=length(10_000))
    inputs = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=0))
    method = fields.Dict(keys=fields.String(), required=True)

    @validates_schema
    def figures_agree(self, data, **kwargs):
        if not min(data["samples"]) <= data["p20"] <= data["median"] <= data["p80"] <= max(data["samples"]):
            raise ValidationError("must satisfy min(samples) <= p20 <= median <= p80 <= max(samples)", "median")


class ScanWarningSchema(Schema):
    line = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))
    pattern = fields.String(required=True, validate=length(40))
    text = fields.String(required=True, validate=length(500))


class WallClockBatchesSchema(Schema):
    checked = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    disagreed = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))


class RerunIntegritySchema(Schema):
    """What the harness's integrity checks found (``runners.rerun.integrity_section``); violations invalidate."""

    inputSeeds = fields.List(fields.Integer(strict=True), required=True, validate=length(1000, 0))
    timedCalls = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    distinctAddresses = fields.Integer(strict=True, load_default=None, validate=validate.Range(min=0))
    auditedCalls = fields.List(fields.Integer(strict=True, validate=validate.Range(min=1)), required=True,
                               validate=length(10_000, 0))
    wallClockBatches = fields.Nested(WallClockBatchesSchema, load_default=None)
    violations = fields.List(fields.String(validate=length(2000)), required=True, validate=length(100, 0))
    scanWarnings = fields.List(fields.Nested(ScanWarningSchema), load_default=list, validate=length(1000, 0))
    isolation = fields.String(load_default=None, validate=validate.OneOf((HARNESS_PROCESS, CHILD_PROCESS)))
    # where it was measured (``runners.isolation``); absent before third-party implementations ran in child processes


class TelemetrySampleSchema(Schema):
    trial = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))
    smClockMHz = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=0))
    memoryClockMHz = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=0))
    temperatureC = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=-50, max=200))
    powerW = fields.Float(required=True, allow_nan=False, validate=validate.Range(min=0))
    throttleReasons = fields.List(fields.String(validate=length(60)), required=True, validate=length(20, 0))


class RerunTelemetrySchema(Schema):
    """The GPU's state after each trial (``runners.telemetry``), or why there is none."""

    available = fields.Boolean(required=True, truthy={True}, falsy={False})
    reason = fields.String(validate=length(500))
    maxSmClockMHz = fields.Float(allow_nan=False, validate=validate.Range(min=0))
    samples = fields.List(fields.Nested(TelemetrySampleSchema), validate=length(10_000, 0))
    trialsOutsideProtocol = fields.List(fields.Integer(strict=True), validate=length(10_000, 0))
    failures = fields.List(fields.String(validate=length(500)), validate=length(10_000, 0))


class RerunWorkloadSchema(Schema):
    parameters = fields.Dict(keys=fields.String(validate=length(80)), values=Scalar(), required=True)
    dtype = fields.String(required=True, validate=validate.OneOf(DTYPE_NAMES))
    options = fields.Dict(keys=fields.String(validate=length(80)), values=Scalar(), load_default=dict)


class RerunResultSchema(Schema):
    """One implementation's result on one workload: a bundle line (``runners.types.RerunResult``)."""

    class Meta:
        unknown = INCLUDE

    rerunOf = fields.String(allow_none=True, load_default=None, validate=length(16))  # a Run.id
    family = fields.String(required=True, validate=address_name_of(FAMILY_NAME_LENGTH))
    pass_ = fields.String(data_key="pass", required=True, validate=validate.OneOf(PASSES))
    metric = fields.String(required=True, validate=validate.OneOf(("speed", memory.METRIC)))
    implementation = Checked(RerunImplementationSchema(), required=True)
    workload = fields.Nested(RerunWorkloadSchema, required=True)
    status = fields.String(required=True, validate=validate.OneOf(("passed", "failed")))
    error = fields.String(allow_none=True, load_default=None)
    timing = fields.Nested(RerunTimingSchema, allow_none=True, load_default=None)
    memory = fields.Nested(RerunMemorySchema, allow_none=True, load_default=None)  # memory results only
    correctness = Checked(RerunCorrectnessSchema(), required=True)
    environment = Checked(RerunEnvironmentSchema(), required=True)
    protocol = Checked(RerunProtocolSchema(), required=True)
    observedAt = fields.AwareDateTime(required=True, validate=OBSERVABLE, error_messages={
        "invalid_awareness": "must carry its timezone (2026-11-29T10:00:00Z)"})
    cost = Checked(RerunCostSchema(), required=True)
    integrity = Checked(RerunIntegritySchema(), allow_none=True, load_default=None)  # absent before protocol v2
    telemetry = Checked(RerunTelemetrySchema(), allow_none=True, load_default=None)

    @validates_schema
    def parts_agree(self, data, **kwargs):
        implementation, timing, protocol = data["implementation"], data["timing"], data["protocol"]
        document_name = f"{data['family']}-{implementation['name']}-{implementation.get('revision', 'unknown')}"
        if len(document_name) > DOCUMENT_NAME:
            raise ValidationError(f"family, name and revision name a document of more than {DOCUMENT_NAME} "
                                  "characters", "implementation")
        figures, other = ("memory", "timing") if data["metric"] == memory.METRIC else ("timing", "memory")
        if data["status"] == "passed" and data[figures] is None:
            raise ValidationError(f"a passed {data['metric']} result carries its {figures}", figures)
        if data[other] is not None:
            raise ValidationError(f"a {data['metric']} result carries no {other}", other)
        for count in ("trials", "samplesPerTrial") if timing else ():
            if protocol.get(count) != timing[count]:
                raise ValidationError(f"the protocol declares {count} {protocol.get(count)}, the timing has "
                                      f"{timing[count]}", "protocol")


result_schema = RerunResultSchema()
