"""Marshmallow schemas of the pages' JSON twins (``<page>.json`` or ``Accept: application/json``).

Each schema dumps the very context its page's template renders (``app.pages``): a
twin carries what its page shows, the record data at full precision (as the
``/api/v1`` shapes have it) plus the figures as the page words them. The run and
comparison twins extend the API's schemas, so a client of one reads the other, with one
difference: the run twin's history (``superseded_by``, ``supersedes``, ``rerun_of``,
``reruns``) holds the runs the page links to, each an object with its ``id``, where the
API's run holds the ids alone.
The OpenAPI document (``app/openapi.py``) is generated from these and ``app.schemas``.
"""

from marshmallow import Schema, fields

from .rerun_request_schemas import RerunRequestSchema
from .schemas import ComparisonSchema, RunDetailSchema, RunItemSchema


class Row(fields.Field):
    """A ``(label, text)`` row as ``{"label": ..., "value": ...}``."""

    def _serialize(self, value, attr, obj, **kwargs):
        if value is None:
            return None
        label, text = value
        return {"label": label, "value": text}


class FamilyRefSchema(Schema):
    name = fields.String()
    title = fields.String()


class RejudgementSchema(Schema):
    """A rerun's verdict under a later policy version, beside the one it recorded (``flask rejudge``)."""

    policy_version = fields.Integer()
    policy_digest = fields.String()
    status = fields.String(metadata={"description": "passed, failed or undetermined"})
    reasons = fields.List(fields.String())
    judged = fields.String()
    sentence = fields.String()
    ranking = fields.String(allow_none=True, metadata={"description": "why a run passed under it still does not rank"})


class CorrectnessSchema(Schema):
    published = fields.Boolean(metadata={"description": "False for source rows: the source published no policy."})
    sentence = fields.String()
    status = fields.String()
    policy_summary = fields.Dict(allow_none=True, metadata={
        "description": "name, version, first_line, tolerances, trials (null for source rows: no policy published)"})
    policy_url = fields.String(allow_none=True, metadata={"description": "the policy's full text, by digest"})
    policy_name = fields.String(allow_none=True)
    policy_digest = fields.String(allow_none=True)
    policy_version = fields.Integer(allow_none=True)
    trials = fields.Integer(allow_none=True)
    rejudgements = fields.List(fields.Nested(RejudgementSchema))


class ThroughputSchema(Schema):
    bandwidth = fields.String(allow_none=True)
    flop_rate = fields.String(allow_none=True)
    peaks = fields.String(allow_none=True, metadata={"description": "Which datasheet peaks the percentages use."})
    bandwidth_percent = fields.String(allow_none=True)
    flop_percent = fields.String(allow_none=True)
    floor = fields.String(allow_none=True)
    percent_of_floor = fields.String(allow_none=True)
    bound = fields.String(allow_none=True)


class CitationSchema(Schema):
    permalink = fields.String()
    digest = fields.String()
    accessed = fields.String()
    plain = fields.String()
    bibtex = fields.String()
    csl_json = fields.String()


class FooterSchema(Schema):
    published = fields.String()
    source = fields.String()
    license = fields.String()


class HistoryEntrySchema(Schema):
    """A run the page links to as superseding, superseded, reproduced or reproducing this one."""

    id = fields.String()
    url = fields.String()
    observed = fields.String()
    median = fields.String(allow_none=True)
    evidence = fields.String()
    host = fields.String(allow_none=True)
    gpu = fields.String()
    gpu_note = fields.String(allow_none=True, metadata={
        "description": "reruns: where the rerun ran, against the reproduced run's GPU (null for other links)"})
    status = fields.String(metadata={"description": "passed, failed, undetermined, or invalidated (found gamed)"})


class RerunChoiceSchema(Schema):
    value = fields.String()
    label = fields.String()


class RunRerunSectionSchema(Schema):
    """The run page's rerun requests (newest first), whether the section polls, and where a maintainer may ask."""

    requests = fields.List(fields.Nested(RerunRequestSchema))
    polling = fields.Boolean()
    choices = fields.List(fields.Nested(RerunChoiceSchema))


