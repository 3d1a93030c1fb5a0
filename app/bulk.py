"""The whole index's current runs as one download: CSV or JSON Lines, streamed.

A download of a million runs must not hold a million rows anywhere. Rows are read in
chunks of about ``CHUNK`` by keyset pagination on ``measurement_key`` (``measurement_key >
last``, on its index), each chunk as plain tuples (no model instances), and written out by
a generator as they are read, so memory stays flat whatever the size of the index, on
SQLite and on PostgreSQL alike, and no read transaction stays open while a slow client
downloads. A measurement's whole history (the runs that supersede one another share its
key) is read by one statement, which sees exactly one of them current: an import during a
download gives each measurement once, old or new (paged on the id, a measurement whose new
run sorted before the page already read was lost, and one whose new run sorted after it was
listed twice). Superseded runs are skipped here rather than in SQL: with ``superseded_by IS
NULL`` in the query the planner may pick that index and sort every current run for every
chunk. Figures are the stored ones at full precision, in the stored unit the ``unit``
column names (latency in ns, memory in MB).
"""

import csv
import io
import json

from .formatting import utc_timestamp
from .models import Run
from .schemas import BulkRunSchema

CHUNK = 5000
FLUSH_BYTES = 64 * 1024  # CSV text handed to the server at a time
JSON_LINES_BATCH = 500  # JSON lines handed to the server at a time
# the columns, in order, as BulkRunSchema declares them (and the OpenAPI document describes them)
COLUMNS = tuple(field.data_key or name for name, field in BulkRunSchema._declared_fields.items())
FIELDS = tuple(getattr(Run, name) for name in BulkRunSchema._declared_fields)


def _histories(where, limit=None) -> list:
    """Runs as ``(*FIELDS, superseded_by, measurement_key)`` tuples, in measurement order."""
    query = Run.select(*FIELDS, Run.superseded_by, Run.measurement_key).where(where).order_by(Run.measurement_key)
    return list(query.limit(limit).tuples().iterator())


def current_rows(chunk: int = CHUNK):
    """Every current run as a dict of ``COLUMNS``, in measurement order, read about ``chunk`` runs at a time.

    A full chunk may end inside a measurement's history: those runs are left to the next statement, which reads
    them whole; a history longer than a chunk is read by a statement of its own.
    """
    last = ""
    while True:
        runs = _histories(Run.measurement_key > last, chunk)
        full = len(runs) == chunk
        if full:
            runs = ([run for run in runs if run[-1] != runs[-1][-1]]
                    or _histories(Run.measurement_key == runs[-1][-1]))
        for *values, superseded_by, _ in runs:
            if superseded_by is not None:
                continue
            row = dict(zip(COLUMNS, values))
            for name in ("observed_at", "invalidated_at"):
                row[name] = utc_timestamp(row[name])
            yield row
        if not full:
            return
        last = runs[-1][-1]


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
