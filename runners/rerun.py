"""Rerun orchestration: rebuild a workload, check it, time it, measure its memory, describe the host, report.

``rerun_workload`` does one workload and pass for every requested implementation
at once (so they are timed interleaved) and returns one ``RerunResult`` per
implementation and metric: ``speed`` on every target, and on CUDA ``memory`` too,
each implementation's peak measured in its own untimed calls (``runners.memory``).
The harness knows no database: its host (``flask rerun``) says what to rerun
through ``RerunRequest``s and decides where the results go.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from runners import correctness, integrity, memory, scan, telemetry, timing
from runners.discovery import LoadedPlugin, PluginRegistry, get_registry
from runners.types import PASSES, Implementation, RerunResult, Workload, dtype_name, torch_dtype

METRIC = "speed"


class RerunError(Exception):
    """A rerun that cannot start: bad workload, unknown implementation, no plugin."""


@dataclass(frozen=True)
class RerunRequest:
    """One workload and pass to re-measure, with the run each implementation's result reproduces.

    ``parameters`` and ``options`` are reported back exactly as given (as the importer
    normalized them), so a result lands in the same workload as the run it reproduces.
    """

    family: str
    pass_: str
    parameters: Mapping[str, Any]
    dtype: str
    options: Mapping[str, Any] = field(default_factory=dict)
    rerun_of: Mapping[str, str] = field(default_factory=dict)  # implementation name -> run id
    memory_rerun_of: Mapping[str, str] = field(default_factory=dict)  # implementation name -> memory run id


def sweep_requests(requests: Sequence[RerunRequest], sweep: Mapping[str, Sequence[Any]]) -> list[RerunRequest]:
    """The requests' workloads with parameters replaced by every combination of ``sweep``'s values.

    A changed workload reproduces no published run, so its results carry no ``rerun_of``.
    """
    if not sweep:
        return list(requests)
    swept, seen = [], set()
    for request in requests:
        unknown = set(sweep) - set(request.parameters)
        if unknown:
            raise RerunError(f"{request.family} has no parameter {', '.join(sorted(unknown))}")
        for values in itertools.product(*sweep.values()):
            changed = dataclasses.replace(request, parameters={**request.parameters, **dict(zip(sweep, values))},
                                          rerun_of={}, memory_rerun_of={})
            key = json.dumps([changed.family, changed.pass_, changed.parameters, changed.dtype, changed.options],
                             sort_keys=True, default=dict)
            if key not in seen:
                seen.add(key)
                swept.append(changed)
    return swept


def _plugin_and_implementations(registry: PluginRegistry, family: str, target: str, names: Sequence[str] | None,
                                dtype: str) -> tuple[LoadedPlugin, dict[str, Implementation]]:
    """The plugin of ``family`` on ``target`` and the named implementations; when none are named, all the family
    has there (its plugin's own and those other modules add) that are available here and run workloads of
    ``dtype``. An implementation named though unavailable here (its library does not import) or for a dtype it
    does not run (``torch+tf32`` on bf16) is refused before anything runs."""
    try:
        plugin = registry.find(family, target)
        chosen = [registry.implementation(plugin, name) for name in names] if names else [
            implementation for implementation in registry.implementations(plugin)
            if not implementation.unavailable and implementation.runs(dtype)]
    except (LookupError, KeyError) as error:
        raise RerunError(error.args[0]) from error
    unavailable = [f"{implementation.name} is unavailable here: {implementation.unavailable}"
                   for implementation in chosen if implementation.unavailable]
    if unavailable:
        raise RerunError("; ".join(unavailable))
    refused = [f"{implementation.name} runs only {'/'.join(implementation.dtypes)}"
               for implementation in chosen if not implementation.runs(dtype)]
    if refused:
        raise RerunError(f"{'; '.join(refused)} workloads, not {dtype}")
    return plugin, {implementation.name: implementation for implementation in chosen}


def check_requests(requests: Sequence[RerunRequest], target: str, implementations: Sequence[str] | None,
                   registry: PluginRegistry) -> None:
    """Refuse a request no plugin can run (unknown family or implementation) before any timing starts."""
    for request in requests:
        _plugin_and_implementations(registry, request.family, target, implementations, request.dtype)


def chosen_implementations(request: RerunRequest, target: str, implementations: Sequence[str] | None,
                           registry: PluginRegistry) -> list[str]:
    """The implementations ``rerun_workload`` would time for this request (all available ones when none are named)."""
    _, chosen = _plugin_and_implementations(registry, request.family, target, implementations, request.dtype)
    return list(chosen)


def device_for(target: str, index: int) -> str:
    return f"cuda:{index}" if target == "cuda" else "cpu"


def capture_environment(target: str, device: str, registry: PluginRegistry | None = None) -> dict[str, Any]:
    """The host description: ``generate_environment`` then every ``update_environment``."""
    hook = (registry or get_registry()).manager.hook
    environment = hook.generate_environment(target=target, device=device)
    hook.update_environment(environment=environment, target=target, device=device)
    return environment


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _PluginCalls:
    """The family hooks of one plugin, with the workload values completed from the definition."""

    def __init__(self, registry: PluginRegistry, plugin: LoadedPlugin, request: RerunRequest, device: str):
        self.registry, self.plugin, self.device = registry, plugin, device
        definition = plugin.record.family
        defaults = dict(definition.defaults)
        self.parameters = {**{k: v for k, v in defaults.items() if k in definition.parameters}, **request.parameters}
        self.options = {**{k: v for k, v in defaults.items() if k not in definition.parameters}, **request.options}
        missing = [name for name in definition.parameters if name not in self.parameters]
        if missing:
            raise RerunError(f"{definition.name} needs parameters {', '.join(missing)}")
        self.dtype, self.pass_ = request.dtype, request.pass_
        specs = definition.tensors({**self.parameters, **self.options}, self.dtype)
        self.expected = {spec.name: spec for spec in specs}

    def call(self, hook_name: str, **kwargs):
        return self.registry.call(self.plugin, hook_name, **kwargs)

    def prepare_pass(self, implementation: Implementation, workload: Workload):
        return self.registry.prepare_pass(self.plugin, implementation, workload, self.pass_)

    def tensors(self, seed: int) -> dict[str, Any]:
        """One seeded set of the workload's tensors, checked against the family definition."""
        tensors = dict(self.call("build_workload", parameters=self.parameters, dtype=self.dtype,
                                 options=self.options, seed=seed, device=self.device))
        for name, spec in self.expected.items():
            tensor = tensors.get(name)
            if tensor is None:
                raise RerunError(f"build_workload made no {name!r}")
            if tuple(tensor.shape) != spec.shape or dtype_name(tensor.dtype) != spec.dtype:
                raise RerunError(f"build_workload made {name} {dtype_name(tensor.dtype)} "
                                 f"{list(tensor.shape)}; the definition says {spec.dtype} {list(spec.shape)}")
        extra = set(tensors) - set(self.expected) - {"grad_output"}
        if extra:
            raise RerunError(f"build_workload made tensors the definition does not name: {', '.join(sorted(extra))}")
        return tensors

    def workload(self, seed: int, tensors: Mapping[str, Any] | None = None) -> Workload:
        """The workload of ``seed``: its tensors as built, or ``tensors`` (built from it, then changed)."""
        return Workload(family=self.plugin.record.family.name, parameters=self.parameters, dtype=self.dtype,
                        options=self.options, seed=seed, device=self.device,
                        tensors=self.tensors(seed) if tensors is None else tensors)


def _check_correctness(calls: _PluginCalls, contestants: Sequence[timing.Contestant], implementations,
                       trials: int, progress) -> dict[str, correctness.CorrectnessRecord]:
    """Run every contestant on each correctness trial's inputs; a failure removes it from timing.

    A contestant over the tolerance is still checked on every trial, so its record holds
    all the figures a later policy version needs to judge it again.
    """
    import torch

    dtype = torch_dtype(calls.dtype)
    figures: dict[str, list] = {contestant.name: [] for contestant in contestants}
    plan = correctness.trials_for(trials, calls.dtype)
    constrained = calls.plugin.record.family.constrained_inputs
    for number, trial in enumerate(plan, start=1):
        phase = f"correctness trial {number}"
        reference_workload = calls.workload(trial.seed, trial.inputs(calls.tensors(trial.seed), constrained))
        expected = calls.call("reference_outputs", workload=reference_workload, pass_=calls.pass_)
        expected = {name: tensor.detach() for name, tensor in expected.items()}
        for contestant in contestants:
            if contestant.error:
                continue
            try:
                with contestant.guarded(compiling=True), contestant.prepared.context():
                    timing.load_inputs(contestant.tensors, reference_workload.tensors)
                    contestant.prepared.setup()
                    correctness.poison_allocator(expected, dtype, calls.device)
                    outputs = contestant.prepared.run()
                    integrity.check_plain_outputs(outputs, calls.device)
                    copied = correctness.snapshot(outputs)
                    if calls.device.startswith("cuda"):
                        torch.cuda.synchronize(calls.device)
                    trial_figures = correctness.check_trial(outputs, copied, expected, contestant.tensors, dtype)
            except correctness.IncorrectOutput as failure:
                contestant.error = f"{phase}: {failure}"
                continue
            except Exception as failure:
                contestant.fail(phase, failure)
                continue
            figures[contestant.name].append(trial_figures)
            error = max(correctness.POLICY.errors(trial_figures).values())
            progress(f"  {phase}/{len(plan)}{' (precision)' if trial.precision else ''} {contestant.name}: "
                     f"relative L2 error {error:.3g}")
    records = {contestant.name: correctness.CorrectnessRecord(
        tolerance=correctness.tolerance_for(calls.dtype, implementations[contestant.name].uses_tf32), trials=len(plan),
        uses_tf32=implementations[contestant.name].uses_tf32, figures=figures[contestant.name])
        for contestant in contestants}
    for contestant in contestants:
        record = records[contestant.name]
        downgrade = integrity.precision_downgrade(record.error, calls.dtype,
                                                  implementations[contestant.name].math_mode(calls.dtype),
                                                  correctness.POLICY.tolerances)
        if downgrade and not contestant.error:
            contestant.fail("correctness", integrity.IntegrityViolation(downgrade))
        contestant.error = contestant.error or record.tolerance_failure()
    return records


def _audit(calls: _PluginCalls, contestants: Sequence[timing.Contestant], seeds: Sequence[int],
           input_sets: Sequence[Mapping[str, Any]], records: Mapping[str, correctness.CorrectnessRecord]) -> None:
    """Check the timed calls each contestant's audit kept against the reference on the inputs they got; a wrong
    one is an integrity violation (the correctness trials passed, so the timed calls computed something else)."""
    dtype = torch_dtype(calls.dtype)
    for contestant in contestants:
        if contestant.error:
            continue
        tolerance = records[contestant.name].tolerance
        try:
            for kept in sorted(contestant.audit.kept, key=lambda kept: kept.call):
                workload = calls.workload(seeds[kept.input_set], integrity.shift(input_sets[kept.input_set],
                                                                                 kept.offset))
                expected = calls.call("reference_outputs", workload=workload, pass_=calls.pass_)
                expected = {name: tensor.detach() for name, tensor in expected.items()}
                try:
                    figures = correctness.check_trial(kept.outputs, kept.outputs, expected, {}, dtype)
                except correctness.IncorrectOutput as failure:
                    raise integrity.IntegrityViolation(f"timed call {kept.call}: {failure}") from failure
                error = max(correctness.POLICY.errors(figures).values())
                if error > tolerance:
                    raise integrity.IntegrityViolation(
                        f"timed call {kept.call} of {contestant.audit.seen} returned a wrong output (relative L2 "
                        f"error {error:.3g}, tolerance {tolerance:g}), though its correctness trials passed")
        except Exception as failure:
            contestant.fail("audit", failure)


def integrity_section(contestant: timing.Contestant, seeds: Sequence[int],
                      warnings: Sequence[scan.ScanWarning]) -> dict[str, Any]:
    """What a result records of its integrity checks: the secret seeds, the audited calls, how many distinct
    addresses its inputs had, how many GPU batches disagreed with the wall clock, any violations, and the static
    scan's warnings about the source of the module that provides the implementation (which never decide)."""
    return {"inputSeeds": list(seeds), "timedCalls": contestant.audit.seen,
            "distinctAddresses": contestant.addresses.distinct if contestant.addresses else 0,
            "auditedCalls": sorted(kept.call for kept in contestant.audit.kept),
            "wallClockBatches": {"checked": len(contestant.wall_clock),
                                 "disagreed": sum(message is not None for message in contestant.wall_clock)},
            "violations": list(contestant.violations), "scanWarnings": [warning.as_document() for warning in warnings]}


def _prepared_contestants(calls: _PluginCalls, chosen: Mapping[str, Implementation],
                          protocol: Mapping[str, Any]) -> list[timing.Contestant]:
    """One contestant per implementation, each prepared on its own tensors; a failure is kept, not raised."""
    contestants = []
    for name, implementation in chosen.items():
        workload = calls.workload(seed=0)
        contestant = timing.Contestant(name=name, prepared=None, tensors=workload.tensors,
                                       budget=timing.Budget(protocol["budgetSeconds"]),
                                       audit=integrity.AuditReservoir(protocol["auditCalls"]))
        contestants.append(contestant)
        try:
            with contestant.guarded(compiling=True):
                contestant.prepared = calls.prepare_pass(implementation, workload)
            if contestant.prepared is None:
                contestant.error = f"prepare: the plugin prepared nothing for {name}"
        except Exception as error:
            contestant.fail("prepare", error)
    return contestants


def _settled_implementation(implementation: Implementation, prepared) -> Implementation:
    """The implementation with what it settled on while running (autotuned configs) added to its details."""
    if prepared is None or prepared.settled_details is None:
        return implementation
    try:
        settled = dict(prepared.settled_details())
    except Exception as error:  # a report about details must not cost the run
        settled = {"settledDetailsError": f"{type(error).__name__}: {error}"}
    return dataclasses.replace(implementation, details={**implementation.details, **settled})


def rerun_workload(request: RerunRequest, *, target: str, device_index: int = 0,
                   implementations: Sequence[str] | None = None, protocol: Mapping[str, Any],
                   environment: Mapping[str, Any] | None = None, registry: PluginRegistry | None = None,
                   progress: Callable[[str], None] = lambda message: None) -> list[RerunResult]:
    """Re-measure one workload and pass with every requested implementation; one result per implementation."""
    registry = registry or get_registry()
    if request.pass_ not in PASSES:
        raise RerunError(f"pass must be one of {', '.join(PASSES)}, not {request.pass_!r}")
    plugin, chosen = _plugin_and_implementations(registry, request.family, target, implementations, request.dtype)
    device = device_for(target, device_index)
    if target == "cuda":
        import torch

        torch.cuda.set_device(device)  # events and streams below belong to the current device
    calls = _PluginCalls(registry, plugin, request, device)
    if environment is None:
        environment = capture_environment(target, device, registry)
    policy = correctness.policy_document(protocol["correctnessTrials"])

    progress(f"{request.family} {request.pass_} {calls.dtype} "
             + " ".join(f"{k}={v}" for k, v in sorted(calls.parameters.items())) + f" on {device}: {', '.join(chosen)}")
    contestants = _prepared_contestants(calls, chosen, protocol)
    records = _check_correctness(calls, contestants, chosen, protocol["correctnessTrials"], progress)
    seeds = integrity.secret_seeds(protocol["inputSets"])
    input_sets = [calls.tensors(seed) for seed in seeds]
    timer = timing.make_timer(target, device)
    gpu = telemetry.open_telemetry(target, device_index, protocol["telemetry"])
    try:
        gpu.wait_until_ready()
    except telemetry.TelemetryRefused as refused:
        raise RerunError(f"{device} is not fit to time on: {refused}") from refused
    timing.warm_up(contestants, protocol, timer, input_sets)
    timing.check_host_synchronization(contestants, target, timer, input_sets)
    timing.run_trials(contestants, protocol, timer, input_sets, progress, after_trial=gpu.sample)
    _audit(calls, contestants, seeds, input_sets, records)
    peaks = memory.measure_peaks(contestants, input_sets[0], device) if target == "cuda" else {}
    cost = calls.call("workload_cost", parameters=calls.parameters, dtype=calls.dtype, options=calls.options,
                      pass_=request.pass_)
    observed_at = now_utc()
    shapes = [spec.shape for spec in calls.expected.values()]
    sources = {implementation.name: source for implementation, source in registry.implementation_sources(plugin)}
    warnings = {name: scan.scan_module(sources[name].module, shapes) for name in chosen}

    results = []
    for contestant in contestants:
        passed = contestant.error is None and bool(contestant.samples)
        shared = dict(family=request.family, pass_=request.pass_, parameters=request.parameters, dtype=request.dtype,
                      options=request.options,
                      implementation=_settled_implementation(chosen[contestant.name], contestant.prepared),
                      correctness=records[contestant.name].as_document(policy), environment=environment,
                      protocol=protocol, observed_at=observed_at, cost=cost)
        results.append(RerunResult(
            **shared, metric=METRIC, rerun_of=request.rerun_of.get(contestant.name),
            status="passed" if passed else "failed", error=contestant.error,
            timing=timing.timing_summary(contestant.samples, contestant.host_exposed, contestant.host_inclusive,
                                         contestant.host_synchronization) if passed else None,
            integrity=integrity_section(contestant, seeds, warnings[contestant.name]), telemetry=gpu.as_document()))
        outcome = (f"median {results[-1].timing['median'] / 1e6:.4g} ms" if passed
                   else f"failed: {contestant.error}")
        if contestant.name in peaks:
            summary, error = peaks[contestant.name]
            results.append(RerunResult(
                **shared, metric=memory.METRIC, rerun_of=request.memory_rerun_of.get(contestant.name),
                status="failed" if error else "passed", error=error, timing=None, memory=summary))
            outcome += f", peak {summary['median']:.5g} MB" if summary else ""
        progress(f"  {contestant.name}: {outcome}")
    return results
