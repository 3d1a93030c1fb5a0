"""Marshmallow schemas of the pages' JSON twins (``<page>.json`` or ``Accept: application/json``).

Each schema dumps the very context its page's template renders (``app.pages``): a
twin carries what its page shows, the record data at full precision (as the
``/api/v1`` shapes have it) plus the figures as the page words them. The run and
comparison twins extend the API's schemas, so a client of one reads the other.
The OpenAPI document (``app/openapi.py``) is generated from these and ``app.schemas``.
"""

from marshmallow import Schema, fields

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


class CorrectnessSchema(Schema):
    published = fields.Boolean(metadata={"description": "False for source rows: the source published no policy."})
    sentence = fields.String()
    status = fields.String()
    policy_text = fields.String()
    policy_name = fields.String(allow_none=True)
    policy_digest = fields.String(allow_none=True)
    trials = fields.Integer(allow_none=True)


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
    status = fields.String()


class RunPageSchema(RunDetailSchema):
    """The run page: the API's run detail plus the page's worded figures and sections."""

    family = fields.Nested(FamilyRefSchema)
    headline = fields.String()
    primary = fields.Dict(metadata={"description": "value, unit and text of the median as the page shows it"})
    rank_line = fields.String()
    spread_line = fields.String()
    identity = fields.Dict(keys=fields.String())
    correctness = fields.Nested(CorrectnessSchema)
    workload_rows = fields.List(Row(), attribute="workload.rows")
    tensors = fields.List(Row(), attribute="workload.tensors")
    comparator = fields.String(attribute="workload.comparator")
    measurements = fields.List(Row())
    throughput = fields.Nested(ThroughputSchema, allow_none=True)
    protocol = fields.Dict()
    environment = fields.List(Row())
    superseded_by = fields.Nested(HistoryEntrySchema, allow_none=True)
    supersedes = fields.List(fields.Nested(HistoryEntrySchema))
    rerun_of = fields.Nested(HistoryEntrySchema, allow_none=True)
    reruns = fields.List(fields.Nested(HistoryEntrySchema))
    issue_count = fields.Integer()
    citation = fields.Nested(CitationSchema)
    footer = fields.Nested(FooterSchema)


class ComparisonRowSchema(Schema):
    id = fields.String()
    rank = fields.Integer()
    implementation = fields.String()
    median = fields.String()
    spread = fields.String()
    standing = fields.String(metadata={"description": "#1, tied with #1, within noise of #1, or the ratio to #1"})


class RelatedGroupSchema(Schema):
    url = fields.String()
    gpu = fields.String()
    size = fields.Integer()
    evidence = fields.String()


class ComparisonPageSchema(ComparisonSchema):
    """The comparison page: the API's comparison plus the worded rows and related groups."""

    title = fields.String()
    rows = fields.List(fields.Nested(ComparisonRowSchema))
    related = fields.List(fields.Nested(RelatedGroupSchema))


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


class FamilyPageSchema(Schema):
    family = fields.Nested(FamilyRefSchema)
    selected = fields.Dict(metadata={"description": "pass, metric, gpu, implementation and fixed parameters"})
    options = fields.Dict(metadata={"description": "the values each filter can take here"})
    x_name = fields.String()
    chart_config = fields.String()
    x_scale = fields.String(attribute="chart.x_scale")
    y_scale = fields.String(attribute="chart.y_scale")
    series = fields.List(fields.Nested(ChartSeriesSchema))
    unit = fields.String()
    items = fields.List(fields.Nested(RunItemSchema), attribute="rows")
    total = fields.Integer()
    page = fields.Integer()
    pages = fields.Integer()
    sort = fields.String()
    order = fields.String()
    next = fields.String(allow_none=True, attribute="next_url")


class HomeFamilySchema(Schema):
    name = fields.String()
    title = fields.String()
    runs = fields.Integer()
    gpus = fields.List(fields.String())
    implementations = fields.List(fields.String())
    url = fields.String()


class HomePageSchema(Schema):
    families = fields.List(fields.Nested(HomeFamilySchema))
    total_runs = fields.Integer()
    imports = fields.List(fields.Dict())
    reruns = fields.List(fields.Dict())
    sources = fields.List(fields.Dict())


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
    implementations = fields.List(fields.Dict())
    description = fields.String()


class BrokenPluginSchema(Schema):
    name = fields.String()
    origin = fields.String()
    error = fields.String()


class PluginsPageSchema(Schema):
    plugins = fields.List(fields.Nested(PluginSchema))
    broken = fields.List(fields.Nested(BrokenPluginSchema))
    error = fields.String(allow_none=True)


run_page_schema = RunPageSchema()
comparison_page_schema = ComparisonPageSchema()
family_page_schema = FamilyPageSchema()
home_page_schema = HomePageSchema()
search_page_schema = SearchPageSchema()
plugins_page_schema = PluginsPageSchema()
