"""Recording KernelIndex reruns: result documents from ``runners`` become runs.

``flask rerun`` (on the database directly), ``flask import kernelindex`` (bundle
files) and ``POST /api/v1/reruns`` (rerun hosts with a token) all end here.
Each result is validated, turned into the five record documents plus its
correctness policy, and stored through ``app.registry`` at evidence level
``kernelindex-rerun``, linked to the run it reproduces. A measurement rerun on
two or more hosts whose results agree becomes ``kernelindex-replicated``.
"""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import timezone

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from . import comparison, hardware
from .db import database
from .manifests import document_digest, make_document
from .manifests.documents import (digest_all, environment_document, implementation_document, protocol_document,
                                  run_document, workload_document, workload_key)
from .models import Manifest, Run
from .registry import PreparedRun, store_runs

SOURCE = "kernelindex"
COMPARATOR = "relative_l2_vs_float64"


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
    """One implementation's result on one workload, as ``runners.rerun`` reports it."""

    class Meta:
        unknown = INCLUDE

    rerunOf = fields.String(allow_none=True, load_default=None)
    family = fields.String(required=True, validate=validate.Length(min=1, max=120))
    pass_ = fields.String(data_key="pass", required=True, validate=validate.OneOf(("forward", "backward", "full")))
    metric = fields.String(required=True, validate=validate.Equal("speed"))
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


def slug_parameters(parameters: dict, options: dict, dtype: str) -> str:
    items = sorted({**parameters, **options}.items())
    return "-".join([f"{name}{str(value).lower() if isinstance(value, bool) else value}" for name, value in items]
                    + [dtype])


def policy_document(correctness: dict) -> dict:
    policy = correctness.get("policy") or {}
    spec = {"policy": policy, "text": correctness.get("policyText", "")}
    return make_document("CorrectnessPolicy", spec, {"name": policy.get("name", "kernelindex-correctness"),
                                                     "title": "KernelIndex correctness policy"})


def prepare(result: dict, families: dict, rerun_of: Run | None) -> tuple[PreparedRun, dict]:
    family_name, pass_, implementation = result["family"], result["pass_"], result["implementation"]
    workload_in, environment_in, protocol_in = result["workload"], result["environment"], result["protocol"]
    parameters, dtype, options = workload_in["parameters"], workload_in["dtype"], workload_in["options"]
    family = families.get(family_name)
    family_title = family.title if family else family_name.replace("_", " ").capitalize()
    gpu = gpu_name(environment_in)
    host = environment_in.get("host") or "unknown"
    observed = result["observedAt"].astimezone(timezone.utc).replace(tzinfo=None)
    slug = slug_parameters(parameters, options, dtype)

    policy = policy_document(result["correctness"])
    key = workload_key(family_name, parameters, dtype, options)
    comparability_family = protocol_in.get("comparabilityFamily", "kernelindex_rerun")
    documents = {
        "protocol": protocol_document(
            spec={"harness": protocol_in.get("harness") or {"name": "KernelIndex rerun harness"},
                  "measurement": {"timer": protocol_in.get("timer", "unknown"), "primaryStatistic": "median",
                                  "parameters": protocol_in},
                  "comparability": {"notes": protocol_in.get("notes", ""), "family": comparability_family}},
            name=protocol_in.get("name", "kernelindex-rerun"),
            title=f"KernelIndex rerun protocol · {protocol_in.get('preset', protocol_in.get('name', 'custom'))}"),
        "workload": workload_document(
            family=family_name, family_title=family_title, parameters=parameters, dtype=dtype, options=options,
            tensors=[t.as_document() for t in family.tensors({**parameters, **options}, dtype)] if family else None,
            comparator=COMPARATOR, slug=slug),
        "environment": environment_document(
            hardware=environment_in.get("hardware") or {}, software=environment_in.get("software") or {},
            extra={key_: environment_in[key_] for key_ in ("host", "target", "cpu") if key_ in environment_in},
            name=f"kernelindex-host-{hardware.slug(host)}-{hardware.slug(gpu)}"[:100],
            title=f"KernelIndex rerun host {host} · {hardware.short_name(gpu)}"),
        "implementation": implementation_document(
            name=implementation["name"], family=family_name, project=implementation.get("project", "unknown"),
            revision=str(implementation.get("revision", "unknown")), details=implementation.get("details")),
    }
    timing = result["timing"]
    correctness = {k: v for k, v in result["correctness"].items() if k not in ("policy", "policyText")}
    correctness["policyDigest"] = document_digest(policy)
    if result["status"] == "passed" and timing:
        median, p20, p80 = timing["median"], timing["p20"], timing["p80"]
        primary = {"timing": {"latencyNs": {"median": median}, "primaryStatistic": "median"}}
        measurements = [{"unit": "ns", "value": value, "metric": "latency", "statistic": statistic}
                        for statistic, value in (("p20", p20), ("p80", p80))]
    else:
        median = p20 = p80 = None
        primary, measurements = {}, []
    extra = {"correctness": correctness, "rerun": {
        "of": rerun_of.digest if rerun_of else None, "host": host,
        "trials": timing["trials"] if timing else 0, "samplesPerTrial": timing["samplesPerTrial"] if timing else 0,
        "cv": timing["cv"] if timing else None,
        "hostExposedSamples": timing["hostExposedSamples"] if timing else 0,
        "cost": result["cost"], "error": result["error"]}}
    timestamp = observed.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    external_id = (f"kernelindex/{family_name}/{pass_}/{implementation['name']}/{hardware.slug(gpu)}/{slug}/"
                   f"{observed:%Y-%m-%d-%H-%M-%S}-{hardware.slug(host)}")
    digests = digest_all(documents)
    documents["run"] = run_document(
        status=result["status"], primary=primary, observed_at=timestamp, measurements=measurements,
        source_native=None, digests=digests, extra=extra,
        name="kernelindex-" + hardware.slug(external_id),
        title=f"{family_title} · {implementation['name']} · {pass_} · KernelIndex rerun", labels={})
    digests["run"] = document_digest(documents["run"])
    measurement = [family_name, implementation["name"], pass_, result["metric"], key, gpu, host]
    fields_ = {
        "external_id": external_id, "source": SOURCE, "kernel": family_name, "implementation": implementation["name"],
        "pass_": pass_, "metric": result["metric"], "unit": "ns", "gpu": gpu,
        "gpu_product": (environment_in.get("hardware") or {}).get("product", gpu),
        "x_name": "seq" if "seq" in parameters else next(iter(parameters), ""),
        "x_value": str(parameters.get("seq", "")), "x_number": parameters.get("seq"),
        "parameters": parameters, "dtype": dtype, "options": options, "median": median, "p20": p20, "p80": p80,
        "status": result["status"], "evidence": "kernelindex-rerun", "observed_at": observed, "labels": {},
        "workload_key": key, "rerun_of": rerun_of.id if rerun_of else None, "host": host,
        "details": {"timing": timing, "correctness": result["correctness"], "cost": result["cost"],
                    "error": result["error"], "implementation": implementation},
    }
    shared = comparison.group_shared(kernel=family_name, workload_key=key, pass_=pass_, metric=result["metric"],
                                     gpu=gpu, comparability_family=comparability_family,
                                     evidence="kernelindex-rerun")
    digest_input = json.dumps([measurement, timestamp, digests["run"]], sort_keys=True)
    prepared = PreparedRun(
        identity_key=hashlib.sha256(digest_input.encode()).hexdigest(),
        measurement_key=hashlib.sha256(json.dumps(measurement, sort_keys=True).encode()).hexdigest(),
        documents=documents, digests=digests, fields=fields_, family_title=family_title, group_shared=shared)
    return prepared, policy


