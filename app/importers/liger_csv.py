"""Importer for Liger-Kernel's benchmark CSVs (``benchmark/data/all_benchmark_data*.csv``).

Each row is one observation published by Liger-Kernel's benchmark scripts: a
kernel, a provider (the implementation), a pass, a metric, one point of a sweep
(``x_name`` = ``x_value``) under a JSON configuration, on a GPU at a timestamp,
with the 50th/20th/80th percentiles of ``triton.testing.do_bench`` (or of peak
memory). It becomes a run at evidence level ``source-reported``.

Parameter names are normalized (``seq_len`` → ``seq`` ...) through the family
definition where KernelIndex knows the family (``runners.discovery``), which also
derives the workload's tensors; otherwise through a generic alias table, with
parameters only. A row's identity is kernel, provider, pass, metric, x name and
value, the *parsed* configuration, GPU and timestamp. Its measurement is the normalized
workload's (``RunRecord.measurement_key``): two rows of one workload, provider, pass, metric
and GPU are one measurement however their sweeps spell it, and the newest supersedes the
others, within one file as across history versions (two at the same second are one observation).
A row is refused, with its line, for whatever either database would refuse or store
differently (a control character, a cell longer than its column, a document name over
its limit, a configuration canonical JSON cannot hold), for a metric and unit other than the two Liger's
scripts write (speed in ms, stored in ns; memory in MB), for a figure that is not above 0 or not finite as
stored, and for a timestamp after the import. A file fails as a whole, saying why
and where, when it is not a Liger CSV, when the csv module cannot read a record (a
field over its 128 KiB limit), or when it has no row to import.
"""

import csv
import io
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runners import memory
from runners.hardware import describe_gpu, short_name

from ..db import database
from ..inputs import NotUtf8, utf8_text
from ..locks import retried
from ..manifests.documents import environment_document, implementation_document, protocol_document
from ..models import SOURCE_REPORTED, Run, SourceFile, utcnow
from ..records import (Identity, Measurement, RecordSource, RunRecord, WorkloadPoint, family_title, prepare, slug,
                       workload_document_for)
from ..registry import StoreSummary, chunks, store_runs, stored_figures
from ..rerun_schemas import EARLIEST_OBSERVATION, string_problem
from ..schemas import MAX_EXTERNAL_ID, document_errors
from ..upstream import REPOSITORY, commit_date
from . import ImportFailed, ImportSummary, RejectedRow, is_url, read_location, sha256_hex
from .liger_rows import (QUANTILES, RowRejected, check_cells, check_number, csv_records, figures_of, parse_number,
                         parsed_config)
from .rerun_submission import workload_problem
from .spellings import Spellings

SOURCE = "liger-kernel-bench"
LIGER = RecordSource(name=SOURCE, run_name_prefix="liger", evidence=SOURCE_REPORTED)
LICENSE = "BSD-2-Clause"
MAIN_FILE = "benchmark/data/all_benchmark_data.csv"
COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
           "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str",
           "gpu_name", "timestamp", "liger_version")
MAX_LIGER_CSV_BYTES = 16 * 1024 * 1024
"""The most a Liger import reads from one file or URL: upstream's largest CSV holds 0.65 MB, and an import holds about
15 KB of memory a row until it commits (a 256 MiB file would have wanted some 17 GB)."""
COMPARABILITY_FAMILY = "liger_kernel_bench"
STORED_UNITS = {("speed", "ms"): ("ns", 1e6), ("memory", "MB"): (memory.UNIT, 1.0)}
"""The metrics and units Liger's scripts write, each with the unit a run stores it in and the factor to it: the
pages and reproductions read a run's unit as ns or MB, so any other pair would be shown and compared wrongly."""

GENERIC_ALIASES = {
    "seq_len": "seq", "T": "seq", "batch_size": "batch", "bsz": "batch", "B": "batch", "num_heads": "heads",
    "hidden_size": "hidden", "H": "hidden", "vocab_size": "vocab", "V": "vocab",
    "intermediate_size": "intermediate",
}
DTYPES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64",
          "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
