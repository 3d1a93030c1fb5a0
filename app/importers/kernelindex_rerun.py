"""Importer for KernelIndex rerun bundles: the results ``runners.rerun`` produces, as bundle lines.

``flask rerun`` (recording on this database), ``flask import kernelindex`` (bundle
files written by ``flask rerun --out``) and ``POST /api/v1/reruns`` (rerun hosts
with a token) all end here. Each result is validated, described as a run record
(its protocol, environment, implementation and correctness-policy documents) and
stored at evidence level ``kernelindex-rerun``, linked to the run it reproduces. A
measurement rerun on two or more hosts whose results agree becomes
``kernelindex-replicated``.
"""

import json
from dataclasses import dataclass, field
from datetime import timezone

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from runners.discovery import family_definitions
from runners.hardware import short_name
from runners.types import PASSES

from .. import comparison
from ..db import database
from ..locks import retried
from ..manifests import document_digest, make_document
from ..manifests.documents import environment_document, implementation_document, protocol_document
from ..models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, Run
from ..records import (Identity, Measurement, RecordSource, RunRecord, WorkloadPoint, family_title, prepare, slug,
                       workload_document_for)
from ..registry import store_runs

SOURCE = "kernelindex"
RERUNS = RecordSource(name=SOURCE, run_name_prefix="kernelindex", evidence=KERNELINDEX_RERUN,
                      external_id_prefix="kernelindex", title_suffix="KernelIndex rerun")
COMPARATOR = "relative_l2_vs_float64"
METRIC = "speed"


class RerunRejected(Exception):
    """A result (or bundle) that cannot be recorded; nothing from it was stored."""


class TimingSchema(Schema):
    unit = fields.String(required=True, validate=validate.Equal("ns"))
    median = fields.Float(required=True, validate=validate.Range(min=0, min_inclusive=False))
    p20 = fields.Float(required=True, validate=validate.Range(min=0))
    p80 = fields.Float(required=True, validate=validate.Range(min=0))
    samples = fields.List(fields.List(fields.Float()), required=True)
    trials = fields.Integer(required=True, validate=validate.Range(min=1))
    samplesPerTrial = fields.Integer(required=True, validate=validate.Range(min=1))
    cv = fields.Float(required=True)
    hostExposedSamples = fields.Integer(load_default=0, validate=validate.Range(min=0))
    hostInclusive = fields.Dict(allow_none=True)  # runners.timing: {median, p20, p80, samples}; absent before it
    hostSynchronization = fields.Dict(allow_none=True)  # {detected, detail}; None where not checked (CPU)


class WorkloadInputSchema(Schema):
    parameters = fields.Dict(required=True)
    dtype = fields.String(required=True)
    options = fields.Dict(load_default=dict)


class RerunResultSchema(Schema):
    """One implementation's result on one workload: a bundle line (``runners.types.RerunResult``)."""

    class Meta:
        unknown = INCLUDE

    rerunOf = fields.String(allow_none=True, load_default=None)
    family = fields.String(required=True, validate=validate.Length(min=1, max=120))
    pass_ = fields.String(data_key="pass", required=True, validate=validate.OneOf(PASSES))
    metric = fields.String(required=True, validate=validate.Equal(METRIC))
    implementation = fields.Dict(required=True)
    workload = fields.Nested(WorkloadInputSchema, required=True)
    status = fields.String(required=True, validate=validate.OneOf(("passed", "failed")))
    error = fields.String(allow_none=True, load_default=None)
    timing = fields.Nested(TimingSchema, allow_none=True, load_default=None)
    correctness = fields.Dict(required=True)
    environment = fields.Dict(required=True)
    protocol = fields.Dict(required=True)
    observedAt = fields.DateTime(required=True)
    cost = fields.Dict(load_default=dict)


result_schema = RerunResultSchema()


@dataclass
class RecordSummary:
    created: list = field(default_factory=list)
    unchanged: int = 0
    replicated: int = 0

    def line(self) -> str:
        return f"created {len(self.created)}, unchanged {self.unchanged}, replicated {self.replicated}"


def read_bundle(text: str) -> list[dict]:
    """The results of a JSON-lines bundle (one result per line; blank lines ignored)."""
    results = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            results.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise RerunRejected(f"line {number} is not JSON: {error.msg}") from error
    return results


def gpu_name(environment: dict) -> str:
    """The hardware a rerun ran on, named as harnesses name it (``NVIDIA H200``, or the CPU model)."""
    hw = environment.get("hardware") or {}
    return hw.get("name") or " ".join(part for part in (hw.get("product"), hw.get("formFactor")) if part) or "unknown"


def policy_document(correctness: dict) -> dict:
    policy = correctness.get("policy") or {}
    spec = {"policy": policy, "text": correctness.get("policyText", "")}
    return make_document("CorrectnessPolicy", spec, {"name": policy.get("name", "kernelindex-correctness"),
                                                     "title": "KernelIndex correctness policy"})


def rerun_documents(result: dict, gpu: str, host: str, point: WorkloadPoint, family, title: str) -> dict:
    """The protocol, workload, environment, implementation and correctness-policy documents of a result."""
    protocol_in, environment_in, implementation = result["protocol"], result["environment"], result["implementation"]
    return {
        "protocol": protocol_document(
            spec={"harness": protocol_in.get("harness") or {"name": "KernelIndex rerun harness"},
                  "measurement": {"timer": protocol_in.get("timer", "unknown"), "primaryStatistic": "median",
                                  "parameters": protocol_in},
                  "comparability": {"notes": protocol_in.get("notes", ""),
                                    "family": comparability_family(result)}},
            name=protocol_in.get("name", "kernelindex-rerun"),
            title=f"KernelIndex rerun protocol · {protocol_in.get('preset', protocol_in.get('name', 'custom'))}"),
        "workload": workload_document_for(point, family, title, COMPARATOR),
        "environment": environment_document(
            hardware=environment_in.get("hardware") or {}, software=environment_in.get("software") or {},
            extra={key: environment_in[key] for key in ("host", "target", "cpu") if key in environment_in},
            name=f"kernelindex-host-{slug(host)}-{slug(gpu)}"[:100],
            title=f"KernelIndex rerun host {host} · {short_name(gpu)}"),
        "implementation": implementation_document(
            name=implementation["name"], family=result["family"], project=implementation.get("project", "unknown"),
            revision=str(implementation.get("revision", "unknown")), details=implementation.get("details")),
        "correctnessPolicy": policy_document(result["correctness"]),
    }


