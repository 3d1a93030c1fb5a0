"""What the family page reads from the database: which views a family has, and one view's runs.

A *view* is one pass, metric and GPU; only current runs count. Each run comes back as a
plain row (a dict of the columns the page and its twin use) with its ``config``: what
fixes its point in the sweep.
"""

import peewee

from .. import formatting
from ..models import ComparisonGroup, Run
from .titles import FamilyRef, by_length_then_name

VIEW_FIELDS = ("pass", "metric", "gpu")
ROW_COLUMNS = (Run.id, Run.implementation, Run.x_name, Run.x_value, Run.x_number, Run.parameters, Run.dtype,
               Run.options, Run.median, Run.p20, Run.p80, Run.unit, Run.evidence, Run.observed_at, Run.rank,
               Run.status, Run.external_id, Run.comparison_key, Run.invalidated_at, Run.invalidated_by,
               Run.invalidated_reason)


class Facets:
    """How many current runs a family has in each view (pass, metric, GPU)."""

    def __init__(self, family: FamilyRef):
        self.runs = dict(((pass_, metric, gpu), count) for pass_, metric, gpu, count in (
            Run.current(Run.pass_, Run.metric, Run.gpu, peewee.fn.COUNT(Run.id))
            .where(Run.kernel == family.name).group_by(Run.pass_, Run.metric, Run.gpu).tuples()))

    def values(self, field: str) -> set:
        return {view[VIEW_FIELDS.index(field)] for view in self.runs}

    def counts(self, field: str, fixed: dict | None = None) -> dict:
        """Runs per value of ``field`` among the views with the ``fixed`` values (``{"pass": "forward"}``)."""
        position = VIEW_FIELDS.index(field)
        totals = {}
        for view, count in self.runs.items():
            if all(view[VIEW_FIELDS.index(name)] == value for name, value in (fixed or {}).items()):
                totals[view[position]] = totals.get(view[position], 0) + count
        return totals


def moving_with_x(family: str, x_name: str, values: dict) -> set:
    """The names whose values a family derives from the swept one (group norm's batch from the tokens it sweeps, a
    named model's vocabulary): they move along the sweep with it."""
    from runners.discovery import family_definitions

    definition = family_definitions().get(family)
    if definition is None or definition.implied is None or x_name not in values:
        return set()
    without_x = definition.implied({name: value for name, value in values.items() if name != x_name})
    return {name for name, value in definition.implied(values).items() if without_x.get(name) != value}


def config_of(family: str, row: dict) -> tuple:
    """What fixes a run's point in its sweep: its parameters, options and dtype, but for the swept value (a parameter
    or an option) and what moves with it."""
    values = {**row["parameters"], **(row["options"] or {})}
    moving = {row["x_name"], *moving_with_x(family, row["x_name"], values)}
    items = [(name, formatting.parameter_value(value)) for name, value in values.items() if name not in moving]
    if row["dtype"]:
        items.append(("dtype", row["dtype"]))
    return tuple(sorted(items, key=lambda item: (len(item[0]), item[0])))


def config_text(config: tuple) -> str:
    """``heads = 8 · hidden = 512 · fp32``: a configuration as the page words it."""
    return " · ".join(f"{name} = {value}" if name != "dtype" else value for name, value in config)


def x_order(row: dict) -> tuple:
    """Numbers on the swept parameter by value, then names (model names) alphabetically."""
    return (0, row["x_number"], "") if row["x_number"] is not None else (1, 0, row["x_value"])


def view_rows(family: FamilyRef, pass_: str, metric: str, gpu: str) -> list:
    """The current runs of one view, as rows with their ``config`` and their comparison group's size (a row is the
    API's run fields, ``group_size`` among them)."""
    names = [column.name for column in ROW_COLUMNS] + ["group_size"]
    rows = [dict(zip(names, values)) for values in Run.current(*ROW_COLUMNS, ComparisonGroup.size)
            .join(ComparisonGroup, on=(Run.comparison_key == ComparisonGroup.key)).where(
        (Run.kernel == family.name) & (Run.pass_ == pass_) & (Run.metric == metric) & (Run.gpu == gpu)).tuples()]
    for row in rows:
        row["config"] = config_of(family.name, row)
    return rows


def parameter_values(rows: list) -> dict:
    """Each parameter of these rows and its values: the swept ones first, then the others as the run page lists
    them. A name one sweep sweeps and another fixes (rope's seq) has the values of both."""
    swept, fixed = {}, {}
    for row in rows:
        swept.setdefault(row["x_name"], {})[row["x_value"]] = x_order(row)
        for name, value in row["config"]:
            fixed.setdefault(name, set()).add(value)
    for name, found in swept.items():
        for value in fixed.pop(name, ()):
            found.setdefault(value, value_order(value))
    return {**{name: sorted(found, key=found.get) for name, found in swept.items()},
            **{name: sorted(fixed[name], key=lambda v: (len(v), v)) for name in by_length_then_name(fixed)}}


def value_order(text: str) -> tuple:
    """A value's place among a swept parameter's, as :func:`x_order` places the sweep's own points."""
    number = number_in(text)
    return (0, number, "") if number is not None else (1, 0, text)


def number_in(text: str) -> float | None:
    """The number a value's text spells (``1e-06``, ``4096``), or None for a name."""
    try:
        return float(text)
    except ValueError:
        return None