PROJECTS = {"torch": "PyTorch", "torch_compile": "PyTorch", "liger": "Liger-Kernel", "liger_triton": "Liger-Kernel",
            "liger_cutile": "Liger-Kernel", "liger_cutedsl": "Liger-Kernel", "huggingface": "Hugging Face Transformers"}
PASS_PHRASES = {"forward": "the module forward pass", "backward": "the backward pass",
                "full": "the forward and backward passes together", "no-grad-forward": "the forward pass under torch.no_grad"}


@dataclass
class CheckedRow:
    """A row that passed validation, with its parsed values and its identity (computed before the rest)."""

    row: dict
    config: dict
    figures: dict
    stored: tuple  # (unit, median, p20, p80) as a run stores them
    x_value: object
    identity: Identity


def protocol_for(pass_: str, metric: str, unit: str) -> dict:
    phrase = PASS_PHRASES.get(pass_, f"the {pass_} pass")
    upstream_gap = ("The upstream CSV records no CUDA, driver, or torch version; the Liger release rides each "
                    "run's labels. Comparable only within one kernel, workload, timed pass, and GPU.")
    if metric == "speed":
        measurement = {"timer": "cuda_events", "primaryStatistic": "median"}
        notes = (f"Timed: {phrase}, via triton.testing.do_bench with quantiles 0.5/0.2/0.8 "
                 f"(median with p20/p80 spread). {upstream_gap}")
        name, title = f"liger-bench-do-bench-{pass_}", f"Liger benchmark harness · {pass_} pass"
    else:
        measurement = {"probe": "torch.cuda.max_memory_allocated", "primaryStatistic": "median"}
        notes = (f"Measured: peak {metric} ({unit}) allocated during {phrase}, quantiles 0.5/0.2/0.8 over "
                 f"repetitions. {upstream_gap}")
        name, title = f"liger-bench-{metric}-{pass_}", f"Liger benchmark harness · {pass_} pass {metric}"
    spec = {"harness": {"name": "Liger-Kernel benchmark scripts", "repository": REPOSITORY},
            "measurement": measurement,
            "comparability": {"notes": notes, "family": COMPARABILITY_FAMILY}}
    return protocol_document(spec=spec, name=name, title=title)


