"""The whole index's current runs as one download: CSV or JSON Lines, streamed.

A download of a million runs must not hold a million rows anywhere. Rows are read in
chunks of ``CHUNK`` by keyset pagination on the primary key (``id > last id``), each
chunk through peewee's ``.iterator()`` (no model instances, no result cache), and
written out by a generator as they are read, so memory stays flat whatever the size of
the index, on SQLite and on PostgreSQL alike, and no read transaction stays open
while a slow client downloads. Superseded runs are skipped here rather than in SQL: with
``superseded_by IS NULL`` in the query the planner picks that index and sorts every
current run for every chunk; on the primary key alone each chunk is one range read. Figures are the stored ones at full precision, in the
stored unit the ``unit`` column names (latency in ns, memory in MB).
"""

import csv
import io
import json
from datetime import datetime

from .models import Run
from .schemas import BulkRunSchema

CHUNK = 5000
FLUSH_BYTES = 64 * 1024  # CSV text handed to the server at a time
JSON_LINES_BATCH = 500  # JSON lines handed to the server at a time
# the columns, in order, as BulkRunSchema declares them (and the OpenAPI document describes them)
COLUMNS = tuple(field.data_key or name for name, field in BulkRunSchema._declared_fields.items())
FIELDS = tuple(getattr(Run, name) for name in BulkRunSchema._declared_fields)


def current_rows(chunk: int = CHUNK):
    """Every current run as a dict of ``COLUMNS``, in id order, read ``chunk`` rows at a time."""
    last = ""
    while True:
        query = Run.select(*FIELDS, Run.superseded_by).where(Run.id > last).order_by(Run.id).limit(chunk).tuples()
        count = 0
        for *values, superseded_by in query.iterator():
            count += 1
            last = values[0]
            if superseded_by is not None:
                continue
            row = dict(zip(COLUMNS, values))
            for name in ("observed_at", "invalidated_at"):
                if isinstance(row[name], datetime):
                    row[name] = row[name].isoformat() + "Z"
            yield row
        if count < chunk:
            return


def csv_lines(rows):
    """A header line, then one CSV line per row; ``parameters`` as compact JSON."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(json.dumps(value, separators=(",", ":")) if name == "parameters" else value
                        for name, value in row.items())
        if buffer.tell() > FLUSH_BYTES:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def json_lines(rows):
    """One JSON object per line."""
    batch = []
    for row in rows:
        batch.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        if len(batch) >= JSON_LINES_BATCH:
            yield "\n".join(batch) + "\n"
            batch = []
    if batch:
        yield "\n".join(batch) + "\n"
