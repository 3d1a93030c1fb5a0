"""The family page's query arguments: which view, which runs within it, and the table's order.

Every argument is checked against what the family has; a value it does not have raises
:class:`BadFilter` with a message that lists what it does have. An absent argument takes
its default (``FAMILY_DEFAULTS``), or for the view the most telling value present.
"""

from .family_query import VIEW_FIELDS, Facets
from .pagination import BadPage, page_number
from .titles import by_length_then_name

FAMILY_CONTROLS = ("pass", "metric", "gpu", "implementation", "sort", "order", "page")
FAMILY_SORTS = {"x": "swept parameter", "median": "median", "implementation": "implementation",
                "observed": "observed"}
FAMILY_DEFAULTS = {"sort": "x", "order": "asc", "page": 1}  # what an absent control means; links leave these out
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


def table_order(args: dict) -> tuple[str, str, int]:
    """The table's sort column, direction and page."""
    sort = args.get("sort") or FAMILY_DEFAULTS["sort"]
    if sort not in FAMILY_SORTS:
        raise BadFilter(f"sort must be one of {', '.join(FAMILY_SORTS)}, not {sort!r}")
    order = args.get("order") or FAMILY_DEFAULTS["order"]
    if order not in ("asc", "desc"):
        raise BadFilter(f"order must be asc or desc, not {order!r}")
    try:
        return sort, order, page_number(args.get("page"))
    except BadPage as error:
        raise BadFilter(str(error)) from None


def chosen_implementation(title: str, view: dict, implementations: list, args: dict) -> str:
    implementation = args.get("implementation") or ""
    if implementation and implementation not in implementations:
        raise BadFilter(f"{title} has no {implementation!r} runs on {view['gpu']} ({view['pass']}, "
                        f"{view['metric']}); it has: " + ", ".join(implementations))
    return implementation


def fixed_parameters(parameters: dict, args: dict) -> dict:
    """The parameters the arguments fix (``heads=8``); any other argument name is refused."""
    fixed = {}
    for name, value in args.items():
        if name in FAMILY_CONTROLS or value in ("", None):
            continue
        if name not in parameters:
            raise BadFilter(f"unknown filter {name!r}: filters are {', '.join(FAMILY_CONTROLS)} and the fixed "
                            f"parameters {', '.join(by_length_then_name(parameters)) or '(none)'}")
        fixed[name] = value
    return fixed
