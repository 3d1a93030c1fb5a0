"""Run pages: the record of one observation, its canonical manifest and its JSON twin."""

from flask import Blueprint, Response

from ..page_schemas import run_page_schema
from ..pages.lookup import run_or_404
from ..pages.manifest import manifest_page as manifest_context
from ..pages.manifest import manifest_text
from ..pages.run import run_page as run_context
from .render import FRAGMENT_CHOICE, install, respond, wants_json

runs = Blueprint("runs", __name__)
runs.record_once(install)


@runs.get("/runs/<run_id>")
def run_page(run_id):
    return respond("runs/run.html", run_context(run_or_404(run_id)), twin=run_page_schema.dump)


@runs.get("/runs/<run_id>.json")
def run_page_json(run_id):
    return run_page(run_id)


def manifest_file(run) -> Response:
    """The manifest's one byte form (document key order, two-space indent), as a download."""
    return Response(manifest_text(run.manifest_bundle()) + "\n", mimetype="application/json", headers={
        "Content-Disposition": f'attachment; filename="kernelindex-run-{run.id}-manifest.json"'})


@runs.get("/runs/<run_id>/manifest")
def manifest_page(run_id):
    run = run_or_404(run_id)
    if wants_json():  # the same bytes as manifest.json, not a re-serialised twin
        response = manifest_file(run)
        response.vary.update((*FRAGMENT_CHOICE, "Accept"))
        return response
    return respond("runs/manifest.html", manifest_context(run), fragment="partials/_manifest.html")


@runs.get("/runs/<run_id>/manifest.json")
def manifest_download(run_id):
    return manifest_file(run_or_404(run_id))
