"""The family page's query arguments: which view, which runs within it, and the table's order.

Every argument is checked against what the family has; a value it does not have raises
:class:`BadFilter` with a message that lists what it does have. An absent argument takes
its default (``FAMILY_DEFAULTS``), or for the view the most telling value present. Every
parameter can be fixed, the swept one too; the parameters left free take the values of
the most common configuration, so the chart and the table always show one configuration.
"""

from .family_query import VIEW_FIELDS, Facets, number_in
from .pagination import BadPage, page_number
from .titles import by_length_then_name

FAMILY_CONTROLS = ("pass", "metric", "gpu", "implementation", "table", "sort", "order", "page")
FAMILY_TABLES = {"runs": "All runs", "fastest": "Fastest per point"}
FAMILY_SORTS = {"x": "swept parameter", "median": "median", "implementation": "implementation",
                "observed": "observed"}
FAMILY_DEFAULTS = {"table": "runs", "sort": "x", "order": "asc", "page": 1}  # what an absent control means; links leave these out
PREFERRED = {"pass": "forward", "metric": "speed"}


class BadFilter(ValueError):
    """A family-page filter that names nothing the family has; the message says what it does have."""


def _prefer(counts: dict, wanted, preferred=None):
    """The requested value, else the preferred one if present, else the most common."""
    if wanted:
        return wanted
    if preferred in counts:
        return preferred
    return max(counts, key=lambda value: (counts[value], value)) if counts else None


def chosen_view(title: str, facets: Facets, args: dict) -> dict:
    """``{"pass", "metric", "gpu"}``: each as asked, else preferred or most common given the ones before."""
    for name in VIEW_FIELDS:
        value = args.get(name)
        if value and value not in facets.values(name):
            raise BadFilter(f"{title} has no runs with {name} {value!r}; it has: "
                            + ", ".join(sorted(facets.values(name))))
    view = {}
    for name in VIEW_FIELDS:
        view[name] = _prefer(facets.counts(name, view), args.get(name), PREFERRED.get(name))
    return view


def table_order(args: dict) -> tuple[str, str, str, int]:
    """Which table (all runs or the fastest per point), its sort column, direction and page."""
    table = args.get("table") or FAMILY_DEFAULTS["table"]
    if table not in FAMILY_TABLES:
        raise BadFilter(f"table must be one of {', '.join(FAMILY_TABLES)}, not {table!r}")
    sort = args.get("sort") or FAMILY_DEFAULTS["sort"]
    if sort not in FAMILY_SORTS:
        raise BadFilter(f"sort must be one of {', '.join(FAMILY_SORTS)}, not {sort!r}")
    order = args.get("order") or FAMILY_DEFAULTS["order"]
    if order not in ("asc", "desc"):
        raise BadFilter(f"order must be asc or desc, not {order!r}")
    try:
        return table, sort, order, page_number(args.get("page"))
    except BadPage as error:
        raise BadFilter(str(error)) from None


def chosen_implementation(title: str, view: dict, implementations: list, args: dict) -> str:
    implementation = args.get("implementation") or ""
    if implementation and implementation not in implementations:
        raise BadFilter(f"{title} has no {implementation!r} runs on {view['gpu']} ({view['pass']}, "
                        f"{view['metric']}); it has: " + ", ".join(implementations))
    return implementation


def fixed_parameters(parameters: dict, args: dict) -> dict:
    """The parameters the arguments fix (``heads=8``, ``seq=1024``); any other argument name is refused."""
    fixed = {}
    for name, value in args.items():
        if name in FAMILY_CONTROLS or value in ("", None):
            continue
        if name not in parameters:
            raise BadFilter(f"unknown filter {name!r}: filters are {', '.join(FAMILY_CONTROLS)} and the fixed "
                            f"parameters {', '.join(by_length_then_name(parameters)) or '(none)'}")
        fixed[name] = _listed(name, value, parameters[name])
    return fixed


def _listed(name: str, value: str, values: list) -> str:
    """``value`` as the view lists it (``1e-06`` for ``0.000001``); BadFilter where no run of the view has it."""
    if value in values:
        return value
    number = number_in(value)
    for listed in values:
        if number is not None and number_in(listed) == number:
            return listed
    raise BadFilter(f"no run here has {name} {value!r}; the values are: {', '.join(values)}")


def agrees(row: dict, fixed: dict) -> bool:
    """Whether a run has each fixed value, in its configuration or as its point in the sweep."""
    point = {**dict(row["config"]), row["x_name"]: row["x_value"]}
    return all(point.get(name) == value for name, value in fixed.items())


def chosen_configuration(rows: list, fixed: dict) -> tuple:
    """The configuration shown: among those of the rows that agree with the fixed parameters, one that the fixed
    parameters name whole (as a run's link to its family does), else the most common (a view can hold several
    sweeps, as rope's of seq at one hidden size and of hidden sizes at one seq)."""
    counts = {}
    for row in rows:
        if agrees(row, fixed):
            counts[row["config"]] = counts.get(row["config"], 0) + 1
    return max(counts, key=lambda c: (dict(c).keys() <= fixed.keys(), counts[c], c)) if counts else ()


def parameter_filters(parameters: dict, fixed: dict, configuration: tuple) -> list:
    """One select per parameter: its values, the one the URL fixes ("" when free) and the one shown when free."""
    shown = dict(configuration)
    return [{"name": name, "choices": values, "fixed": fixed.get(name, ""), "shown": shown.get(name, "")}
            for name, values in parameters.items()]
