"""Importer for KernelIndex rerun bundles: the results ``runners.rerun`` produces, as bundle lines.

``flask rerun`` (recording on this database), ``flask import kernelindex`` (bundle
files written by ``flask rerun --out``) and ``POST /api/v1/reruns`` (rerun hosts
with a token) all end here. Each result is validated, described as a run record
(its protocol, environment, implementation and correctness-policy documents) and
stored at evidence level ``kernelindex-rerun``, linked to the run it reproduces. A
speed result is a latency in ns; a memory result (``runners.memory``) a peak in MB, the
metric and unit of Liger's memory rows, so it ranks in the memory comparisons. A
measurement rerun on two or more hosts (and GPUs, where their UUIDs are known) whose
results agree becomes ``kernelindex-replicated``.

Every result of a batch is validated before anything is built: its shape by
``app.rerun_schemas``, who vouches for it and what the server knows by
``rerun_submission``. A result never overwrites: one whose host, measurement and
``observedAt`` are stored with other figures is refused (``RerunConflict``).
"""

import json
import sys
from dataclasses import dataclass, field
from datetime import timedelta

from flask import current_app
from marshmallow import ValidationError

from runners import memory
from runners.correctness import POLICY_VERSIONS, UNREADABLE_RECORD, Policy, rejudge
from runners.discovery import family_definitions
from runners.hardware import short_name

from .. import comparison
from ..db import database
from ..inputs import NotUtf8, RepeatedKey, object_of, utf8_text
from ..locks import lock_scopes, retried
from ..manifests import document_digest, make_document
from ..manifests.documents import environment_document, implementation_document, protocol_document
from ..models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, Manifest, Run, utcnow
from ..records import (Identity, Measurement, RecordSource, RunRecord, WorkloadPoint, family_title, prepare, slug,
                       workload_document_for)
from ..registry import InvalidDocument, chunks, store_runs
from ..rerun_schemas import gpu_name, json_problem, result_schema
from ..schema_fields import validation_message
from .rerun_consistency import comparability_family, consistency_problem
from .rerun_submission import Submission, declared_implementations, naive_utc, unknown_problem
from .spellings import Spellings

SOURCE = "kernelindex"
RERUNS = RecordSource(name=SOURCE, run_name_prefix="kernelindex", evidence=KERNELINDEX_RERUN,
                      external_id_prefix="kernelindex", title_suffix="KernelIndex rerun")
COMPARATOR = "relative_l2_vs_float64"


class RerunRejected(Exception):
    """A result (or bundle) that cannot be recorded; nothing from it was stored."""


class RerunNotPermitted(RerunRejected):
    """A result its token may not post (``Submission.scope_problem``); nothing was stored."""


class RerunConflict(RerunRejected):
    """A result whose host, measurement and observedAt are stored with other figures: it never overwrites them."""


@dataclass
class RecordSummary:
    created: list = field(default_factory=list)
    unchanged: int = 0
    replicated: int = 0
    identity_keys: list = field(default_factory=list)  # each result's, in order: which stored run it is

    def line(self) -> str:
        return f"created {len(self.created)}, unchanged {self.unchanged}, replicated {self.replicated}"


def read_bundle(data: bytes) -> list[dict]:
    """The results of a JSON-lines bundle (UTF-8, one result per line; blank lines ignored)."""
    try:
        text = utf8_text(data)
    except NotUtf8 as error:
        raise RerunRejected(str(error)) from error
    results = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            results.append(json.loads(line, object_pairs_hook=object_of))
        except RepeatedKey as error:  # as POST /api/v1/reruns refuses it: which value the host meant is unknown
            raise RerunRejected(f"line {number} names the key {error.args[0][:80]!r} twice in one object; give it "
                                "once") from error
        except json.JSONDecodeError as error:
            raise RerunRejected(f"line {number} is not JSON: {error.msg}") from error
        except RecursionError as error:
            raise RerunRejected(f"line {number} nests too deeply") from error
        except ValueError as error:  # json reads no integer of more digits than Python converts
            raise RerunRejected(f"line {number} holds an integer of more than {sys.get_int_max_str_digits()} "
                                "digits") from error
    return results


def policy_document(correctness: dict) -> dict:
    policy = correctness.get("policy") or {}
    spec = {"policy": policy, "text": correctness.get("policyText", "")}
    return make_document("CorrectnessPolicy", spec, {"name": policy.get("name", "kernelindex-correctness"),
                                                     "title": "KernelIndex correctness policy"})


