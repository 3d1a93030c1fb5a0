"""The sections of a run page, each read from the run's canonical documents (see the reference run page)."""

from runners.hardware import short_name
from runners.isolation import CHILD_PROCESS, HARNESS_PROCESS

from .. import formatting
from ..models import Manifest, Rejudgement, Run
from .policy import policy_url
from .policy import summary as policy_summary
from .titles import by_length_then_name, comparison_kind, metric_name

SOURCE_CORRECTNESS = "Marked passed by the source; the correctness policy was not published."


def split_quantity(value, unit: str) -> dict:
    """``{"value": "84.6", "unit": "ms"}`` for the large figure at the top of a run page."""
    text = formatting.quantity(value, unit)
    number, _, shown_unit = text.partition(" ")
    return {"value": number, "unit": shown_unit, "text": text}


def unranked_reason(run: Run) -> str | None:
    """Why ``run`` leaves its comparison group's ranking (``invalidated by alice on 2026-12-01``, superseded, failed;
    empty where nothing recorded says), or None where it ranks."""
    if run.invalidated_at is not None:
        return f"invalidated by {run.invalidated_by} on {formatting.day(run.invalidated_at)}"
    if run.rank is not None:
        return None
    if run.superseded_by_id:
        return "a newer observation of this measurement supersedes it"
    if run.status != "passed":
        return f"the run {run.status}"
    return ""


def rank_line(run: Run) -> str:
    """``Rank 2 in its comparison group · source-native comparison · observed 2025-05-27``."""
    reason = unranked_reason(run)
    standing = (f"Rank {run.rank} in its comparison group" if reason is None
                else f"Not ranked: {reason}" if reason else "Not ranked")
    return f"{standing} · {comparison_kind(run.evidence)} · observed {formatting.day(run.observed_at)}"


def invalidation_notice(run: Run) -> str | None:
    """``Invalidated on 2026-12-01 by ...: <reason>``, or None for a result that stands."""
    if run.invalidated_at is None:
        return None
    return f"Invalidated on {formatting.day(run.invalidated_at)} by {run.invalidated_by}: {run.invalidated_reason}"


def spread_line(run: Run, spec: dict) -> str:
    """The spread as every page words it (``p20–p80 84.5–84.6 ms``), and a rerun's trials, cv and host waits."""
    if run.median is None:
        return ""
    parts = [f"p20–p80 {formatting.spread(run.p20, run.p80, run.unit)}"]
    rerun = spec.get("rerun") or {}
    if rerun.get("trials"):
        parts.append(f"{rerun['trials']} trials × {rerun.get('samplesPerTrial')} samples")
    if rerun.get("cv") is not None:
        parts.append(f"cv {formatting.significant(rerun['cv'] * 100, 2)}%")
    if rerun.get("hostExposedSamples"):
        parts.append(f"{rerun['hostExposedSamples']} samples waited on the host")
    return " · ".join(parts)


MEASURED_IN = {HARNESS_PROCESS: "; measured in the harness process",
               CHILD_PROCESS: "; measured alone in a child process of its own (third-party code)"}
"""What a rerun's integrity line says of where it was measured (``runners.isolation``); older reruns say nothing."""


def execution_lines(run: Run) -> list[str]:
    """A rerun's math mode, what an eager caller pays (the host-inclusive median beside the device-only
    primary), whether a call waits on the host and what the integrity checks found; empty for source rows,
    which record none of it."""
    details = run.details or {}
    timing, implementation = details.get("timing") or {}, details.get("implementation") or {}
    lines = []
    if implementation.get("mathMode"):
        lines.append(f"Math mode: {implementation['mathMode']}")
    host = timing.get("hostInclusive") or {}
    if host.get("median") and run.median:
        lines.append(f"Host-inclusive median {formatting.quantity(host['median'], run.unit)} "
                     f"({formatting.significant(host['median'] / run.median, 2)}× the device time): what an "
                     "eager caller pays, launches and Python included")
    synchronization = timing.get("hostSynchronization")
    if synchronization is not None:
        lines.append("Waits on the host inside the timed call" + (f" ({synchronization['detail']})"
                                                                     if synchronization.get("detail") else "")
                     if synchronization.get("detected") else "No host synchronization inside the timed call")
    gpu = details.get("telemetry")
    if gpu:
        lines.append(telemetry_line(gpu))
    checks = details.get("integrity")
    if checks:
        found = (f"integrity violations: {'; '.join(checks['violations'])}" if checks.get("violations")
                 else "no tampering found")
        if checks.get("timedCalls"):
            addresses = checks.get("distinctAddresses")
            audit = (f"{len(checks.get('auditedCalls') or [])} of {checks['timedCalls']} timed calls audited against "
                     "the reference, inputs from secret seeds"
                     + (f" at {addresses} distinct address{'es' if addresses != 1 else ''}" if addresses else "")
                     + f"; {found}")
        else:  # it failed before timing: "0 of 0 audited; no tampering found" vouched for calls never made
            audit = "no call was timed, so none was audited" + (f"; {found}" if checks.get("violations") else "")
        lines.append(f"Integrity: {audit}" + MEASURED_IN.get(checks.get("isolation"), ""))
        warnings = checks.get("scanWarnings") or []
        if warnings:
            lines.append("Static scan of its plugin's source (warnings, not verdicts): " + "; ".join(
                f"line {warning['line']}, {warning['pattern']}: {warning['text']}" for warning in warnings))
    return lines