def record_rerun_results(results: list[dict], families: dict | None = None) -> RecordSummary:
    """Validate every result, then store them all in one transaction (all or nothing)."""
    if families is None:
        from runners.discovery import family_definitions

        families = family_definitions()
    loaded = []
    for number, result in enumerate(results, start=1):
        try:
            loaded.append(result_schema.load(result))
        except ValidationError as error:
            raise RerunRejected(f"result {number}: {json.dumps(error.messages, sort_keys=True)}") from error
    summary = RecordSummary()
    with database.atomic():
        prepared, policies = [], {}
        for number, result in enumerate(loaded, start=1):
            rerun_of = None
            if result["rerunOf"]:
                rerun_of = Run.get_or_none(Run.id == result["rerunOf"])
                if rerun_of is None:
                    raise RerunRejected(f"result {number}: rerunOf {result['rerunOf']!r} is not a run here")
            run, policy = prepare(result, families, rerun_of)
            prepared.append(run)
            policies[document_digest(policy)] = policy
        for digest, policy in policies.items():
            Manifest.insert(digest=digest, kind=policy["kind"], document=policy).on_conflict_ignore().execute()
        stored = store_runs(prepared)
        summary.created, summary.unchanged = stored.created, stored.unchanged
        summary.replicated = mark_replications({run.fields["workload_key"] for run in prepared})
    return summary


def mark_replications(workload_keys) -> int:
    """Current passed reruns of one measurement on two or more hosts that agree become ``kernelindex-replicated``."""
    changed = 0
    reruns = (Run.select().where((Run.source == SOURCE) & Run.workload_key.in_(list(workload_keys))
                                 & Run.superseded_by.is_null() & (Run.status == "passed")))
    measurements = {}
    for run in reruns:
        measurements.setdefault((run.kernel_id, run.implementation, run.pass_, run.metric, run.workload_key,
                                 run.gpu), []).append(run)
    for runs in measurements.values():
        hosts = {run.host for run in runs}
        agree = len(hosts) > 1 and all(comparison.tied(runs[0], other) for other in runs[1:])
        level = "kernelindex-replicated" if agree else "kernelindex-rerun"
        for run in runs:
            if run.evidence != level:
                Run.update(evidence=level).where(Run.id == run.id).execute()
                changed += 1
    return changed