def measurement_protocol(result: dict) -> dict:
    """The protocol document of a result: its timing protocol, or for a memory result how the peak was taken
    (the timing protocol it ran beside kept as its parameters)."""
    protocol_in = result["protocol"]
    name = protocol_in.get("name", "kernelindex-rerun")
    title = f"KernelIndex rerun protocol · {protocol_in.get('preset', protocol_in.get('name', 'custom'))}"
    measurement = {"timer": protocol_in.get("timer", "unknown"), "primaryStatistic": "median",
                   "parameters": protocol_in}
    if result["metric"] == memory.METRIC:
        method = (result["memory"] or {}).get("method", {})
        measurement = {**method, "primaryStatistic": "median", "parameters": protocol_in}
        name, title = f"{name}-memory"[:100], f"{title} · peak memory"
    return protocol_document(
        spec={"harness": protocol_in.get("harness") or {"name": "KernelIndex rerun harness"},
              "measurement": measurement,
              "comparability": {"notes": protocol_in.get("notes", ""), "family": comparability_family(result)}},
        name=name, title=title)


def rerun_documents(result: dict, gpu: str, host: str, point: WorkloadPoint, family, title: str) -> dict:
    """The protocol, workload, environment, implementation and correctness-policy documents of a result."""
    environment_in, implementation = result["environment"], result["implementation"]
    return {
        "protocol": measurement_protocol(result),
        "workload": workload_document_for(point, family, title, COMPARATOR),
        "environment": environment_document(
            hardware=environment_in.get("hardware") or {}, software=environment_in.get("software") or {},
            extra={key: environment_in[key] for key in ("host", "target", "cpu") if key in environment_in},
            name=f"kernelindex-host-{slug(host)}-{slug(gpu)}"[:100],
            title=f"KernelIndex rerun host {host} · {short_name(gpu)}"),
        "implementation": implementation_document(
            name=implementation["name"], family=result["family"], project=implementation.get("project", "unknown"),
            revision=str(implementation.get("revision", "unknown")), details=implementation.get("details"),
            math_mode=implementation.get("mathMode")),
        "correctnessPolicy": policy_document(result["correctness"]),
    }


def rerun_sections(result: dict, policy: dict, rerun_of: Run | None, host: str) -> dict:
    """The run document's ``correctness`` (citing its policy by digest) and ``rerun`` sections."""
    timing = result["timing"] or {}
    correctness = {k: v for k, v in result["correctness"].items() if k not in ("policy", "policyText")}
    correctness["policyDigest"] = document_digest(policy)
    rerun = {"of": rerun_of.digest if rerun_of else None, "host": host,
             "trials": timing.get("trials", 0), "samplesPerTrial": timing.get("samplesPerTrial", 0),
             "cv": timing.get("cv"), "hostExposedSamples": timing.get("hostExposedSamples", 0),
             "cost": result["cost"], "error": result["error"]}
    if result["metric"] == memory.METRIC:
        rerun["memory"] = result["memory"]
    return {"correctness": correctness, "rerun": rerun}


HARNESS = "KernelIndex rerun harness (at run time)"
"""Who invalidated a result whose harness caught its implementation tampering with the measurement."""


def harness_invalidation(result: dict, received_at) -> dict | None:
    """A result's invalidation when its harness found integrity violations (``runners.integrity``), else None."""
    violations = (result["integrity"] or {}).get("violations") or []
    if not violations:
        return None
    return {"reason": "; ".join(violations), "by": HARNESS, "at": received_at or utcnow()}


def rerun_record(result: dict, families: dict, rerun_of: Run | None, received_at) -> RunRecord:
    """A validated result, its environment naming the host that vouches for it, as a run record."""
    family_name, implementation = result["family"], result["implementation"]
    parameters, dtype, options = (result["workload"][key] for key in ("parameters", "dtype", "options"))
    environment, timing = result["environment"], result["timing"]
    family = families.get(family_name)
    title = family_title(family_name, family)
    gpu, host = gpu_name(environment["hardware"]), environment.get("host") or "unknown"
    x_name = "seq" if "seq" in parameters else next(iter(parameters), "")
    point = WorkloadPoint(family=family_name, parameters=parameters, dtype=dtype, options=options,
                          x_name=x_name, x_value=parameters.get(x_name, ""))
    figures, unit = (result["memory"], memory.UNIT) if result["metric"] == memory.METRIC else (timing, "ns")
    measured = result["status"] == "passed" and figures
    median, p20, p80 = (figures["median"], figures["p20"], figures["p80"]) if measured else (None, None, None)
    measurement = Measurement(metric=result["metric"], unit=unit, median=median, p20=p20, p80=p80,
                              status=result["status"])
    documents = rerun_documents(result, gpu, host, point, family, title)
    return RunRecord(
        source=RERUNS, identity=Identity([family_name, implementation["name"], result["pass_"], result["metric"],
                                          point.key, gpu, host],
                                         naive_utc(result["observedAt"])),
        kernel=family_name, family_title=title, implementation=implementation["name"],
        pass_=result["pass_"], gpu=gpu, gpu_product=environment["hardware"]["product"],
        workload=point, measurement=measurement, documents=documents,
        comparability_family=comparability_family(result),
        sections=rerun_sections(result, documents["correctnessPolicy"], rerun_of, host), host=host,
        rerun_of=rerun_of.id if rerun_of else None, received_at=received_at,
        invalidation=harness_invalidation(result, received_at),
        details={"timing": timing, "correctness": result["correctness"], "cost": result["cost"],
                 "error": result["error"], "implementation": implementation, "integrity": result["integrity"],
                 "telemetry": result["telemetry"],
                 **({"memory": result["memory"]} if result["metric"] == memory.METRIC else {})})