class LigerCsvReader:
    """Turns CSV rows into run records; caches the documents many rows share."""

    def __init__(self, families: dict):
        self.families = families
        self.imported_at = utcnow()
        self._shared_documents = {}

    def _cached(self, key, build):
        """The shared document ``build`` makes, checked against its kind's schema once."""
        if key not in self._shared_documents:
            document = build()
            errors = document_errors(document)
            if errors:
                raise RowRejected(f"{document['kind']} document is not valid: {errors}")
            self._shared_documents[key] = document
        return self._shared_documents[key]

    def aliases(self, kernel: str) -> dict:
        family = self.families.get(kernel)
        return {**GENERIC_ALIASES, **(family.aliases if family else {})}

    def swept_parameter(self, row: dict) -> str:
        """The normalized name of the swept parameter (``seq`` for ``seq_len`` or ``L``)."""
        return self.aliases(row["kernel_name"]).get(row["x_name"], row["x_name"])

    def normalize(self, row: dict, config: dict, x_value):
        """Split a row's sweep point and configuration into parameters, dtype and options."""
        family = self.families.get(row["kernel_name"])
        aliases = self.aliases(row["kernel_name"])
        values, dtype = {}, None
        for name, value in [(row["x_name"], x_value), *config.items()]:
            if name == "dtype":
                dtype = DTYPES.get(str(value), str(value))
                if len(dtype) > Run.dtype.max_length:
                    raise RowRejected(f"dtype is longer than {Run.dtype.max_length} characters")
                continue
            normalized = aliases.get(name, name)
            if normalized not in values:
                values[normalized] = value
            elif value is None:
                continue  # a placeholder for the swept parameter (fused_moe writes "T": null)
            elif name not in values:
                values[name] = value  # two spellings of one quantity: keep the second under its own name
            else:
                raise RowRejected(f"parameter {name} is given twice")
        if family is None:
            return family, values, dtype, {}
        dtype = dtype or family.default_dtype
        if family.implied is not None:
            try:
                values = {**family.implied(values), **values}
            except (ArithmeticError, TypeError, ValueError) as error:  # the plugin's arithmetic on a null, a list ...
                raise RowRejected(f"{family.name} cannot derive its parameters from this row: {error}") from error
        missing = [name for name in family.parameters if name not in values and name not in family.defaults]
        if missing:
            raise RowRejected(f"{family.name} needs {', '.join(missing)} in its configuration")
        parameters = {name: values.get(name, family.defaults.get(name)) for name in family.parameters}
        options = {name: value for name, value in values.items() if name not in family.parameters}
        # as for reruns: a workload names only values its family measures, and its tensors can be made
        problem = workload_problem({"parameters": parameters, "options": options, "dtype": dtype or "fp32"}, family)
        if problem:
            raise RowRejected(problem)
        return family, parameters, dtype, options

    def check(self, row: dict) -> "CheckedRow":
        """Validate a row and compute its identity; cheap, so re-imports skip the rest."""
        missing = [column for column in COLUMNS if not (row.get(column) or "").strip() and column != "liger_version"]
        if missing:
            raise RowRejected(f"empty {', '.join(missing)}")
        check_cells(row)
        config = parsed_config(row["extra_benchmark_config_str"])
        figures = figures_of(row)
        observed = self.observed_at(row["timestamp"].strip())
        x_value = parse_number(row["x_value"].strip())
        check_number("x_value", x_value)
        # the config is compared as data, never as text
        measurement = [row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"],
                       row["metric_name"], row["x_name"], x_value, config, row["gpu_name"].strip()]
        return CheckedRow(row, config, figures, self.stored_figures(row, figures), x_value,
                          Identity(measurement, observed))

    def observed_at(self, text: str) -> datetime:
        """The row's timestamp (UTC), which cannot be later than this import nor earlier than 2000 (as a rerun's)."""
        try:
            observed = datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise RowRejected(f"timestamp is not YYYY-MM-DD HH:MM:SS: {text!r}") from None
        if observed > self.imported_at:
            raise RowRejected(f"timestamp {text} is after the import ({self.imported_at:%Y-%m-%d %H:%M:%S} UTC)")
        if observed < EARLIEST_OBSERVATION.replace(tzinfo=None):
            raise RowRejected(f"timestamp {text} is before {EARLIEST_OBSERVATION:%Y}, earlier than any GPU kernel "
                              "benchmark a result can be from")
        return observed

    def documents(self, row: dict, family, point: WorkloadPoint, title: str) -> dict:
        """The protocol, workload, environment and implementation documents, shared by many rows."""
        kernel, provider, pass_ = row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"]
        metric, unit, gpu = row["metric_name"], row["metric_unit"], row["gpu_name"].strip()
        version = row.get("liger_version") or ""
        revision = version if provider.startswith("liger") and version else "unknown"
        return {
            "protocol": self._cached(("protocol", pass_, metric, unit), lambda: protocol_for(pass_, metric, unit)),
            "workload": self._cached(("workload", point.key), lambda: workload_document_for(
                point, family, title, "not_asserted")),
            "environment": self._cached(("environment", gpu), lambda: environment_document(
                hardware=describe_gpu(gpu), software={}, name=f"liger-bench-{slug(gpu)}",
                title=f"Liger benchmark host · {short_name(gpu)}")),
            "implementation": self._cached(("implementation", kernel, provider, revision), lambda: (
                implementation_document(name=provider, family=kernel, project=PROJECTS.get(provider, provider),
                                        revision=revision))),
        }

    @staticmethod
    def stored_figures(row: dict, figures: dict) -> tuple:
        """``(unit, median, p20, p80)`` as a run stores them (:data:`STORED_UNITS`): latencies in whole ns, each
        above 0 (pages divide by them, and the rerun importer asks the same)."""
        metric, unit = row["metric_name"], row["metric_unit"]
        if (metric, unit) not in STORED_UNITS:
            raise RowRejected(f"metric_name and metric_unit are {metric!r} in {unit!r}; "
                              f"importable: {', '.join(f'{m} in {u}' for m, u in STORED_UNITS)}")
        unit, factor = STORED_UNITS[metric, unit]
        stored = [figures[quantile] * factor for quantile in QUANTILES]
        if unit == "ns":
            check_number("a latency in ns", max(stored))  # 1e308 ms is no finite number of ns
            stored = [round(value) for value in stored]
            check_number("a latency in ns", max(stored))
        for quantile, value in zip(QUANTILES, stored):
            if not value > 0:
                raise RowRejected(f"y_value_{quantile} is {value} {unit} as stored; figures must be above 0")
        return unit, *stored

    def record(self, checked: "CheckedRow") -> RunRecord:
        row = checked.row
        kernel, metric, gpu = row["kernel_name"], row["metric_name"], row["gpu_name"].strip()
        family, parameters, dtype, options = self.normalize(row, checked.config, checked.x_value)
        title = family_title(kernel, family)
        point = WorkloadPoint(family=kernel, parameters=parameters, dtype=dtype, options=options,
                              x_name=self.swept_parameter(row), x_value=checked.x_value,
                              defaults=dict(family.defaults) if family else {})
        unit, median, p20, p80 = checked.stored
        version = row.get("liger_version") or ""
        record = RunRecord(
            source=LIGER, identity=checked.identity, kernel=kernel, family_title=title,
            implementation=row["kernel_provider"], pass_=row["kernel_operation_mode"], gpu=gpu,
            gpu_product=describe_gpu(gpu)["product"], workload=point,
            measurement=Measurement(metric=metric, unit=unit, median=median, p20=p20, p80=p80),
            documents=self.documents(row, family, point, title),
            comparability_family=COMPARABILITY_FAMILY, labels={"liger_version": version} if version else {})
        if len(record.external_id) > MAX_EXTERNAL_ID:
            raise RowRejected(f"the external id is longer than {MAX_EXTERNAL_ID} characters")
        native_unit = re.sub(r"[^a-z0-9]+", "_", row["metric_unit"].lower())
        record.sections = {"sourceNative": {
            "source": SOURCE, "metrics": {f"{native_unit}_{q}": checked.figures[q] for q in ("20", "50", "80")},
            "benchmark": f"{kernel}/{row['kernel_operation_mode']}", "externalId": record.external_id}}
        return record


