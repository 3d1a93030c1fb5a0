"""The family page's query arguments: which view, which runs within it, and the table's order.

Every argument is checked against what the family has; a value it does not have raises
:class:`BadFilter` with a message that lists what it does have. An absent argument takes
its default (``FAMILY_DEFAULTS``), or for the view the most telling value present. Every
parameter can be fixed, the swept one too; the parameters left free take the values of
the most common configuration, so the chart and the table always show one configuration.

The filters depend on one another: the metrics offered depend on the pass, the GPUs on both,
the implementations and parameter values on the view. The page's form sends every select's
value, so a new GPU, pass or metric can come with an implementation or a fixed value the new
view lacks. A ``cleared`` list, passed for such a request, turns those refusals into notes:
the value is dropped (its default taken) and the message kept for the page to show.
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


def refuse(message: str, cleared: list | None) -> None:
    """Raise BadFilter with ``message``; or, for a request from the page's own filters (``cleared`` is a list), note
    the message there: the filter is dropped and the page says why."""
    if cleared is None:
        raise BadFilter(message)
    cleared.append(message)


def _prefer(counts: dict, wanted, preferred=None):
    """The requested value, else the preferred one if present, else the most common."""
    if wanted:
        return wanted
    if preferred in counts:
        return preferred
    return max(counts, key=lambda value: (counts[value], value)) if counts else None


def chosen_view(title: str, facets: Facets, args: dict, cleared: list | None = None) -> dict:
    """``{"pass", "metric", "gpu"}``: each as asked, else preferred or most common given the ones before; one asked
    for that has no runs given the ones before is refused (or cleared)."""
    view = {}
    for name in VIEW_FIELDS:
        counts = facets.counts(name, view)
        wanted = args.get(name)
        if wanted and wanted not in counts:
            among = f" among its {' '.join(view.values())} runs" if view else ""
            refuse(f"{title} has no runs with {name} {wanted!r}{among}; it has: {', '.join(sorted(counts))}", cleared)
            wanted = None
        view[name] = _prefer(counts, wanted, PREFERRED.get(name))
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


def chosen_implementation(title: str, view: dict, implementations: list, args: dict,
                          cleared: list | None = None) -> str:
    """The implementation asked for ("" for all); one the view lacks is refused (or cleared)."""
    implementation = args.get("implementation") or ""
    if implementation and implementation not in implementations:
        refuse(f"{title} has no {implementation!r} runs on {view['gpu']} ({view['pass']}, {view['metric']}); "
               f"it has: " + ", ".join(implementations), cleared)
        return ""
    return implementation


def fixed_parameters(view: dict, parameters: dict, args: dict, cleared: list | None = None) -> dict:
    """The parameters the arguments fix (``heads=8``, ``seq=1024``); any other argument name, or a value no run of
    the view has, is refused (or cleared: a name the page's own form sent is a parameter of the view it came from,
    which the new view's runs lack)."""
    fixed = {}
    names = ", ".join(by_length_then_name(parameters)) or "(none)"
    for name, value in args.items():
        if name in FAMILY_CONTROLS or value in ("", None):
            continue
        if name not in parameters:
            refuse(f"unknown filter {name[:40]!r}: filters are {', '.join(FAMILY_CONTROLS)} and the fixed "
                   f"parameters {names}" if cleared is None else
                   f"the runs on {view['gpu']} ({view['pass']}, {view['metric']}) have no parameter {name[:40]!r}; "
                   f"theirs are: {names}", cleared)
        elif (listed := _listed(value, parameters[name])) is None:
            refuse(f"no run here has {name} {value!r}; the values are: {', '.join(parameters[name])}", cleared)
        else:
            fixed[name] = listed
    return fixed


def _listed(value: str, values: list) -> str | None:
    """``value`` as the view lists it (``1e-06`` for ``0.000001``); None where no run of the view has it."""
    if value in values:
        return value
    number = number_in(value)
    for listed in values:
        if number is not None and number_in(listed) == number:
            return listed
    return None


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