def loaded_result(result, submission: Submission, skew: timedelta, declared: dict, definitions: dict) -> dict:
    """One result validated and vouched for, or the reason it cannot be recorded (RerunRejected)."""
    problem = json_problem(result)
    if problem is None:
        try:
            result = result_schema.load(result)
        except ValidationError as error:
            problem = validation_message(error.messages)
    if problem is None and (not_permitted := submission.scope_problem(result)):
        raise RerunNotPermitted(not_permitted)
    problem = (problem or submission.problem(result, skew) or unknown_problem(result, declared, definitions)
               or precision_problem(result) or verdict_problem(result) or consistency_problem(result))
    if problem:
        raise RerunRejected(problem)
    return submission.vouched(result)


def precision_problem(result: dict) -> str | None:
    """Why a result's precision does not hold together: its correctness record's ``tf32`` picks the tolerance of an
    fp32 workload (TF32's, 50 times IEEE fp32's), and its implementation's ``details`` and ``mathMode`` say how it
    multiplies, the mode pages show beside its figure; the harness writes all three from one declaration."""
    implementation, judged_in_tf32 = result["implementation"], result["correctness"].get("tf32")
    declared_tf32 = bool((implementation.get("details") or {}).get("tf32", False))
    if judged_in_tf32 is not None and judged_in_tf32 != declared_tf32:
        return (f"its correctness record says tf32={judged_in_tf32}, but its implementation's details declare "
                f"tf32={declared_tf32}")
    mode = implementation.get("mathMode")  # absent from bundles made before math modes
    if result["workload"]["dtype"] == "fp32" and mode is not None and (mode != "ieee-fp32") != declared_tf32:
        return f"its implementation's math mode {mode!r} disagrees with its details' tf32={declared_tf32}"
    return None


def verdict_problem(result: dict) -> str | None:
    """Why a result's verdict cannot stand: it names no policy version KernelIndex published (or a published one with
    other figures), or it says it passed and its own figures fail the version it names. Results of older versions
    are judged again under the current one by ``flask rejudge``, beside their verdict."""
    policy = result["correctness"].get("policy")
    if policy is None and result["status"] != "passed":
        return None
    version = policy.get("version") if isinstance(policy, dict) else None
    published = POLICY_VERSIONS.get(version) if type(version) is int else None
    try:
        named = Policy.from_document(policy)
    except (KeyError, TypeError, ValueError, AttributeError):
        named = None
    if published is None or named != published:
        return (f"its correctness policy (version {version!r}) is not one KernelIndex published (versions "
                f"{', '.join(map(str, POLICY_VERSIONS))}, with their tolerances and floors)")
    if result["status"] != "passed":
        return None
    try:
        verdict = rejudge(result, published)
    except UNREADABLE_RECORD as error:
        return f"its correctness record cannot be judged under policy version {version} ({error!r})"
    if verdict.status != "passed":
        return f"it says passed, but its own figures do not pass policy version {version}: {'; '.join(verdict.reasons)}"
    return None


def loaded_results(results: list, submission: Submission) -> list[dict]:
    """Every result validated and vouched for, or RerunRejected naming the first bad one."""
    config = current_app.config
    skew = timedelta(seconds=config["RERUN_CLOCK_SKEW_SECONDS"])
    declared = declared_implementations()
    definitions = family_definitions()
    loaded = []
    for number, result in enumerate(results, start=1):
        try:
            loaded.append(loaded_result(result, submission, skew, declared, definitions))
        except RerunRejected as error:
            raise type(error)(f"result {number}: {error}") from error
    return loaded


