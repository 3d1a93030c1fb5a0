"""The run page: what was measured, how, on what, how sure we are and how it ranks.

Its context is the API's run detail (``app.pages.api.run_detail``) with the page's worded
figures and sections added; the history entries (``superseded_by``, ``supersedes``,
``rerun_of``, ``reruns``) replace the detail's bare ids with what the page shows of each run.
"""

from flask import get_flashed_messages, url_for

from .. import datasheet, formatting
from ..sample_plot import sample_plot
from ..models import Run
from . import community, provenance
from .api import run_detail
from .badge import markdown_snippet
from .citation import citation
from .links import comparison_url, family_url_of_run, run_url
from .implementation_details import implementation_details
from .protocol_rows import protocol_section
from .rerun_requests import run_requests_section
from .run_sections import (correctness_section, environment_rows, execution_lines, gpu_note, invalidation_notice,
                           measurement_rows, native_line, rank_line, split_quantity, spread_line, workload_section)
from .titles import evidence_title, family_ref, implementation_title, short_key, source_title, workload_summary

NO_LICENSE = "license not stated"
RUN_DIGEST_HEX = 23


def history_row(run: Run) -> dict:
    """A linked run as the page lists it; ``gpu_note`` is null here, and set only where a rerun is linked."""
    return {"id": run.id, "url": run_url(run.id), "observed": formatting.day(run.observed_at),
            "median": formatting.quantity(run.median, run.unit), "evidence": evidence_title(run.evidence),
            "host": run.host, "gpu": run.gpu, "gpu_note": None, "status": run.standing}


def history(run: Run, linked: dict) -> dict:
    """The other observations of this measurement, and the runs this one reruns or is rerun by (with their GPUs).

    ``linked`` is ``Run.linked_runs()``, as the run's API document read it.
    """
    superseded_by, rerun_of = linked["superseded_by"], linked["rerun_of"]
    return {
        "superseded_by": history_row(superseded_by) if superseded_by else None,
        "supersedes": [history_row(r) for r in linked["supersedes"]],
        "rerun_of": {**history_row(rerun_of), "gpu_note": gpu_note(run, rerun_of, "that run")} if rerun_of else None,
        "reruns": [{**history_row(r), "gpu_note": gpu_note(r, run, "this run")} for r in linked["reruns"]],
    }


def identity(run: Run, implementation: dict, source: str) -> dict:
    group_key = run.comparison_key_id
    return {
        "implementation": implementation_title(implementation.get("name", run.implementation)),
        "implementation_name": run.implementation,
        "project": implementation.get("project", ""),
        "revision": implementation.get("revision", "unknown"),
        **{f"implementation_{name}": value
           for name, value in implementation_details(implementation.get("details") or {}).items()},
        "workload": workload_summary(run.parameters, run.dtype),
        "comparison_key": group_key,
        "comparison_key_short": short_key(group_key),
        "source": source,
        "external_id": run.external_id,
        "digest": run.digest,
        "digest_short": formatting.short_digest(run.digest, RUN_DIGEST_HEX),
    }


def leader_url(run: Run, group) -> str | None:
    """Where "Compare with #1 →" goes: the leader's row on the comparison page, for runs not ranked first."""
    if run.rank is not None and run.rank > 1 and group.leader:
        return comparison_url(group.key, _anchor=f"run-{group.leader}", **{"from": run.id})
    return None


def samples_of(run: Run) -> dict | None:
    """The raw-sample picture of a rerun that recorded its samples (source rows have none)."""
    timing = (run.details or {}).get("timing") or {}
    if run.median is None or not timing.get("samples"):
        return None
    return sample_plot(timing["samples"], median=run.median, p20=run.p20 if run.p20 is not None else run.median,
                       p80=run.p80 if run.p80 is not None else run.median, unit=run.unit)


def run_page(run: Run) -> dict:
    """Everything the run page shows, in the order it shows it (see the reference run page)."""
    detail = run_detail(run)
    group, manifest, linked = detail["group"], detail["manifest"], detail["linked_runs"]
    spec = manifest["run"]["spec"]
    family = family_ref(run.kernel)
    source_file = run.source_file
    published = provenance.published(run, source_file)
    source = source_title(run.source)
    notices = dict(get_flashed_messages(with_categories=True))  # a post's, sent without JavaScript (views.community)
    issue_section = community.report_issue_section(run, {"notice": notices.get(community.REPORT_TARGET)})
    samples = samples_of(run)
    return {
        **detail,
        **history(run, linked),
        "family": family,
        "family_url": family_url_of_run(run),
        "title": f"Run {run.id}",
        "headline": f"{family.title} · {implementation_title(run.implementation)} · {run.pass_} · {run.gpu}",
        "evidence_title": evidence_title(run.evidence),
        "primary": {**split_quantity(run.median, run.unit), "statistic": "median"},
        "rank_line": rank_line(run),
        "invalidation_notice": invalidation_notice(run),
        "leader_url": leader_url(run, group),
        "comparison_url": comparison_url(group.key, **{"from": run.id}),
        "spread_line": spread_line(run, spec),
        "native_line": native_line(spec),
        "execution": execution_lines(run),
        "identity": identity(run, manifest["implementation"]["spec"], source),
        "correctness": correctness_section(run, spec),
        "workload": workload_section(manifest["workload"]["spec"], run.external_id),
        "measurements": measurement_rows(run, spec),
        "throughput": datasheet.achieved(run),
        "samples": samples,
        "samples_label": samples["label"] if samples else None,  # the twin says null where no plot is drawn
        "protocol": protocol_section(manifest["protocol"]["spec"]),
        "environment": environment_rows(manifest["environment"]["spec"]),
        "artifacts": spec.get("artifacts") or [],
        "error": (run.details or {}).get("error"),
        "attestation_section": community.attestation_section(
            run, {"notice": notices.get(community.ATTESTATIONS_TARGET)}, attestations=detail["attestations"]),
        "rerun_section": run_requests_section(run),
        "issue_section": issue_section,
        "issue_count": issue_section["count"],
        "manifest_url": url_for("runs.manifest_page", run_id=run.id),
        "manifest_download_url": url_for("runs.manifest_download", run_id=run.id),
        "json_url": url_for("runs.run_page_json", run_id=run.id),
        "citation": citation(run, family, published, source),
        "badge": {"url": url_for("badges.run_badge", run_id=run.id),
                  "markdown": markdown_snippet(run, linked["reruns"])},
        "footer": {"published": published, "source": source,
                   "license": (source_file.license if source_file and source_file.license else NO_LICENSE)},
    }