class RunPageSchema(RunDetailSchema):
    """The run page: the API's run detail plus the page's worded figures and sections."""

    family = fields.Nested(FamilyRefSchema)
    headline = fields.String()
    primary = fields.Dict(metadata={"description": "value, unit and text of the median as the page shows it"})
    rank_line = fields.String()
    invalidation_notice = fields.String(allow_none=True, metadata={
        "description": "why, by whom and when the result was invalidated, in words (null when it stands)"})
    spread_line = fields.String()
    execution = fields.List(fields.String(), metadata={
        "description": "a rerun's math mode, host-inclusive median and host synchronization, in words"})
    native_line = fields.String(metadata={"description": "the source's own figures exactly as it recorded them"})
    identity = fields.Dict(keys=fields.String())
    correctness = fields.Nested(CorrectnessSchema)
    workload_rows = fields.List(Row(), attribute="workload.rows")
    tensors = fields.List(Row(), attribute="workload.tensors")
    comparator = fields.String(attribute="workload.comparator")
    measurements = fields.List(Row())
    throughput = fields.Nested(ThroughputSchema, allow_none=True)
    samples_label = fields.String(allow_none=True,
                                  metadata={"description": "what the raw-sample plot shows (reruns only)"})
    protocol = fields.Dict()
    environment = fields.List(Row())
    superseded_by = fields.Nested(HistoryEntrySchema, allow_none=True)
    supersedes = fields.List(fields.Nested(HistoryEntrySchema))
    rerun_of = fields.Nested(HistoryEntrySchema, allow_none=True)
    reruns = fields.List(fields.Nested(HistoryEntrySchema))
    rerun_section = fields.Nested(RunRerunSectionSchema)
    issue_count = fields.Integer()
    citation = fields.Nested(CitationSchema)
    badge = fields.Dict(metadata={"description": "url of the run's SVG badge and the Markdown that embeds it"})
    footer = fields.Nested(FooterSchema)


class ComparisonRowSchema(Schema):
    """A member as the page shows it: figures rounded to three significant figures in the table's one unit."""

    id = fields.String()
    rank = fields.Integer()
    implementation = fields.String(metadata={"description": "the implementation's display name"})
    implementation_name = fields.String(metadata={"description": "the implementation's name as recorded"})
    median = fields.Float(allow_none=True)
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)
    unit = fields.String(metadata={"description": "the unit of median, p20 and p80 (one per table)"})
    standing = fields.String(metadata={"description": "leader, tied, within_noise or ratio"})
    ratio = fields.Float(allow_none=True, metadata={"description": "times slower (or faster) than #1"})
    direction = fields.String(allow_none=True, metadata={"description": "slower, faster or same"})
    current = fields.Boolean(metadata={"description": "the run named by ?from="})
    math_mode = fields.String(allow_none=True, metadata={"description": "how it multiplies (reruns only)"})
    host_median_text = fields.String(allow_none=True, metadata={
        "description": "host-inclusive median, what an eager caller pays (reruns only)"})


class AgreementRowSchema(Schema):
    implementation = fields.String()
    upstream = fields.Float(metadata={"description": "speed-up over the baseline, as the source reported it"})
    rerun = fields.Float(metadata={"description": "speed-up over the baseline, as the KernelIndex rerun measured it"})
    disagree = fields.Boolean(metadata={"description": "the two ratios differ beyond both groups' p20–p80 spreads"})


class AgreementSchema(Schema):
    baseline = fields.String()
    upstream_url = fields.String()
    rerun_url = fields.String()
    upstream_gpu = fields.String()
    rerun_gpu = fields.String()
    rows = fields.List(fields.Nested(AgreementRowSchema))


class RelatedGroupSchema(Schema):
    url = fields.String()
    gpu = fields.String()
    size = fields.Integer()
    evidence = fields.String()


class ComparisonPageSchema(ComparisonSchema):
    """The comparison page: the API's comparison plus the worded rows and related groups."""

    title = fields.String()
    rows = fields.List(fields.Nested(ComparisonRowSchema))
    unranked_origin = fields.Dict(allow_none=True, metadata={
        "description": "the run named by ?from= where it is in the group but not ranked: id, url and reason"})
    tie_rule = fields.String(metadata={"description": "when members share a rank, for the group's evidence kind"})
    math_modes_note = fields.String(allow_none=True, metadata={"description": "set when members' math modes differ"})
    axis = fields.Dict(metadata={"description": "unit, scale (linear or log) and ends of the spread bars' axis"})
    related = fields.List(fields.Nested(RelatedGroupSchema))
    agreements = fields.List(fields.Nested(AgreementSchema))


class ChartPointSchema(Schema):
    id = fields.String()
    x = fields.String(attribute="x_value")
    x_number = fields.Float(allow_none=True)
    median = fields.Float(allow_none=True)
    p20 = fields.Float(allow_none=True)
    p80 = fields.Float(allow_none=True)


class ChartSeriesSchema(Schema):
    label = fields.String()
    points = fields.List(fields.Nested(ChartPointSchema))


class FastestRowSchema(Schema):
    x = fields.String(attribute="x_value")
    id = fields.String()
    implementation = fields.String()
    median = fields.Float()
    unit = fields.String()
    runner_up = fields.String(allow_none=True)
    runner_up_median = fields.Float(allow_none=True)
    margin = fields.Float(allow_none=True, metadata={"description": "runner-up median / leader median"})
    margin_text = fields.String()
    evidence = fields.String()
    comparison_url = fields.String()


