"""The JSON API's documents (``/api/v1``): a page of runs, one run, one comparison group.

The run and comparison pages build on :func:`run_detail` and :func:`comparison_detail`,
so their twins carry the API's fields under the same names.
"""

from datetime import datetime

from flask import current_app, url_for

from .. import comparison
from ..models import ComparisonGroup, Run
from .links import run_api_url
from .pagination import Pagination
from .titles import comparison_kind


class BadQuery(ValueError):
    """A run-list query the API cannot answer; the view answers 400 with its message."""


def run_item(run: Run) -> dict:
    group_size = getattr(run, "size", None)
    if group_size is None:
        group_size = run.comparison_key.size
    return {**run.__data__, "kernel_id": run.kernel_id, "group_size": group_size, "invalidation": run.invalidation,
            "url": run_api_url(run.id)}


def run_list(filters: dict, args: dict) -> dict:
    """One page of the runs matching ``filters`` (loaded by ``run_filter_schema``) and the next page's URL.

    The page's ids are read first from the order's index, then their rows (with their group's size) by id: the
    database skips index entries, not whole rows, to reach a ``page``. ``next`` starts after the page's last run
    (``after``), so a client following it reads every page at the cost of the first."""
    per_page = filters.get("per_page", current_app.config["API_PAGE_SIZE"])
    if per_page > current_app.config["API_MAX_PAGE_SIZE"]:
        raise BadQuery(f"per_page: at most {current_app.config['API_MAX_PAGE_SIZE']}")
    matching = Run.matching(filters, Run.id)
    page = Pagination(filters["page"], per_page, Run.matching_count(filters))
    if filters.get("after"):  # one run more than the page says whether any follow it (``page`` only numbers it)
        runs = runs_of(Run.after(matching, *cursor_position(filters["after"])).limit(per_page + 1))
        has_next, runs = len(runs) > per_page, runs[:per_page]
    else:
        runs, has_next = runs_of(page.of(matching)), page.has_next
    next_url = (url_for("api.run_list", **{**args, "page": page.page + 1, "after": cursor(runs[-1])}, _external=True)
                if has_next else None)
    return {"items": [run_item(run) for run in runs], "total": page.total, "next": next_url}


def runs_of(ids) -> list:
    """The runs a query of ids selects, with their group's size, in the list's order."""
    return list(Run.select(Run, ComparisonGroup.size).join(ComparisonGroup).where(Run.id.in_(ids))
                .order_by(Run.observed_at.desc(), Run.id))


CURSOR_SEPARATOR = "~"


def cursor(run: Run) -> str:
    """Where a page of the run list ends: its last run's ``observed_at`` and id (``after`` of the next page)."""
    return f"{run.observed_at.isoformat()}{CURSOR_SEPARATOR}{run.id}"


def cursor_position(text: str) -> tuple:
    """The (observed_at, id) an ``after`` names; BadQuery for one ``next`` never gives, a time with an offset among
    them: observed_at is naive UTC, which SQLite compares as text and PostgreSQL would shift by its time zone."""
    observed, separator, run_id = text.partition(CURSOR_SEPARATOR)
    try:
        position = datetime.fromisoformat(observed)
        if not separator or not run_id or position.tzinfo is not None:
            raise ValueError
        return position, run_id
    except ValueError:
        raise BadQuery(f"after: {text[:40]!r} is not a position the run list's next link gives") from None


def run_detail(run: Run) -> dict:
    """The run's API document; ``linked_runs`` carries the runs behind its history ids, for the run page."""
    group = run.comparison_key
    linked = run.linked_runs()
    return {
        "id": run.id,
        "run": run,
        "group": group,
        "manifest": run.manifest_bundle(),
        "evidence": run.evidence,
        "status": run.status,
        "invalidation": run.invalidation,
        "invalidation_history": run.invalidation_history(),
        "comparison": {"key": group.key, "rank": run.rank, "size": group.size, "leader": group.leader,
                       "kind": comparison_kind(run.evidence)},
        "superseded_by": run.superseded_by_id,
        "supersedes": [r.id for r in linked["supersedes"]],
        "rerun_of": run.rerun_of_id,
        "reruns": [r.id for r in linked["reruns"]],
        "linked_runs": linked,
        "attestations": list(run.visible_attestations()),
        "links": {
            "self": run_api_url(run.id),
            "comparison": url_for("api.comparison_detail", key=group.key, _external=True),
        },
    }


def comparison_detail(group: ComparisonGroup) -> dict:
    described = comparison.describe_group(group)
    members = [{
        **member["run"].__data__,
        "rank": member["rank"],
        "ratio": member["ratio"],
        "within_noise_of_leader": member["within_noise_of_leader"],
        "tied_with_leader": member["tied_with_leader"],
        "url": run_api_url(member["run"].id),
    } for member in described["members"]]
    return {"key": group.key, "shared": group.shared, "size": group.size, "leader": group.leader,
            "group": group, "leader_run": described["leader"], "members": members,
            "within_noise": [list(pair) for pair in described["noise_pairs"]]}