def telemetry_line(gpu: dict) -> str:
    """``GPU telemetry over 5 trials: SM 1,755–1,980 MHz (max 1,980 MHz), memory 2,619 MHz, 41–47 °C, 310–330 W;
    throttle: none`` (ranges over the trials' samples; the maximum where the result has it), or why there is none."""
    if not gpu.get("available"):
        return f"GPU telemetry: not available ({gpu.get('reason')})"
    samples = gpu.get("samples") or []
    if not samples:
        return "GPU telemetry: no trial sampled"

    def span(key, unit):
        low, high = (formatting.significant(f(sample[key] for sample in samples), 3) for f in (min, max))
        return f"{low}{unit}" if low == high else f"{low}–{high}{unit}"

    reasons = sorted({reason for sample in samples for reason in sample.get("throttleReasons") or ()})
    outside = gpu.get("trialsOutsideProtocol") or []
    top = gpu.get("maxSmClockMHz")
    trials = f"{len(samples)} trial{'s' if len(samples) != 1 else ''}"
    return (f"GPU telemetry over {trials}: SM {span('smClockMHz', ' MHz')}"
            + (f" (max {formatting.significant(top, 3)} MHz)" if top is not None else "")
            + f", memory {span('memoryClockMHz', ' MHz')}, "
            f"{span('temperatureC', ' °C')}, {span('powerW', ' W')}; "
            f"throttle: {', '.join(reasons) or 'none'}"
            + (f"; trials outside the protocol's thresholds: {', '.join(map(str, outside))}" if outside else "")
            + (f"; not sampled: {'; '.join(gpu['failures'])}" if gpu.get("failures") else ""))


def native_line(spec: dict) -> str:
    """The source's own figures exactly as it recorded them (``ms 20 84.55020904541016 · ...``), for checking."""
    native = (spec.get("sourceNative") or {}).get("metrics") or {}
    return " · ".join(f"{name.replace('_', ' ')} {value}" for name, value in sorted(native.items()))


def correctness_section(run: Run, spec: dict) -> dict:
    """Status and policy: the source's unpublished one, or the rerun's published, digested policy."""
    checked = spec.get("correctness")
    if not checked:
        return {"published": False, "sentence": SOURCE_CORRECTNESS, "status": run.status, "policy_summary": None,
                "policy_url": None, "policy_name": None, "policy_digest": None, "policy_version": None, "trials": None,
                "rejudgements": []}
    details = (run.details or {}).get("correctness") or {}
    policy_digest = checked.get("policyDigest")
    policy = Manifest.get_or_none(Manifest.digest == policy_digest) if policy_digest else None
    policy_spec = policy.document["spec"] if policy else {}
    error = details.get("relL2Error", checked.get("relL2Error"))
    tolerance = details.get("tolerance", checked.get("tolerance"))
    passed = details.get("passed", checked.get("passed"))
    why = (run.details or {}).get("error")
    if error is not None and tolerance is not None:
        measured = (f"relative L2 error {formatting.significant(error, 3)} against tolerance "
                    f"{formatting.significant(tolerance, 3)}")
        if not passed and error <= tolerance and why:  # within tolerance, failed all the same: say what failed it
            measured += f"; it failed on another count ({why})"
    else:  # no trial completed: the harness's error says what broke the check off
        measured = "the check broke off before any output was compared" + (f" ({why})" if why else "")
    version = (policy_spec.get("policy") or details.get("policy") or {}).get("version")
    return {
        "published": True,
        "sentence": ("Passed" if passed else "Failed") + " the KernelIndex correctness policy: " + measured + ".",
        "status": run.status,
        "policy_summary": policy_summary({"text": policy_spec.get("text") or details.get("policyText", ""),
                                          "policy": policy_spec.get("policy") or {}}),
        "policy_url": policy_url(policy_digest) if policy else None,
        "policy_name": (policy_spec.get("policy") or {}).get("name"),
        "policy_digest": policy_digest,
        "policy_version": version,
        "trials": details.get("trials", checked.get("trials")),
        "rejudgements": rejudgements(run, version, policy_digest),
    }


