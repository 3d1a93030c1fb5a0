"""The family page's chart: the shown configuration's runs, median against the swept parameter.

The configuration is chosen in ``family_filters`` (the fixed parameters, the most common
values for the free ones); the table below lists runs of the same configuration.
"""

from .. import charts, comparison
from .family_query import x_order
from .titles import implementation_title, metric_name


def line_label(row: dict) -> str:
    """A line per implementation, KernelIndex reruns apart from the source's figures."""
    label = implementation_title(row["implementation"])
    if comparison.EVIDENCE_KIND.get(row["evidence"]) == comparison.KERNELINDEX:
        label += " (KernelIndex rerun)"
    return label


def grouped(rows: list, key) -> dict:
    groups = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def family_chart(title: str, config_rows: list, *, unit: str, x_name: str, metric: str) -> dict:
    """The chart's geometry and its points per implementation (for the twin)."""
    chart_rows = sorted((row for row in config_rows if row["median"] is not None),
                        key=lambda row: (x_order(row), row["x_value"]))
    by_implementation = grouped(chart_rows, lambda row: row["implementation"])
    return {
        "chart": charts.line_chart(grouped(chart_rows, line_label), x_name=x_name, unit=unit,
                                   title=f"{title}: median {metric_name(unit, metric)} against {x_name}"),
        "series": [{"label": label, "points": points} for label, points in sorted(by_implementation.items())],
        "unit": chart_rows[0]["unit"] if chart_rows else "",
    }
