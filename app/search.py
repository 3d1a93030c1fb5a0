"""Search over runs: by kernel, implementation, GPU, external id, run id or digest.

Words are matched against a small *vocabulary*: every (kernel, implementation,
GPU) that has current runs, with its family title and run count. It is computed
with one grouped query over an index and kept per application for
``VOCABULARY_SECONDS`` or until a newer run is stored, whichever comes first, so
a search costs a lookup in memory plus one indexed query for the page of runs
(newest first, ties by id).
Every word must match (case-insensitively, as a substring) the kernel, its title,
the implementation or the GPU of a run. A query with a ``/`` is also read as the
start of an external id; a 12-digit hex string or a ``sha256:`` digest as a run.
"""

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

import peewee
from flask import current_app

from .db import is_postgres
from .models import ComparisonGroup, Family, Run
from .pages.titles import family_title

VOCABULARY_SECONDS = 3600
MAX_QUERY = 200
FEW_COMBINATIONS = 40  # up to this many, fetch each combination's newest runs by index; else scan by date
RUN_ID = re.compile(r"^[0-9a-f]{12}$")


@dataclass(frozen=True)
class Entry:
    kernel: str
    title: str
    implementation: str
    gpu: str
    count: int
    haystack: str


@dataclass(frozen=True)
class Vocabulary:
    entries: tuple
    stamp: object
    made: float


def _newest_stamp():
    return Run.select(peewee.fn.MAX(Run.created_at)).scalar()


def _build(stamp) -> Vocabulary:
    titles = {name: family_title(name, stored) for name, stored in Family.select(Family.name, Family.title).tuples()}
    # Counting current runs with a CASE rather than a WHERE lets the database read the covering
    # index (kernel, implementation, gpu, superseded_by, ...) in order: 5x faster at a million runs.
    current = peewee.fn.SUM(peewee.Case(None, [(Run.superseded_by.is_null(), 1)], 0))
    rows = (Run.select(Run.kernel, Run.implementation, Run.gpu, current)
            .group_by(Run.kernel, Run.implementation, Run.gpu).tuples())
    entries = tuple(Entry(kernel, titles.get(kernel, kernel), implementation, gpu, count,
                          " ".join((kernel, titles.get(kernel, kernel), implementation, gpu)).lower())
                    for kernel, implementation, gpu, count in rows if count)
    return Vocabulary(entries, stamp, time.monotonic())


def vocabulary() -> Vocabulary:
    """The current vocabulary, rebuilt when a run was stored since or it is older than VOCABULARY_SECONDS."""
    cache = current_app.extensions.setdefault("kernelindex_search", {})
    known = cache.get("vocabulary")
    stamp = _newest_stamp()
    if known is None or known.stamp != stamp or time.monotonic() - known.made > VOCABULARY_SECONDS:
        known = cache["vocabulary"] = _build(stamp)
    return known


def matching_entries(words) -> list:
    words = [word.lower() for word in words]
    return [entry for entry in vocabulary().entries if all(word in entry.haystack for word in words)]


NEWEST_FIRST = (Run.observed_at.desc(), Run.id.desc())
"""The order of search results: newest observation first, ties by id, the same on every path and database."""


def _newest_of_each(entries, count: int) -> peewee.Select:
    """``(id, observed_at)`` of each combination's ``count`` newest current runs, each read by index.

    PostgreSQL takes the combinations as a ``VALUES`` list joined laterally to one indexed query, planned
    once; SQLite, which has no lateral join and plans cheaply, a ``UNION ALL`` of one such query per
    combination (PostgreSQL spent 4 ms planning the union of 36)."""
    if is_postgres():
        combination = peewee.ValuesList([(e.kernel, e.implementation, e.gpu) for e in entries],
                                        columns=("kernel", "implementation", "gpu"), alias="combination")
        newest = (Run.current(Run.id, Run.observed_at)
                  .where((Run.kernel == combination.c.kernel) & (Run.implementation == combination.c.implementation)
                         & (Run.gpu == combination.c.gpu))
                  .order_by(*NEWEST_FIRST).limit(count).alias("newest"))
        return (peewee.Select([combination], [newest.c.id, newest.c.observed_at])
                .join(newest, peewee.JOIN.LATERAL, on=peewee.SQL("TRUE")))
    branches = [Run.current(Run.id, Run.observed_at)
                .where((Run.kernel == e.kernel) & (Run.implementation == e.implementation) & (Run.gpu == e.gpu))
                .order_by(*NEWEST_FIRST).limit(count) for e in entries]
    return reduce(lambda first, second: first.union_all(second), branches)


