"""Run pages: the record of one observation, its canonical manifest and its JSON twin."""

import json

from flask import Blueprint, Response, url_for

from .. import contexts
from ..page_schemas import run_page_schema
from .render import install, respond

runs = Blueprint("runs", __name__)
runs.record_once(install)


def run_twin(context: dict) -> dict:
    workload = context["workload"]
    return run_page_schema.dump({
        **context["detail"], **context,
        "workload_parameters": workload["parameters"] + workload["options"] + (
            [("dtype", workload["dtype"])] if workload["dtype"] else []),
        "tensors": workload["tensors"], "comparator": workload["comparator"],
        "history": {"superseded_by": context["superseded_by"], "supersedes": context["supersedes"],
                    "rerun_of": context["rerun_of"], "reruns": context["reruns"]},
    })


@runs.get("/runs/<run_id>")
def run_page(run_id):
    return respond("runs/run.html", contexts.run_page(contexts.find_run(run_id)), twin=run_twin)


@runs.get("/runs/<run_id>.json")
def run_page_json(run_id):
    return run_page(run_id)


def manifest_text(run) -> str:
    """The canonical documents as people read them: two-space indent, keys in document order."""
    return json.dumps(contexts.manifest_bundle(run), indent=2, ensure_ascii=False)


@runs.get("/runs/<run_id>/manifest")
def manifest_page(run_id):
    run = contexts.find_run(run_id)
    context = {"run": run, "title": f"Manifest of run {run.id}", "manifest_text": manifest_text(run),
               "manifest_download_url": url_for("runs.manifest_download", run_id=run.id),
               "run_url": contexts.run_url(run.id)}
    return respond("runs/manifest.html", context, fragment="partials/_manifest.html",
                   twin=lambda _: contexts.manifest_bundle(run))


@runs.get("/runs/<run_id>/manifest.json")
def manifest_download(run_id):
    run = contexts.find_run(run_id)
    return Response(manifest_text(run) + "\n", mimetype="application/json", headers={
        "Content-Disposition": f'attachment; filename="kernelindex-run-{run.id}-manifest.json"'})
