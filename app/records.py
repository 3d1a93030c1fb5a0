"""The run-record builder: every importer describes an observation as a ``RunRecord``, and
``prepare`` turns it into what ``app.registry.store_runs`` stores.

An importer knows its source (how to read a row or a result, which protocol and
environment it describes); everything a run record has whatever its source is made
here once: the identity and measurement keys, the external id and its workload slug,
the BenchmarkRun document with its latency or peak section and p20/p80 spread, the
``Run`` columns and the comparison group it ranks in. A new source is one module in
``app/importers/`` that fills a ``RunRecord``, plus its CLI verb.
"""

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from runners.types import FamilyDefinition

from .comparison import group_shared
from .manifests import document_digest
from .manifests.documents import digest_all, run_document, workload_document, workload_key
from .registry import PreparedRun


def key_digest(value) -> str:
    """The hex SHA-256 of parsed values (keys sorted): the one way identity and measurement keys are hashed."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def slug(text: str) -> str:
    """Lower-case, runs of anything but letters and digits become one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def family_title(name: str, family: FamilyDefinition | None) -> str:
    """The family's title, or one made from its name where KernelIndex does not know the family."""
    return family.title if family else name.replace("_", " ").capitalize()


def slug_value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return re.sub(r"[^A-Za-z0-9_.]+", "_", str(value))


@dataclass(frozen=True)
class RecordSource:
    """A source of runs: its name (``Run.source``), how its run documents are named, the evidence it gives."""

    name: str
    run_name_prefix: str  # liger-<external id slug>
    evidence: str
    external_id_prefix: str | None = None  # reruns' external ids start kernelindex/
    title_suffix: str | None = None  # "KernelIndex rerun" after the run title


@dataclass(frozen=True)
class Identity:
    """Which observation a record is: ``measurement`` names what was measured as the source spells
    it (whatever tells two of its observations apart), ``observed_at`` (naive UTC) when."""

    measurement: list
    observed_at: datetime

    @cached_property
    def identity_key(self) -> str:
        """What makes imports idempotent: the same observation is stored once."""
        return key_digest([key_digest(self.measurement), self.observed_at.isoformat()])


@dataclass(frozen=True)
class WorkloadPoint:
    """The normalized workload, and the swept parameter a family page charts it along."""

    family: str
    parameters: dict
    dtype: str | None
    options: dict
    x_name: str
    x_value: object
    defaults: dict = field(default_factory=dict)  # left out of the slug (groups=1, bias=True)

    @cached_property
    def key(self) -> str:
        return workload_key(self.family, self.parameters, self.dtype, self.options)

    @cached_property
    def slug(self) -> str:
        """``batch2-heads8-seq1024-fp32``: sorted name+value pairs other than defaults, then the dtype."""
        items = sorted((name, value) for name, value in {**self.parameters, **self.options}.items()
                       if self.defaults.get(name, object()) != value)
        pairs = [f"{name}{slug_value(value)}" for name, value in items]
        return "-".join(pairs + [self.dtype] if self.dtype else pairs)


@dataclass(frozen=True)
class Measurement:
    """The figures: median with its p20/p80 spread (all None when a failed run has no timing).

    Speed in ns is a latency (the ``timing`` section); anything else is a peak in the
    source's unit (memory in MB) under a section named after the metric.
    """

    metric: str
    unit: str
    median: float | None
    p20: float | None
    p80: float | None
    status: str = "passed"

    @property
    def is_latency(self) -> bool:
        return self.metric == "speed" and self.unit == "ns"

    def primary_section(self) -> dict:
        if self.median is None:
            return {}
        if self.is_latency:
            return {"timing": {"latencyNs": {"median": self.median}, "primaryStatistic": "median"}}
        return {self.metric: {"peak": {"unit": self.unit, "median": self.median}, "primaryStatistic": "median"}}

    def spread(self) -> list[dict]:
        if self.median is None:
            return []
        measured = "latency" if self.is_latency else self.metric
        return [{"unit": self.unit, "value": value, "metric": measured, "statistic": statistic}
                for statistic, value in (("p20", self.p20), ("p80", self.p80))]