def parse_csv(data: bytes, reader: LigerCsvReader, progress=None):
    """Rows read, checked rows with their line numbers, and rejected rows; ImportFailed if not a Liger CSV."""
    try:
        text = utf8_text(data)
    except NotUtf8 as error:
        raise ImportFailed(str(error)) from error
    table = csv.reader(io.StringIO(text, newline=""))
    rows = csv_records(table)
    header = next(rows, None)
    if header is None:
        raise ImportFailed("the file is empty")
    header = [column.strip() for column in header]
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise ImportFailed(f"not a Liger-Kernel benchmark CSV: missing columns {', '.join(missing)}")
    twice = sorted({column for column in header if header.count(column) > 1})
    if twice:
        raise ImportFailed(f"the header names {', '.join(twice)} more than once")
    checked, rejected, read, last_line = [], [], 0, table.line_num
    figures_seen = {}  # identity key -> (figures, line): one observation given twice must agree
    for cells in rows:
        line, last_line = last_line + 1, table.line_num  # a row's first line: a quoted cell may hold line breaks
        if not any(cell.strip() for cell in cells):
            continue  # blank lines (upstream has a trailing one) are not rows
        read += 1
        if len(cells) != len(header):
            rejected.append(RejectedRow(line, f"expected {len(header)} fields, found {len(cells)}"))
            continue
        try:
            row = reader.check(dict(zip(header, cells)))
        except RowRejected as error:
            rejected.append(RejectedRow(line, str(error)))
            continue
        figures, first_line = figures_seen.setdefault(row.identity.identity_key, (row.figures, line))
        if figures != row.figures:
            rejected.append(RejectedRow(line, f"the observation of line {first_line} again, with other figures"))
            continue
        checked.append((line, row))
        if progress and read % 1000 == 0:
            progress(read)
    return read, checked, rejected


def same_figures(stored, read) -> bool:
    """Whether a row's figures are those stored for its observation (up to a float's last digits)."""
    return all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(stored, read))


