"""Context builders shared by the HTML pages and their JSON twins.

A view asks for one context here; the page template renders it and the JSON
twin dumps it through a schema. Nothing here builds manifests.
"""

from flask import abort, url_for

from . import comparison
from .models import Attestation, ComparisonGroup, Manifest, Run

DOCUMENT_KINDS = ("run", "protocol", "environment", "workload", "implementation")


def find_run(run_id: str) -> Run:
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        abort(404, description=f"no run with id {run_id!r}")
    return run


def find_group(key: str) -> ComparisonGroup:
    if not key.startswith("sha256:"):
        key = "sha256:" + key
    group = ComparisonGroup.get_or_none(ComparisonGroup.key == key)
    if group is None:
        abort(404, description=f"no comparison group with key {key!r}")
    return group


def filtered_runs(filters: dict):
    """Runs matching API/page filters (already validated), newest first."""
    query = Run.select(Run, ComparisonGroup.size).join(ComparisonGroup)
    for name, column in (("kernel", Run.kernel), ("implementation", Run.implementation), ("pass_", Run.pass_),
                         ("metric", Run.metric), ("evidence", Run.evidence), ("source", Run.source),
                         ("external_id", Run.external_id)):
        if filters.get(name):
            query = query.where(column == filters[name])
    if filters.get("gpu"):
        query = query.where((Run.gpu == filters["gpu"]) | (Run.gpu_product == filters["gpu"]))
    return query.order_by(Run.observed_at.desc(), Run.id)


def run_item(run: Run) -> dict:
    group_size = getattr(run, "size", None)
    if group_size is None:
        group_size = run.comparison_key.size
    return {**run.__data__, "kernel_id": run.kernel_id, "group_size": group_size,
            "url": url_for("api.run_detail", run_id=run.id, _external=True)}


def manifest_bundle(run: Run) -> dict:
    digests = {"run": run.digest, "protocol": run.protocol_digest, "environment": run.environment_digest,
               "workload": run.workload_digest, "implementation": run.implementation_digest}
    documents = {m.digest: m.document for m in Manifest.select().where(Manifest.digest.in_(list(digests.values())))}
    return {kind: documents[digests[kind]] for kind in DOCUMENT_KINDS}


def comparison_kind(run: Run) -> str:
    return "source-native comparison" if comparison.EVIDENCE_KIND[run.evidence] == comparison.SOURCE_NATIVE \
        else "KernelIndex rerun comparison"


def run_detail(run: Run, include_hidden=False) -> dict:
    group = run.comparison_key
    attestations = run.attestations.order_by(Attestation.created_at)
    if not include_hidden:
        attestations = attestations.where(Attestation.hidden == False)  # noqa: E712
    return {
        "id": run.id,
        "run": run,
        "group": group,
        "manifest": manifest_bundle(run),
        "evidence": run.evidence,
        "status": run.status,
        "comparison": {"key": group.key, "rank": run.rank, "size": group.size, "leader": group.leader,
                       "kind": comparison_kind(run)},
        "superseded_by": run.superseded_by_id,
        "supersedes": [r.id for r in run.supersedes.order_by(Run.observed_at.desc())],
        "rerun_of": run.rerun_of_id,
        "reruns": [r.id for r in run.reruns.order_by(Run.observed_at.desc())],
        "attestations": list(attestations),
        "links": {
            "self": url_for("api.run_detail", run_id=run.id, _external=True),
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
        "url": url_for("api.run_detail", run_id=member["run"].id, _external=True),
    } for member in described["members"]]
    return {"key": group.key, "shared": group.shared, "size": group.size, "leader": group.leader,
            "group": group, "members": members, "within_noise": [list(pair) for pair in described["noise_pairs"]]}