def _with_group(runs: peewee.ModelSelect) -> peewee.ModelSelect:
    """``runs`` read with their comparison group's size (``run.comparison_key.size``, no query apiece): a listed run
    carries the API's run fields, ``group_size`` among them."""
    return runs.select_extend(ComparisonGroup.size).join(ComparisonGroup)


def _newest_runs(entries, offset: int, limit: int) -> list:
    """The page of current runs of these combinations, newest first."""
    if not entries:
        return []
    if len(entries) <= FEW_COMBINATIONS:
        # Each combination's newest runs by index, merged by the database, and only the page's rows read whole.
        page = (_newest_of_each(entries, offset + limit)
                .order_by(peewee.SQL("observed_at").desc(), peewee.SQL("id").desc()).offset(offset).limit(limit)
                .alias("page"))
        return list(_with_group(Run.select()).where(Run.id.in_(peewee.Select([page], [page.c.id])))
                    .order_by(*NEWEST_FIRST))
    # The page's ids from one index walk (017_current_runs_newest_first), then only its rows read whole. Joined, not
    # IN (page): peewee writes an IN's subquery twice (once to see whether it is empty), here with every combination.
    combinations = [(e.kernel, e.implementation, e.gpu) for e in entries]
    page = (Run.current(Run.id).where(peewee.Tuple(Run.kernel, Run.implementation, Run.gpu).in_(combinations))
            .order_by(*NEWEST_FIRST).offset(offset).limit(limit).alias("page"))
    return list(_with_group(Run.select()).join_from(Run, page, on=(Run.id == page.c.id)).order_by(*NEWEST_FIRST))


@dataclass(frozen=True)
class Matches:
    """What a query matches: families and GPUs with their run counts, the total, and pages of runs."""

    families: list  # (name, title, runs), most runs first
    gpus: list  # (gpu, runs), most runs first
    total: int
    runs: Callable[[int, int], list]  # (offset, limit) -> runs, in the order the pages list them


NOTHING = Matches([], [], 0, lambda offset, limit: [])


def _exact_run(lowered: str):
    """The run a 12-digit id or a ``sha256:`` digest names, if any."""
    if RUN_ID.match(lowered):
        return _with_group(Run.select()).where(Run.id == lowered).first()
    if lowered.startswith("sha256:"):
        return _with_group(Run.select()).where(Run.digest == lowered).first()
    return None


def _external_id_prefix(query: str) -> Matches:
    prefix = (Run.external_id >= query) & (Run.external_id < query + "\U0010ffff")
    return Matches([], [], Run.select().where(prefix).count(),
                   lambda offset, limit: list(_with_group(Run.select()).where(prefix).order_by(Run.external_id)
                                              .offset(offset).limit(limit)))


def search(query: str) -> Matches:
    """Families and runs matching ``query`` (see the module's docstring)."""
    query = query.strip()[:MAX_QUERY]
    if not query:
        return NOTHING
    exact = _exact_run(query.lower())
    if exact is not None:
        return Matches([], [], 1, lambda offset, limit: [exact][offset:offset + limit])
    if "/" in query:
        return _external_id_prefix(query)
    entries = matching_entries(query.split())
    families, gpus = {}, {}
    for entry in entries:
        families.setdefault(entry.kernel, [entry.title, 0])[1] += entry.count
        gpus[entry.gpu] = gpus.get(entry.gpu, 0) + entry.count
    return Matches(sorted(((name, title, count) for name, (title, count) in families.items()), key=lambda f: -f[2]),
                   sorted(gpus.items(), key=lambda item: -item[1]), sum(entry.count for entry in entries),
                   lambda offset, limit: _newest_runs(entries, offset, limit))