def comparability_family(result: dict) -> str:
    return result["protocol"].get("comparabilityFamily", "kernelindex_rerun")


def rerun_sections(result: dict, policy: dict, rerun_of: Run | None, host: str) -> dict:
    """The run document's ``correctness`` (citing its policy by digest) and ``rerun`` sections."""
    timing = result["timing"] or {}
    correctness = {k: v for k, v in result["correctness"].items() if k not in ("policy", "policyText")}
    correctness["policyDigest"] = document_digest(policy)
    return {"correctness": correctness, "rerun": {
        "of": rerun_of.digest if rerun_of else None, "host": host,
        "trials": timing.get("trials", 0), "samplesPerTrial": timing.get("samplesPerTrial", 0),
        "cv": timing.get("cv"), "hostExposedSamples": timing.get("hostExposedSamples", 0),
        "cost": result["cost"], "error": result["error"]}}


def rerun_record(result: dict, families: dict, rerun_of: Run | None) -> RunRecord:
    """A validated result as a run record."""
    family_name, implementation = result["family"], result["implementation"]
    parameters, dtype, options = (result["workload"][key] for key in ("parameters", "dtype", "options"))
    environment, timing = result["environment"], result["timing"]
    family = families.get(family_name)
    title = family_title(family_name, family)
    gpu, host = gpu_name(environment), environment.get("host") or "unknown"
    point = WorkloadPoint(family=family_name, parameters=parameters, dtype=dtype, options=options,
                          x_name="seq" if "seq" in parameters else next(iter(parameters), ""),
                          x_value=parameters.get("seq", ""))
    timed = result["status"] == "passed" and timing
    median, p20, p80 = (timing["median"], timing["p20"], timing["p80"]) if timed else (None, None, None)
    measurement = Measurement(metric=result["metric"], unit="ns", median=median, p20=p20, p80=p80,
                              status=result["status"])
    documents = rerun_documents(result, gpu, host, point, family, title)
    return RunRecord(
        source=RERUNS, identity=Identity([family_name, implementation["name"], result["pass_"], result["metric"],
                                          point.key, gpu, host],
                                         result["observedAt"].astimezone(timezone.utc).replace(tzinfo=None)),
        kernel=family_name, family_title=title, implementation=implementation["name"],
        pass_=result["pass_"], gpu=gpu, gpu_product=(environment.get("hardware") or {}).get("product", gpu),
        workload=point, measurement=measurement, documents=documents,
        comparability_family=comparability_family(result),
        sections=rerun_sections(result, documents["correctnessPolicy"], rerun_of, host), host=host,
        rerun_of=rerun_of.id if rerun_of else None,
        details={"timing": timing, "correctness": result["correctness"], "cost": result["cost"],
                 "error": result["error"], "implementation": implementation})


def loaded_results(results: list[dict]) -> list[dict]:
    """Every result validated, or RerunRejected naming the first bad one."""
    loaded = []
    for number, result in enumerate(results, start=1):
        try:
            loaded.append(result_schema.load(result))
        except ValidationError as error:
            raise RerunRejected(f"result {number}: {json.dumps(error.messages, sort_keys=True)}") from error
    return loaded


@retried
def record_rerun_results(results: list[dict], families: dict | None = None) -> RecordSummary:
    """Validate every result (bundle lines, as documents), then store them all in one transaction."""
    families = family_definitions() if families is None else families
    loaded = loaded_results(results)
    summary = RecordSummary()
    with database.atomic():
        prepared = []
        for number, result in enumerate(loaded, start=1):
            rerun_of = None
            if result["rerunOf"]:
                rerun_of = Run.get_or_none(Run.id == result["rerunOf"])
                if rerun_of is None:
                    raise RerunRejected(f"result {number}: rerunOf {result['rerunOf']!r} is not a run here")
            prepared.append(prepare(rerun_record(result, families, rerun_of)))
        stored = store_runs(prepared)
        summary.created, summary.unchanged = stored.created, stored.unchanged
        summary.replicated = mark_replications({run.fields["workload_key"] for run in prepared})
    return summary


def mark_replications(workload_keys) -> int:
    """Current passed reruns of one measurement on two or more hosts that agree become ``kernelindex-replicated``."""
    changed = 0
    reruns = Run.current().where((Run.source == SOURCE) & Run.workload_key.in_(list(workload_keys))
                                 & (Run.status == "passed"))
    measurements = {}
    for run in reruns:
        measurements.setdefault((run.kernel_id, run.implementation, run.pass_, run.metric, run.workload_key,
                                 run.gpu), []).append(run)
    for runs in measurements.values():
        hosts = {run.host for run in runs}
        agree = len(hosts) > 1 and all(comparison.tied(runs[0], other) for other in runs[1:])
        level = KERNELINDEX_REPLICATED if agree else KERNELINDEX_RERUN
        for run in runs:
            if run.evidence != level:
                Run.update(evidence=level).where(Run.id == run.id).execute()
                changed += 1
    return changed
