"""Bulk downloads: every current run as CSV or JSON Lines, streamed (``app.bulk``)."""

from flask import Blueprint, Response, stream_with_context

from .. import bulk

downloads = Blueprint("downloads", __name__)

FORMATS = {"csv": ("text/csv", bulk.csv_lines),  # Flask adds "; charset=utf-8" to text types
           "jsonl": ("application/jsonl; charset=utf-8", bulk.json_lines)}


def streamed(extension: str) -> Response:
    mimetype, lines = FORMATS[extension]
    return Response(stream_with_context(lines(bulk.current_rows())), mimetype=mimetype, headers={
        "Content-Disposition": f'attachment; filename="kernelindex-runs.{extension}"'})


@downloads.get("/downloads/runs.csv")
def runs_csv():
    return streamed("csv")


@downloads.get("/downloads/runs.jsonl")
def runs_jsonl():
    return streamed("jsonl")