def rejudgements(run: Run, version, policy_digest) -> list:
    """The run's verdicts under later policy versions (``flask rejudge``), each beside the one it recorded."""
    rows = []
    for later in run.rejudgements.order_by(Rejudgement.policy_version, Rejudgement.judged_at):
        reasons = later.verdict.get("reasons") or []
        why = f" — {'; '.join(reasons)}" if reasons else ""
        sentence = (f"Judged {run.status} under policy v{version} (digest {formatting.short_digest(policy_digest)}); "
                    f"under policy v{later.policy_version}: {later.status}{why}.")
        unranked = later.status == "passed" and run.median is None
        rows.append({
            "policy_version": later.policy_version, "policy_digest": later.policy_digest, "status": later.status,
            "reasons": reasons, "judged": formatting.day(later.judged_at), "sentence": sentence,
            "ranking": ("It still does not rank: the harness stopped at the failed trial and timed nothing, so "
                        "the run has no median; a fresh rerun can rank.") if unranked else None,
        })
    return rows


def gpu_note(rerun: Run, reproduced: Run, reproduced_is: str) -> str:
    """Where a rerun ran, against the run it reproduces: ``rerun on NVIDIA H200, not the H100 of this run``."""
    if rerun.gpu == reproduced.gpu:
        return f"rerun on {rerun.gpu}, the GPU of {reproduced_is}"
    other = reproduced.gpu if rerun.gpu_product == reproduced.gpu_product else reproduced.gpu_product
    return f"rerun on {rerun.gpu}, not the {short_name(other)} of {reproduced_is}"


def named_options(options: dict, external_id: str) -> dict:
    """The options a run's external id names: those its source counts as not the family's default.

    The reference page lists none for ``bias = true`` (FNA's default); a run with ``bias = false``
    shows it. Every option stays in the workload document and the JSON twin.
    """
    parts = external_id.split("/")
    slug = {part.lower() for part in parts[-2].split("-")} if len(parts) >= 2 else set()
    return {name: value for name, value in options.items()
            if f"{name}{formatting.parameter_value(value)}".lower() in slug}


def named_rows(values: dict) -> list:
    """``(name, text)`` rows in the reference page's order."""
    return [(name, formatting.parameter_value(values[name])) for name in by_length_then_name(values)]


def workload_section(workload: dict, external_id: str) -> dict:
    """Parameters, named options, tensors and comparator; ``rows`` is every setting, dtype last."""
    parameters = named_rows(workload.get("parameters") or {})
    options = named_rows(named_options(workload.get("options") or {}, external_id))
    dtype = workload.get("dtype")
    tensors = {tensor["name"]: tensor for tensor in workload.get("tensors") or []}
    return {
        "parameters": parameters,
        "options": options,
        "dtype": dtype,
        "rows": parameters + options + ([("dtype", dtype)] if dtype else []),
        "tensors": [(name, f"{tensors[name]['dtype']} {formatting.shape(tensors[name]['shape'])}")
                    for name in by_length_then_name(tensors)],
        "comparator": (workload.get("definition") or {}).get("comparator", "not_asserted"),
    }


def measurement_rows(run: Run, spec: dict) -> list:
    metric = metric_name(run.unit, run.metric)
    rows = [(f"{metric} · median", formatting.quantity(run.median, run.unit))] if run.median is not None else []
    for measurement in spec.get("measurements") or []:
        rows.append((f"{measurement['metric']} · {measurement['statistic']}",
                     formatting.quantity(measurement["value"], measurement["unit"])))
    return rows


def environment_rows(environment: dict) -> list:
    hardware = environment.get("hardware") or {}
    gpu = hardware.get("product") or hardware.get("name") or "unknown"
    if hardware.get("architecture"):
        gpu = f"{gpu} ({hardware['architecture']})"
    rows = [("gpu", gpu)]
    if hardware.get("formFactor"):
        rows.append(("form factor", hardware["formFactor"]))
    rows.extend(formatting.flatten(environment.get("software") or {}))
    for name in ("host", "target", "cpu"):
        if name in environment:
            rows.extend(formatting.flatten(environment[name], name))
    return rows
