"""A run's canonical manifest: the page that shows it and the file that downloads it."""

import json

from flask import url_for

from ..models import Run
from .links import run_url


def manifest_text(manifest: dict) -> str:
    """The canonical documents as people read them: two-space indent, keys in document order."""
    return json.dumps(manifest, indent=2, ensure_ascii=False)


def manifest_page(run: Run) -> dict:
    """``manifest`` is the twin; ``manifest_text`` is how the page and the download show it."""
    manifest = run.manifest_bundle()
    return {"run": run, "title": f"Manifest of run {run.id}", "manifest": manifest,
            "manifest_text": manifest_text(manifest),
            "manifest_download_url": url_for("runs.manifest_download", run_id=run.id), "run_url": run_url(run.id)}