def upstream_provenance(location: str, sha256: str) -> dict:
    """Upstream path and commit of a local file, from a SOURCE.md beside it (or one folder up) listing its sha256."""
    if is_url(location):
        return {}
    path = Path(location).resolve()
    for folder in (path.parent, path.parent.parent):
        source_md = folder / "SOURCE.md"
        if not source_md.is_file():
            continue
        for line in source_md.read_text(encoding="utf-8", errors="replace").splitlines():
            if sha256 in line and line.startswith("|"):
                commit = re.search(r"`([0-9a-f]{40})`", line)
                upstream = re.search(r"`(benchmark/[^`]+\.csv)`", line)
                return {"commit": commit.group(1) if commit else None,
                        "upstream_path": upstream.group(1) if upstream else MAIN_FILE}
    return {}


def spelled_as_stored(prepared: list, rejected: list) -> list:
    """The ``(line, run)`` pairs whose GPU and provider the index spells as they do (:mod:`.spellings`); each other
    row is refused with its line."""
    if not prepared:
        return prepared
    spellings, kept = Spellings(), []
    for line, run in prepared:
        if problem := spellings.problem(run.fields):
            rejected.append(RejectedRow(line, problem))
        else:
            kept.append((line, run))
    return kept


def one_run_per_observation(prepared: list, rejected: list) -> list:
    """The runs of ``(line, run)`` pairs, less the rows that observe at the same second what an earlier row or a
    stored run observes with its sweep spelled another way (hidden 8192 in the seq sweep, seq 2048 in the hidden
    one): with the same figures that is the same run (one digest), stored once; with others the row is refused
    with its line, as a row repeated with other figures is, rather than one of the two ranking by its id."""
    first_seen = {}  # (measurement key, observed at) -> (run digest, where)
    for keys in chunks({run.measurement_key for _, run in prepared}):
        query = (Run.select(Run.id, Run.measurement_key, Run.observed_at, Run.digest)
                 .where(Run.measurement_key.in_(keys)))
        for run_id, key, observed_at, digest in query.tuples():
            first_seen[key, observed_at] = (digest, f"run {run_id} holds")
    kept = []
    for line, run in prepared:
        here = f"of line {line}"
        digest, where = first_seen.setdefault((run.measurement_key, run.fields["observed_at"]),
                                              (run.digests["run"], here))
        if digest != run.digests["run"]:
            rejected.append(RejectedRow(line, f"the observation {where}, its sweep spelled another way, with other "
                                              "figures"))
        elif where == here:
            kept.append(run)
    return kept


@retried
def import_file(location: str, *, families: dict, commit: str | None = None, timeout: float = 60,
                progress=None) -> "ImportSummary":
    """Import one Liger CSV (path or URL) in one transaction; malformed rows are reported, not stored.

    A file with no row to import (only a header, or every row rejected) raises ImportFailed, so
    the command says so and exits non-zero; only a file that brought new runs is recorded.
    """
    if problem := string_problem(location):  # a lone surrogate: a file name that is not UTF-8
        raise ImportFailed(f"its name holds {problem}, which the record of its source cannot: rename it")
    data = read_location(location, timeout, MAX_LIGER_CSV_BYTES)
    reader = LigerCsvReader(families)
    read, checked, rejected = parse_csv(data, reader, progress)
    summary = ImportSummary(location=location, read=read, rejected=rejected)
    stored = stored_figures([row.identity.identity_key for _, row in checked])
    prepared, repeated = [], []
    for line, row in checked:
        if row.identity.identity_key in stored:
            run_id, *figures = stored[row.identity.identity_key]
            if same_figures(figures, row.stored[1:]):
                repeated.append(run_id)
            else:
                rejected.append(RejectedRow(line, f"the observation run {run_id} holds, with other figures (a run "
                                                  "is never overwritten)"))
            continue
        try:
            prepared.append((line, prepare(reader.record(row))))
        except RowRejected as error:
            rejected.append(RejectedRow(line, str(error)))
    prepared = one_run_per_observation(spelled_as_stored(prepared, rejected), rejected)
    rejected.sort(key=lambda r: r.line)
    if len(rejected) == read:
        raise ImportFailed("every row was rejected" if read else "the file has no rows, only a header", rejected)
    stored, summary.redated, summary.commit_note = store_file(prepared, repeated, location, data, read, commit)
    summary.created, summary.superseded = len(stored.created), stored.superseded
    summary.unchanged = read - len(rejected) - len(stored.created)
    return summary


