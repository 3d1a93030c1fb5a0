"""Storing prepared runs (``app.records.prepare``): the one path from an importer into the database.

``store_runs`` is idempotent (a run whose identity is already stored is counted
as unchanged), links superseded observations of the same measurement to the
newest one, and re-ranks every comparison group it touched. It runs in one
transaction, so a failure leaves the database as it was, and it first locks the
workload scopes it stores into (``app.locks``), so concurrent writers to one group
take turns; rows other scopes share (manifests, families) are inserted in key order
with ``ON CONFLICT DO NOTHING``, so two writers never fail or deadlock on them.
"""

from dataclasses import dataclass, field

from . import comparison
from .db import database
from .locks import lock_scopes, retried
from .models import ComparisonGroup, Family, Manifest, Run
from .schemas import document_errors

CHUNK = 200  # rows per INSERT, well under SQLite's variable limit


@dataclass
class PreparedRun:
    """A run ready to store: its five documents and the index fields copied from them."""

    identity_key: str
    measurement_key: str
    documents: dict  # run, protocol, environment, workload, implementation
    digests: dict  # each document's digest by kind, from the builder (canonicalizing is the costly part)
    fields: dict  # Run columns other than id, digests, keys and rank
    family_title: str
    group_shared: dict  # what the comparison group's members share (its key is this digest)


@dataclass
class StoreSummary:
    created: list = field(default_factory=list)  # Run ids
    unchanged: int = 0
    superseded: int = 0


def short_id(digest: str) -> str:
    """The run's id in URLs: the first 12 hex digits of its digest."""
    return digest.split(":", 1)[1][:12]


def chunks(items, size=CHUNK):
    """``items`` in lists of ``size``: a statement per list stays under the parameters one statement may bind
    (65,535 on PostgreSQL; 32,766 on SQLite as built by default)."""
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _existing(column, values) -> set:
    found = set()
    for chunk in chunks(values, 500):
        found.update(value for (value,) in column.model.select(column).where(column.in_(chunk)).tuples())
    return found


def stored_figures(keys) -> dict:
    """``identity key -> (run id, median, p20, p80)`` of those of these identity keys stored already."""
    found = {}
    for chunk in chunks(keys, 500):
        query = Run.select(Run.identity_key, Run.id, Run.median, Run.p20, Run.p80).where(Run.identity_key.in_(chunk))
        found.update((key, tuple(figures)) for key, *figures in query.tuples())
    return found


@retried
def store_runs(prepared: list[PreparedRun], source_file=None) -> StoreSummary:
    summary = StoreSummary()
    with database.atomic():
        lock_scopes(run.group_shared for run in prepared)
        unique = {}
        for run in prepared:
            unique.setdefault(run.identity_key, run)
        known = _existing(Run.identity_key, unique)
        new = [run for key, run in unique.items() if key not in known]
        summary.unchanged = len(prepared) - len(new)
        if not new:
            return summary

        _insert_missing_documents(new)
        _insert_missing(Family, {r.fields["kernel"]: {"name": r.fields["kernel"], "title": r.family_title} for r in new})
        groups = {}
        for run in new:
            run.fields["comparison_key"] = comparison.group_key(run.group_shared)
            groups[run.fields["comparison_key"]] = comparison.group_row(run.group_shared)
        _insert_missing(ComparisonGroup, groups)
        touched_groups = set(groups)

        rows = []
        for run in new:
            digest = run.digests["run"]
            rows.append({
                **run.fields,
                "id": short_id(digest),
                "digest": digest,
                "identity_key": run.identity_key,
                "measurement_key": run.measurement_key,
                "source_file": source_file,
                **{f"{kind}_digest": run.digests[kind]
                   for kind in ("protocol", "workload", "environment", "implementation")},
            })
        for chunk in chunks(rows):
            Run.insert_many(chunk).execute()
        summary.created = [row["id"] for row in rows]

        summary.superseded = _link_supersessions({run.measurement_key for run in new}, touched_groups)
        comparison.rerank(touched_groups)
    return summary


class InvalidDocument(Exception):
    """A built document does not match its kind's schema: a bug in a builder, so nothing is stored."""


def _insert_missing_documents(runs):
    documents = {}
    for run in runs:
        for kind, document in run.documents.items():
            documents.setdefault(run.digests[kind], document)
    present = _existing(Manifest.digest, documents)
    for digest, document in documents.items():
        errors = digest not in present and document_errors(document)
        if errors:
            raise InvalidDocument(f"{document['kind']} {digest}: {errors}")
    rows = [{"digest": digest, "kind": document["kind"], "document": document}
            for digest, document in sorted(documents.items()) if digest not in present]
    for chunk in chunks(rows):
        Manifest.insert_many(chunk).on_conflict_ignore().execute()


def _insert_missing(model, rows_by_key):
    """Insert the rows whose keys are not stored; one a concurrent writer has just stored is skipped."""
    present = _existing(model._meta.primary_key, rows_by_key)
    rows = [row for key, row in sorted(rows_by_key.items()) if key not in present]
    for chunk in chunks(rows):
        model.insert_many(chunk).on_conflict_ignore().execute()


def _link_supersessions(measurement_keys, touched_groups) -> int:
    """Point every older observation of a measurement at the newest in its comparison group; return how many were
    current and are now superseded (one pointed from an older newest to this one was already out of date).

    A host's smoke rerun is the same measurement as its standard rerun under a protocol that ranks apart: it never
    takes the standard one out of the ranking it cannot join.
    """
    changed = 0
    history = {}
    for chunk in chunks(measurement_keys, 500):
        query = (Run.select(Run.id, Run.measurement_key, Run.observed_at, Run.superseded_by, Run.comparison_key)
                 .where(Run.measurement_key.in_(chunk)))
        for run in query:
            history.setdefault((run.measurement_key, run.comparison_key_id), []).append(run)
    for runs in history.values():
        if len(runs) < 2:
            continue
        newest = max(runs, key=lambda run: (run.observed_at, run.id))
        for run in runs:
            target = None if run is newest else newest.id
            if run.superseded_by_id != target:
                Run.update(superseded_by=target).where(Run.id == run.id).execute()
                touched_groups.add(run.comparison_key_id)
                changed += target is not None and run.superseded_by_id is None
    return changed