@retried
def record_rerun_results(results: list, families: dict | None = None,
                         submission: Submission | None = None) -> RecordSummary:
    """Validate every result (bundle lines, as documents), then store them all in one transaction.

    ``submission`` says who vouches for them (a token's host; by default the operator of a
    local import, each result recorded as the host it names).
    """
    families = family_definitions() if families is None else families
    submission = submission or Submission()
    loaded = loaded_results(results, submission)
    summary = RecordSummary()
    with database.atomic():
        prepared, spellings = [], Spellings()
        for number, result in enumerate(loaded, start=1):
            rerun_of = reproduced_run(result, number)
            record = rerun_record(result, families, rerun_of, submission.received_at)
            if rerun_of and (rerun_of.kernel_id, rerun_of.workload_key) != (record.kernel, record.workload.key):
                raise RerunRejected(f"result {number}: rerunOf {rerun_of.id} is a run of another workload")
            if rerun_of and rerun_of.pass_ != record.pass_:
                raise RerunRejected(f"result {number}: rerunOf {rerun_of.id} times the {rerun_of.pass_} pass, "
                                    f"not the {record.pass_} pass")
            if rerun_of and rerun_of.metric != record.measurement.metric:
                raise RerunRejected(f"result {number}: rerunOf {rerun_of.id} measures {rerun_of.metric}, "
                                    f"not {record.measurement.metric}")
            prepared.append(prepare(record))
            if problem := spellings.problem(prepared[-1].fields):
                raise RerunRejected(f"result {number}: {problem}")
        # Checked holding the workload scopes' locks (PostgreSQL; store_runs takes them again), so that a result of
        # the same measurement sent at once is stored before this one is checked, or refused after it is stored.
        lock_scopes(run.group_shared for run in prepared)
        refuse_conflicts(prepared)
        try:
            stored = store_runs(prepared)
        except InvalidDocument as error:
            raise RerunRejected(f"a document built from the results is invalid: {error}") from error
        summary.created, summary.unchanged = stored.created, stored.unchanged
        summary.identity_keys = [run.identity_key for run in prepared]
        summary.replicated = mark_replications({run.fields["workload_key"] for run in prepared})
    return summary


def reproduced_run(result: dict, number: int) -> Run | None:
    """The published run a result says it reproduces (None when it names none)."""
    if not result["rerunOf"]:
        return None
    run = Run.get_or_none(Run.id == result["rerunOf"])
    if run is None:
        raise RerunRejected(f"result {number}: rerunOf {result['rerunOf']!r} is not a run here")
    return run


def refuse_conflicts(prepared) -> None:
    """RerunConflict if a result's identity (host, measurement, observedAt) is stored or repeated with other figures."""
    digests = {}
    for run in prepared:
        if digests.setdefault(run.identity_key, run.digests["run"]) != run.digests["run"]:
            raise RerunConflict(f"two results of {run.fields['external_id']} have the same observedAt and differ")
    for chunk in chunks(digests):
        for stored in Run.select(Run.id, Run.identity_key, Run.digest).where(Run.identity_key.in_(chunk)):
            if stored.digest != digests[stored.identity_key]:
                raise RerunConflict(f"run {stored.id} records this measurement on this host with the same observedAt "
                                    "and other figures; a result never overwrites another")


def gpu_uuids(runs) -> dict:
    """Each run's GPU UUID, where its environment names one: two hosts sharing a GPU are one machine."""
    digests = list({run.environment_digest for run in runs})
    hardware = {digest: document["spec"].get("hardware") or {} for digest, document in
                Manifest.select(Manifest.digest, Manifest.document).where(Manifest.digest.in_(digests)).tuples()}
    return {run.id: hardware.get(run.environment_digest, {}).get("uuid") for run in runs}


def independent(runs, uuids) -> bool:
    """Whether two of these runs are two measurements (not one recorded twice: same time and figures) from different
    hosts and, where known, different GPUs."""
    return any(first.host != second.host and not (uuids[first.id] and uuids[first.id] == uuids[second.id])
               and (first.observed_at, first.median, first.p20, first.p80)
               != (second.observed_at, second.median, second.p20, second.p80)
               for index, first in enumerate(runs) for second in runs[index + 1:])


def mark_replications(workload_keys) -> int:
    """Current passed reruns of one measurement that agree, on two hosts and GPUs, become ``kernelindex-replicated``.

    They agree when each is tied with the fastest of them, as a ranking ties members with #1: compared with
    whichever the database listed first, one set of results replicated or not by the order it was recorded in."""
    changed = 0
    reruns = list(Run.rankable().where((Run.source == SOURCE) & Run.workload_key.in_(list(workload_keys)))
                  .order_by(Run.median, Run.id))
    uuids = gpu_uuids(reruns)
    measurements = {}
    for run in reruns:  # a smoke rerun on one host never replicates a standard one on another
        measurements.setdefault((run.comparison_key_id, run.implementation), []).append(run)
    for runs in measurements.values():
        fastest, *others = runs
        agree = independent(runs, uuids) and all(comparison.tied(fastest, other) for other in others)
        level = KERNELINDEX_REPLICATED if agree else KERNELINDEX_RERUN
        for run in runs:
            if run.evidence != level:
                Run.update(evidence=level).where(Run.id == run.id).execute()
                changed += 1
    return changed
