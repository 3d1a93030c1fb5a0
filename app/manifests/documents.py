"""Builders for the five record kinds. Every document a run points to is built here.

Keys are inserted in the order the reference pages show them; the digest does not
depend on that order (RFC 8785 sorts keys).
"""

from . import document_digest, make_document, sha256_digest


def workload_key(family: str, parameters: dict, dtype: str | None, options: dict) -> str:
    """What makes two workloads the same, whatever derives from it and whoever asserts it."""
    return sha256_digest({"family": family, "parameters": parameters, "dtype": dtype, "options": options})


def workload_document(*, family: str, family_title: str, parameters: dict, dtype: str | None,
                      options: dict, tensors: list | None, comparator: str, slug: str) -> dict:
    spec = {"family": family, "parameters": parameters}
    if dtype:
        spec["dtype"] = dtype
    if options:
        spec["options"] = options
    if tensors:
        spec["tensors"] = tensors
    spec["definition"] = {"comparator": comparator}
    return make_document("Workload", spec, {"name": f"{family}-{slug}"[:100], "title": f"{family_title} · {slug}"})


def implementation_document(*, name: str, family: str, project: str, revision: str,
                            details: dict | None = None, math_mode: str | None = None) -> dict:
    """``math_mode`` (how it multiplies for the workload's dtype) is part of what is digested, where known."""
    spec = {"name": name, "family": family, "project": project, "revision": revision}
    if math_mode:
        spec["mathMode"] = math_mode
    if details:
        spec["details"] = details
    return make_document("Implementation", spec, {"name": f"{family}-{name}-{revision}", "title": f"{project} · {name}"})


def environment_document(*, hardware: dict, software: dict, name: str, title: str, extra: dict | None = None) -> dict:
    spec = {"hardware": hardware, "software": software, **(extra or {})}
    return make_document("ExecutionEnvironment", spec, {"name": name, "title": title})


def protocol_document(*, spec: dict, name: str, title: str) -> dict:
    return make_document("BenchmarkProtocol", spec, {"name": name, "title": title})


def run_document(*, status: str, primary: dict, observed_at: str, measurements: list, sections: dict,
                 digests: dict, name: str, title: str, labels: dict) -> dict:
    """A BenchmarkRun. ``primary`` is the ``timing`` (latency) or ``memory`` section; ``sections`` follow
    the measurements (``sourceNative``, or a rerun's ``correctness`` and ``rerun``); ``digests`` maps
    protocol/workload/environment/implementation to their digests."""
    spec = {"status": status, **primary, "observedAt": observed_at, "measurements": measurements, **sections}
    for kind in ("protocol", "workload", "environment", "implementation"):
        spec[f"{kind}Digest"] = digests[kind]
    metadata = {"name": name[:100], "title": title}
    if labels:
        metadata["labels"] = labels
    return make_document("BenchmarkRun", spec, metadata)


def digest_all(documents: dict) -> dict:
    """``{kind: digest}`` for a mapping of documents."""
    return {kind: document_digest(document) for kind, document in documents.items()}
