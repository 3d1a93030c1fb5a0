"""The home page: every family with its runs, GPUs and implementations; recent imports and reruns; sources;
the bulk downloads and the upstream commit ``make serve`` pins."""

import peewee

from flask import url_for

from .. import search, upstream
from ..models import KERNELINDEX_SOURCE, Run, SourceFile
from .links import family_url
from .provenance import source_file_row
from .run import history_row
from .titles import family_title, implementation_title, source_title

RECENT = 5  # imports and reruns listed


def family_rows() -> list:
    """One row per family with current runs, from the search vocabulary (no query of its own)."""
    families = {}
    for entry in search.vocabulary().entries:
        family = families.setdefault(entry.kernel, {"name": entry.kernel, "title": entry.title, "runs": 0,
                                                    "gpus": set(), "implementations": set()})
        family["runs"] += entry.count
        family["gpus"].add(entry.gpu)
        family["implementations"].add(entry.implementation)
    return [{**f, "gpus": sorted(f["gpus"]), "implementations": sorted(f["implementations"]),
             "implementation_titles": sorted(implementation_title(name) for name in f["implementations"]),
             "url": family_url(f["name"])} for f in sorted(families.values(), key=lambda f: f["title"].lower())]


def recent_imports() -> list:
    files = SourceFile.select().order_by(SourceFile.imported_at.desc(), SourceFile.id.desc()).limit(RECENT)
    return [source_file_row(f, source_title(f.source)) for f in files]


def recent_reruns() -> list:
    reruns = Run.select().where(Run.source == KERNELINDEX_SOURCE).order_by(Run.created_at.desc()).limit(RECENT)
    return [{**history_row(r), "title": f"{family_title(r.kernel_id)} · {implementation_title(r.implementation)} · {r.gpu}"}
            for r in reruns]


def sources() -> list:
    """Each source with its repository, license, files imported and runs created."""
    totals = (SourceFile.select(SourceFile.source, SourceFile.repository, SourceFile.license,
                                peewee.fn.COUNT(SourceFile.id).alias("files"),
                                peewee.fn.SUM(SourceFile.runs_created).alias("runs"))
              .group_by(SourceFile.source, SourceFile.repository, SourceFile.license))
    by_source = {row.source: {"source": row.source, "title": source_title(row.source), "repository": row.repository,
                              "license": row.license, "files": row.files, "runs": row.runs or 0} for row in totals}
    return list(by_source.values())


def home_page() -> dict:
    families = family_rows()
    return {
        "q": "",
        "families": families,
        "total_runs": sum(f["runs"] for f in families),
        "imports": recent_imports(),
        "reruns": recent_reruns(),
        "sources": sources(),
        "upstream": {"repository": upstream.REPOSITORY, "commit": upstream.PINNED_COMMIT,
                     "commit_short": upstream.PINNED_COMMIT[:12], "date": upstream.PINNED_DATE,
                     "commit_url": f"{upstream.REPOSITORY}/commit/{upstream.PINNED_COMMIT}"},
        "downloads": {"csv": url_for("downloads.runs_csv"), "jsonl": url_for("downloads.runs_jsonl")},
    }