@dataclass
class RunRecord:
    """One observation, as an importer read it, before it becomes documents and rows.

    ``documents`` holds the protocol, environment and implementation documents (and
    any document the run section cites, such as a correctness policy); the workload
    document and the run document are built here. ``sections`` are added to the run
    document's spec after its measurements (``sourceNative``, or a rerun's
    ``correctness`` and ``rerun``); ``rerun_of``, ``host``, ``details`` and ``received_at``
    (when the server got the result) only reruns have.
    """

    source: RecordSource
    identity: Identity
    kernel: str
    family_title: str
    implementation: str
    pass_: str
    gpu: str
    gpu_product: str
    workload: WorkloadPoint
    measurement: Measurement
    documents: dict
    comparability_family: str
    sections: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    host: str | None = None
    rerun_of: str | None = None
    details: dict | None = None
    received_at: datetime | None = None
    invalidation: dict | None = None
    """A rerun its harness found gamed: ``reason``, ``by`` and ``at`` (010_invalidated_results)."""

    @property
    def measurement_key(self) -> str:
        """Runs sharing it (and a comparison group) are one measurement's history, of which only the newest ranks.

        It names the normalized workload, never the source's spelling of it: Liger's hidden-size
        sweep at hidden 8192 (seq 2048) and its sequence sweep at seq 2048 (hidden 8192) are one
        measurement, so the later row supersedes the earlier even within one file, and no group
        lists one implementation twice. Reruns add their host (replication needs each host's own).
        """
        return key_digest([self.kernel, self.implementation, self.pass_, self.measurement.metric,
                           self.workload.key, self.gpu, self.host])

    @property
    def external_id(self) -> str:
        """``<kernel>/<pass>/<implementation>/<gpu-slug>/<workload slug>/<timestamp>[-<host>]``, unique per source:
        the timestamp is to the second, with its microseconds after it where it has any (a rerun's observedAt, which
        two reruns of one workload on one host may share to the second)."""
        observed = self.identity.observed_at
        stamp = (f"{observed:%Y-%m-%d-%H-%M-%S}" + (f"-{observed:%f}" if observed.microsecond else "")
                 + (f"-{slug(self.host)}" if self.host else ""))
        path = f"{self.kernel}/{self.pass_}/{self.implementation}/{slug(self.gpu)}/{self.workload.slug}/{stamp}"
        prefix = self.source.external_id_prefix
        return f"{prefix}/{path}" if prefix else path

    def run_columns(self) -> dict:
        """The ``Run`` columns copied out of the record (ids, digests, keys and rank are the store's)."""
        point, figures = self.workload, self.measurement
        return {
            "external_id": self.external_id, "source": self.source.name, "kernel": self.kernel,
            "implementation": self.implementation, "pass_": self.pass_, "metric": figures.metric,
            "unit": figures.unit, "gpu": self.gpu, "gpu_product": self.gpu_product, "x_name": point.x_name,
            "x_value": str(point.x_value),
            "x_number": point.x_value if isinstance(point.x_value, (int, float)) else None,
            "parameters": point.parameters, "dtype": point.dtype, "options": point.options,
            "median": figures.median, "p20": figures.p20, "p80": figures.p80, "status": figures.status,
            "evidence": self.source.evidence, "observed_at": self.identity.observed_at, "labels": self.labels,
            "workload_key": point.key, "rerun_of": self.rerun_of, "host": self.host, "details": self.details,
            "received_at": self.received_at,
            **{f"invalidated_{key}": (self.invalidation or {}).get(key) for key in ("reason", "by", "at")},
        }


def workload_document_for(point: WorkloadPoint, family: FamilyDefinition | None, family_title: str,
                          comparator: str) -> dict:
    """The Workload document, with the tensors the family definition derives where KernelIndex knows the family."""
    values = {**point.parameters, **point.options}
    tensors = [spec.as_document() for spec in family.tensors(values, point.dtype or "fp32")] if family else None
    return workload_document(family=point.family, family_title=family_title, parameters=point.parameters,
                             dtype=point.dtype, options=point.options, tensors=tensors, comparator=comparator,
                             slug=point.slug)


def prepare(record: RunRecord) -> PreparedRun:
    """The record's documents with their digests, its run document, its ``Run`` columns and comparison group."""
    documents = dict(record.documents)
    digests = digest_all(documents)
    observed = record.identity.observed_at
    title_parts = [record.family_title, record.implementation, record.pass_, record.source.title_suffix]
    documents["run"] = run_document(
        status=record.measurement.status, primary=record.measurement.primary_section(),
        observed_at=observed.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", measurements=record.measurement.spread(),
        sections=record.sections, digests=digests, labels=record.labels,
        name=f"{record.source.run_name_prefix}-{slug(record.external_id)}",
        title=" · ".join(part for part in title_parts if part))
    digests["run"] = document_digest(documents["run"])
    shared = group_shared(kernel=record.kernel, workload_key=record.workload.key, pass_=record.pass_,
                          metric=record.measurement.metric, gpu=record.gpu,
                          comparability_family=record.comparability_family, evidence=record.source.evidence)
    return PreparedRun(identity_key=record.identity.identity_key, measurement_key=record.measurement_key,
                       documents=documents, digests=digests, fields=record.run_columns(),
                       family_title=record.family_title, group_shared=shared)