def store_file(prepared: list, repeated: list, location: str, data: bytes, read: int,
               commit: str | None) -> tuple[StoreSummary, int, str]:
    """Store the prepared runs and the record of the file they came from, in one transaction, with the file's
    upstream commit (``commit``, else its SOURCE.md's); re-point to this file the ``repeated`` runs (ids of stored runs
    its rows repeat) that it published earlier than the file they name (:func:`published_earlier`). Also returns
    how many were re-pointed, and what became of the commit where the record did not take it as a new file's would
    (:func:`record_late_commit`), else ``""``. A file that brings no new run and publishes none earlier is not
    recorded, so a commit given for it is not either, and the note says so (one read from SOURCE.md goes unsaid:
    most history files repeat rows of the files before them)."""
    sha256 = sha256_hex(data)
    provenance = upstream_provenance(location, sha256)
    with database.atomic():
        source_file = SourceFile.get_or_none(SourceFile.sha256 == sha256, SourceFile.source == SOURCE)
        commit_note = ""
        if source_file is None:
            source_file = SourceFile(
                source=SOURCE, location=location, repository=REPOSITORY, license=LICENSE, sha256=sha256,
                bytes=len(data), rows_read=read, commit=commit or provenance.get("commit"),
                upstream_path=provenance.get("upstream_path"))
            earlier = published_earlier(source_file, repeated)
            if not prepared and not earlier:
                return StoreSummary(), 0, (f"commit {commit[:12]} not recorded: the file brought no new run and "
                                           "published none earlier (its rows are runs of files imported before, "
                                           "which keep their own)" if commit else "")
            source_file.save()
        else:
            if commit := commit or provenance.get("commit"):
                commit_note = record_late_commit(source_file, commit, provenance.get("upstream_path"))
                source_file = SourceFile.get_by_id(source_file.id)
            earlier = published_earlier(source_file, repeated)
        stored = store_runs(prepared, source_file=source_file) if prepared else StoreSummary()
        if stored.created:
            SourceFile.update(runs_created=SourceFile.runs_created + len(stored.created)).where(
                SourceFile.id == source_file.id).execute()
        for ids in chunks(earlier, 500):
            Run.update(source_file=source_file).where(Run.id.in_(ids)).execute()
    return stored, len(earlier), commit_note


def published_earlier(source_file: SourceFile, run_ids: list) -> list:
    """The runs among ``run_ids`` that ``source_file`` published before the file they name did (an upstream commit
    of an earlier day, or of a known day where theirs is unknown): a run names the earliest upstream file holding
    it, and its page dates it by that file's commit (``app.pages.provenance``), whichever order the history was
    imported in. Of two files of one day, the run keeps the one imported first."""
    date = commit_date(source_file)
    if not date or not run_ids:
        return []
    named = {}
    for ids in chunks(run_ids, 500):
        named.update(Run.select(Run.id, Run.source_file).where(Run.id.in_(ids)).tuples())
    dates = {file.id: commit_date(file) for file in SourceFile.select().where(SourceFile.id.in_(set(named.values())))}
    return sorted(run_id for run_id, file_id in named.items()
                  if file_id in dates and file_id != source_file.id and (dates[file_id] or "9999") > date)


def record_late_commit(source_file: SourceFile, commit: str, upstream_path: str | None) -> str:
    """Give the commit to a file recorded before without one (its runs' pages then date them by it), or say why not:
    a file keeps the commit it was recorded at, as the same bytes may be at many commits. ``""`` where the record
    holds this commit already, in full or abbreviated (``--commit`` takes 7 to 40 digits, SOURCE.md gives 40)."""
    if source_file.commit is None:
        SourceFile.update(commit=commit, upstream_path=source_file.upstream_path or upstream_path).where(
            SourceFile.id == source_file.id).execute()
        return f"commit {commit[:12]} recorded for the file, imported before without one"
    if source_file.commit.startswith(commit) or commit.startswith(source_file.commit):
        return ""
    return (f"commit {commit[:12]} not recorded: the file was recorded at commit {source_file.commit[:12]}, "
            "which it keeps")