class FamilyRunItemSchema(RunItemSchema):
    """A row of the family page's runs table: a run and the point of the sweep it measures (the table's first
    column), which the run fields alone do not say."""

    x = fields.String(attribute="x_value", metadata={"description": "the run's value of the swept parameter, x_name"})


class FamilyPageSchema(Schema):
    family = fields.Nested(FamilyRefSchema)
    selected = fields.Dict(metadata={"description": "pass, metric, gpu, implementation, fixed parameters and "
                                                   "the configuration shown"})
    options = fields.Dict(metadata={"description": "the values each filter can take here"})
    x_name = fields.String()
    chart_config = fields.String()
    x_scale = fields.String(attribute="chart.x_scale")
    y_scale = fields.String(attribute="chart.y_scale")
    series = fields.List(fields.Nested(ChartSeriesSchema))
    unit = fields.String()
    table = fields.String(metadata={"description": "runs or fastest"})
    items = fields.List(fields.Nested(FamilyRunItemSchema), attribute="rows")
    leaders = fields.List(fields.Nested(FastestRowSchema), metadata={"description": "the fastest per sweep point"})
    total = fields.Integer()
    page = fields.Integer()
    pages = fields.Integer()
    sort = fields.String()
    order = fields.String()
    next = fields.String(allow_none=True, attribute="next_twin_url",
                         metadata={"description": "the next page of this twin, as search's and the API's next"})
    cleared = fields.List(fields.String(), metadata={
        "description": "why each filter the chosen view has no runs for was dropped (a query the page's own form "
                       "sent, with apply=; a link loaded whole refuses such a filter with a 400)"})


class HomeFamilySchema(Schema):
    name = fields.String()
    title = fields.String()
    runs = fields.Integer()
    gpus = fields.List(fields.String())
    implementations = fields.List(fields.String())
    implementation_titles = fields.List(fields.String())
    url = fields.String()


class HomePageSchema(Schema):
    families = fields.List(fields.Nested(HomeFamilySchema))
    total_runs = fields.Integer()
    imports = fields.List(fields.Dict())
    reruns = fields.List(fields.Dict())
    sources = fields.List(fields.Dict())
    upstream = fields.Dict(metadata={"description": "the Liger-Kernel commit a checkout without data imports"})
    downloads = fields.Dict(metadata={"description": "URLs of the bulk downloads (csv, jsonl)"})


class SearchPageSchema(Schema):
    q = fields.String()
    families = fields.List(fields.Dict())
    gpus = fields.List(fields.Dict())
    items = fields.List(fields.Nested(RunItemSchema))
    total = fields.Integer()
    page = fields.Integer()
    next = fields.String(allow_none=True)


class PluginSchema(Schema):
    name = fields.String()
    origin = fields.String()
    kind = fields.String()
    family = fields.String()
    title = fields.String()
    target = fields.String()
    implementations = fields.List(fields.Dict(), metadata={
        "description": "every implementation of the family on the target, each with the plugin it came from "
                       "(plugin, origin): the family plugin's own, then those implementation plugins add"})
    adds = fields.List(fields.Dict(), metadata={
        "description": "an implementation plugin's additions: family, target and implementation name"})
    description = fields.String()
    scan_warnings = fields.List(fields.Dict(), metadata={
        "description": "line, pattern and text of each static-scan finding in the plugin's source (warnings only)"})


class BrokenPluginSchema(Schema):
    name = fields.String()
    origin = fields.String()
    error = fields.String()


class PluginsPageSchema(Schema):
    plugins = fields.List(fields.Nested(PluginSchema))
    broken = fields.List(fields.Nested(BrokenPluginSchema))
    error = fields.String(allow_none=True)


class EvidenceLevelSchema(Schema):
    level = fields.String()
    title = fields.String()
    summary = fields.String()
    how_reached = fields.String()


class EvidencePageSchema(Schema):
    levels = fields.List(fields.Nested(EvidenceLevelSchema))
    rules = fields.List(fields.String())


class RerunsPageSchema(Schema):
    """``/reruns``: rerun requests, newest first, with the filters applied."""

    title = fields.String()
    items = fields.List(fields.Nested(RerunRequestSchema))
    total = fields.Integer()
    page = fields.Integer()
    filters = fields.Dict(keys=fields.String(), values=fields.String())
    next = fields.String(allow_none=True, metadata={"description": "the next page of this twin, as search's next"})


run_page_schema = RunPageSchema()
comparison_page_schema = ComparisonPageSchema()
family_page_schema = FamilyPageSchema()
home_page_schema = HomePageSchema()
search_page_schema = SearchPageSchema()
plugins_page_schema = PluginsPageSchema()
evidence_page_schema = EvidencePageSchema()
reruns_page_schema = RerunsPageSchema()
