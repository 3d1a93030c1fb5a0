"""Rerun orchestration: rebuild a workload, check it, time it, measure its memory, describe the host, report.

``rerun_workload`` does one workload and pass for every requested implementation
and returns one ``RerunResult`` per implementation and metric: ``speed`` on every
target, and on CUDA ``memory`` too, each implementation's peak measured in its own
untimed calls (``runners.memory``). The built-in implementations are measured at once
in this process (so they are timed interleaved); each third-party one after them,
alone, in a child process of its own (``runners.isolation``). Both run the same steps
(``measure``) and report them as the same plain data (``Measured``).
The harness knows no database: its host (``flask rerun``) says what to rerun
through ``RerunRequest``s and decides where the results go.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from runners import correctness, integrity, isolation, memory, scan, telemetry, timing
from runners.discovery import PLUGIN_FAULTS, LoadedPlugin, PluginRegistry, PluginSource, get_registry, registry_of
from runners.types import (PASSES, FamilyDefinition, Implementation, PreparedPass, RerunResult, Workload,
                           WorkloadCost, dtype_name, torch_dtype)

METRIC = "speed"
METRICS = (METRIC, memory.METRIC)
"""What a rerun measures: time on every target and, on CUDA, peak memory (``rerun_workload``'s ``metrics``)."""


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

    A changed workload reproduces no published run, so its results carry no ``rerun_of``; the combination that gives
    every parameter its published value (spelled the same) is the published workload, and keeps its links.
    """
    if not sweep:
        return list(requests)
    swept, seen = [], set()
    for request in requests:
        unknown = set(sweep) - set(request.parameters)
        if unknown:
            raise RerunError(f"{request.family} has no parameter {', '.join(sorted(unknown))}")
        for name, values in sweep.items():
            for value in values:
                if not _may_replace(value, request.parameters[name]):
                    raise RerunError(f"{request.family}'s {name} is {_kind(request.parameters[name])} "
                                     f"({request.parameters[name]!r}), not {value!r}")
        for values in itertools.product(*sweep.values()):
            parameters = {**request.parameters, **dict(zip(sweep, values))}
            unchanged = json.dumps(parameters, sort_keys=True) == json.dumps(request.parameters, sort_keys=True)
            changed = request if unchanged else dataclasses.replace(request, parameters=parameters, rerun_of={},
                                                                    memory_rerun_of={})
            key = json.dumps([changed.family, changed.pass_, changed.parameters, changed.dtype, changed.options],
                             sort_keys=True, default=dict)
            if key not in seen:
                seen.add(key)
                swept.append(changed)
    return swept


def _kind(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(type(value), "a value")


def _may_replace(value, published) -> bool:
    """Whether a swept ``value`` may stand for a workload's ``published`` one: of its kind (an integer where it is
    one, any finite number for a float, a boolean for a boolean), so that the workload stays one its family builds."""
    if isinstance(published, float) and not isinstance(value, bool):
        return isinstance(value, (int, float)) and math.isfinite(value)
    return type(value) is type(published)


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


def check_metrics(metrics: Sequence[str], target: str) -> None:
    """Refuse metrics the harness does not measure, or not on ``target`` (memory is measured on CUDA only)."""
    unknown = sorted(set(metrics) - set(METRICS))
    if unknown or not metrics:
        raise RerunError(f"metrics are {', '.join(METRICS)}, not {', '.join(unknown) or 'none'}")
    if list(metrics) == [memory.METRIC] and target != "cuda":
        raise RerunError(f"a {target} rerun measures no memory: peak memory is measured on CUDA only")


def chosen_implementations(request: RerunRequest, target: str, implementations: Sequence[str] | None,
                           registry: PluginRegistry) -> list[str]:
    """The implementations ``rerun_workload`` would time for this request (all available ones when none are named)."""
    _, chosen = _plugin_and_implementations(registry, request.family, target, implementations, request.dtype)
    return list(chosen)


def device_for(target: str, index: int) -> str:
    return f"cuda:{index}" if target == "cuda" else "cpu"


def capture_environment(target: str, device: str, registry: PluginRegistry | None = None) -> dict[str, Any]:
    """The host description: ``generate_environment`` then every ``update_environment``; RerunError, naming the
    hook, where a plugin's raises, the answer lacks the hardware every rerun records or the environment is no JSON
    data."""
    hook = (registry or get_registry()).manager.hook
    try:
        environment = hook.generate_environment(target=target, device=device)
    except Exception as error:  # a plugin's code: any failure stops the rerun with its reason
        raise RerunError(f"a plugin's generate_environment failed: {error!r}") from error
    hardware = environment.get("hardware") if isinstance(environment, dict) else None
    if not (isinstance(hardware, dict) and all(isinstance(hardware.get(key), str)
                                               for key in ("vendor", "product", "architecture"))):
        raise RerunError("generate_environment answered no hardware with vendor, product and architecture: "
                         f"{str(environment)[:200]}")
    try:
        hook.update_environment(environment=environment, target=target, device=device)
    except Exception as error:
        raise RerunError(f"a plugin's update_environment failed: {error!r}") from error
    try:  # every result's bundle line carries it: checked before anything is measured, not after
        json.dumps(environment, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise RerunError(f"generate_environment and update_environment made an environment that is no JSON data: "
                         f"{error}") from error
    return environment


def now_utc() -> str:
    """When a workload's results were observed, to the microsecond: two reruns of one workload on one host may end
    within one second (two GPUs, two commands at once), and a result's identity is its measurement, host and this
    time, so a time cut to the second made the later one a conflicting copy of the earlier."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def completed_workload(definition: FamilyDefinition, parameters: Mapping[str, Any],
                       options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A requested workload's parameters and options with the family's defaults filled in: what its plugin builds,
    times and counts (a result records the workload as requested)."""
    defaults = dict(definition.defaults)
    return ({**{k: v for k, v in defaults.items() if k in definition.parameters}, **parameters},
            {**{k: v for k, v in defaults.items() if k not in definition.parameters}, **options})


def hook_description(plugin: LoadedPlugin, hook_name: str) -> str:
    """How an error names one of a plugin's hooks: ``<plugin>'s build_workload hook (<family> on <target>)``."""
    record = plugin.record
    return f"{plugin.name}'s {hook_name} hook ({record.family.name} on {record.target})"


def hook_answer(registry: PluginRegistry, plugin: LoadedPlugin, hook_name: str, **kwargs):
    """A family hook's answer; RerunError naming the hook and the plugin where it fails."""
    try:
        return registry.call(plugin, hook_name, **kwargs)
    except PLUGIN_FAULTS as error:
        raise RerunError(f"{hook_description(plugin, hook_name)} failed: {type(error).__name__}: {error}") from error


def plugin_cost(registry: PluginRegistry, plugin: LoadedPlugin, parameters: Mapping[str, Any], dtype: str,
                options: Mapping[str, Any], pass_: str) -> WorkloadCost:
    """What a plugin's ``workload_cost`` hook counts for a completed workload (:func:`completed_workload`): the one
    count a rerun records and an importer checks a result's against; RerunError where the hook fails or answers no
    WorkloadCost."""
    cost = hook_answer(registry, plugin, "workload_cost", parameters=parameters, dtype=dtype, options=options,
                       pass_=pass_)
    if not isinstance(cost, WorkloadCost):
        raise RerunError(f"{hook_description(plugin, 'workload_cost')} returned {type(cost).__name__}, "
                         "not a WorkloadCost")
    return cost


class _PluginCalls:
    """The family hooks of one plugin, with the workload values completed from the definition, and the workload's
    cost (asked first: a plugin whose ``workload_cost`` fails stops the rerun before anything is measured)."""

    def __init__(self, registry: PluginRegistry, plugin: LoadedPlugin, request: RerunRequest, device: str):
        self.registry, self.plugin, self.device = registry, plugin, device
        definition = plugin.record.family
        self.parameters, self.options = completed_workload(definition, request.parameters, request.options)
        missing = [name for name in definition.parameters if name not in self.parameters]
        if missing:
            raise RerunError(f"{definition.name} needs parameters {', '.join(missing)}")
        problem = definition.option_problem(self.options)
        if problem:
            raise RerunError(problem)
        self.dtype, self.pass_ = request.dtype, request.pass_
        try:
            specs = definition.tensors({**self.parameters, **self.options}, self.dtype)
        except PLUGIN_FAULTS as error:  # a plugin's code: its own rerun stops with the reason, never a traceback
            raise RerunError(f"{plugin.name}'s derive_tensors ({definition.name} on {plugin.record.target}) failed: "
                             f"{type(error).__name__}: {error}") from error
        self.expected = {spec.name: spec for spec in specs}
        self.cost = self._workload_cost()

    def _hook(self, hook_name: str) -> str:
        return hook_description(self.plugin, hook_name)

    def _answer(self, hook_name: str, **kwargs):
        return hook_answer(self.registry, self.plugin, hook_name, **kwargs)

    def _workload_cost(self) -> WorkloadCost:
        return plugin_cost(self.registry, self.plugin, self.parameters, self.dtype, self.options, self.pass_)

    def _tensors_by_name(self, hook_name: str, **kwargs) -> dict[str, Any]:
        """The answer of a hook that answers tensors by name (``build_workload``, ``reference_outputs``), as a dict;
        RerunError naming the hook, the plugin, what it returned and what it should have, where it is anything
        else (a list, None, a NumPy array among the values, an empty mapping, a mapping that cannot be read)."""
        import torch

        answer = self._answer(hook_name, **kwargs)
        wanted = "not a mapping of tensor names to torch.Tensor"
        if not isinstance(answer, Mapping):
            raise RerunError(f"{self._hook(hook_name)} returned {type(answer).__name__}, {wanted}")
        try:
            tensors = dict(answer.items())
        except PLUGIN_FAULTS as error:
            raise RerunError(f"{self._hook(hook_name)} returned {type(answer).__name__} that cannot be read "
                             f"({type(error).__name__}: {error}), {wanted}") from error
        if not tensors:
            raise RerunError(f"{self._hook(hook_name)} returned an empty {type(answer).__name__}, {wanted}")
        for name, value in tensors.items():
            if not isinstance(name, str) or not isinstance(value, torch.Tensor):
                raise RerunError(f"{self._hook(hook_name)} returned {type(answer).__name__} whose {name!r:.40} is "
                                 f"{type(value).__name__}, {wanted}")
        return tensors

    def call(self, hook_name: str, **kwargs):
        return self.registry.call(self.plugin, hook_name, **kwargs)

    def prepare_pass(self, implementation: Implementation, workload: Workload):
        return self.registry.prepare_pass(self.plugin, implementation, workload, self.pass_)

    def tensors(self, seed: int) -> dict[str, Any]:
        """One seeded set of the workload's tensors, checked against the family definition and the device."""
        import torch

        tensors = self._tensors_by_name("build_workload", parameters=self.parameters, dtype=self.dtype,
                                        options=self.options, seed=seed, device=self.device)
        hook = self._hook("build_workload")
        for name, spec in self.expected.items():
            tensor = tensors.get(name)
            if tensor is None:
                raise RerunError(f"{hook} made no {name!r}")
            if tuple(tensor.shape) != spec.shape or dtype_name(tensor.dtype) != spec.dtype:
                raise RerunError(f"{hook} made {name} {dtype_name(tensor.dtype)} "
                                 f"{list(tensor.shape)}; the definition says {spec.dtype} {list(spec.shape)}")
        if "grad_output" not in tensors:  # PreparedPass.on_workload reads it whatever the pass: else a KeyError later
            raise RerunError(f"{hook} made no 'grad_output' (every workload has one: the upstream gradient of the "
                             "backward and full passes, shaped like the forward output)")
        extra = set(tensors) - set(self.expected) - {"grad_output"}
        if extra:
            raise RerunError(f"{hook} made tensors the definition does not name: {', '.join(sorted(extra))}")
        elsewhere = sorted(name for name, tensor in tensors.items() if tensor.device != torch.device(self.device))
        if elsewhere:
            raise RerunError(f"{hook} made {', '.join(elsewhere)} on {tensors[elsewhere[0]].device}, not on the "
                             f"workload's device {self.device}")
        return tensors

    def reference_outputs(self, workload: Workload) -> dict[str, Any]:
        """The family's float64 answer on ``workload``, detached: what an implementation's outputs are checked
        against."""
        expected = self._tensors_by_name("reference_outputs", workload=workload, pass_=self.pass_)
        return {name: tensor.detach() for name, tensor in expected.items()}

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
    last_outputs: dict[str, dict] = {}
    unmoved: set[str] = set()  # answered the same outputs to a later trial's different inputs
    plan = correctness.trials_for(trials, calls.dtype)
    constrained = calls.plugin.record.family.constrained_inputs
    for number, trial in enumerate(plan, start=1):
        phase = f"correctness trial {number}"
        reference_workload = calls.workload(trial.seed, trial.inputs(calls.tensors(trial.seed), constrained))
        expected = calls.reference_outputs(reference_workload)
        for contestant in contestants:
            if contestant.error:
                continue
            try:
                with contestant.guarded(compiling=True), contestant.prepared.context():
                    timing.load_inputs(contestant.tensors, reference_workload.tensors)
                    contestant.prepared.setup()
                    correctness.poison_allocator(expected, dtype, calls.device)
                    outputs = contestant.prepared.run()
                    correctness.check_answer(outputs)
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
            if correctness.same_outputs(last_outputs.get(contestant.name), copied):
                unmoved.add(contestant.name)
            last_outputs[contestant.name] = copied
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
        failure = record.tolerance_failure()
        if failure and contestant.name in unmoved:
            failure += correctness.UNMOVED_OUTPUTS
        contestant.error = contestant.error or failure
    return records


def _audit(calls: _PluginCalls, contestants: Sequence[timing.Contestant], seeds: Sequence[int],
           input_sets: integrity.InputSets, records: Mapping[str, correctness.CorrectnessRecord]) -> None:
    """Check the timed calls each contestant's audit kept against the reference on the inputs they got; a wrong
    one is an integrity violation (the correctness trials passed, so the timed calls computed something else).

    Each output is judged at no less than the largest scale it had on the seeded correctness trials: on a
    secret input set a loss can cancel to nearly zero (GRPO's, whose advantages are drawn around zero), and
    its honest rounding divided by that near-zero value is not a wrong output; a replayed, skipped or
    cheapened one is still off by the output's whole scale."""
    dtype = torch_dtype(calls.dtype)
    for contestant in contestants:
        if contestant.error:
            continue
        record = records[contestant.name]
        tolerance = record.tolerance
        scales = {name: max(trial[name].reference.norm for trial in record.figures) for name in record.figures[0]}
        try:
            for kept in sorted(contestant.audit.kept, key=lambda kept: kept.call):
                workload = calls.workload(seeds[kept.input_set], input_sets.fed(kept.input_set, kept.offset))
                expected = calls.reference_outputs(workload)
                try:
                    figures = correctness.check_trial(kept.outputs, kept.outputs, expected, {}, dtype)
                except correctness.IncorrectOutput as failure:
                    raise integrity.IntegrityViolation(f"timed call {kept.call}: {failure}") from failure
                at_scale = {name: correctness.OutputFigures(
                    correctness.Reference(found.reference.shape, max(found.reference.norm, scales.get(name, 0.0))),
                    found.difference_norm) for name, found in figures.items()}
                errors = correctness.POLICY.errors(at_scale)
                error = errors[correctness.worst_output(errors)]
                if not error <= tolerance:  # a NaN error fails too
                    raise integrity.IntegrityViolation(
                        f"timed call {kept.call} of {contestant.audit.seen} returned a wrong output (relative L2 "
                        f"error {error:.3g}, tolerance {tolerance:g}), though its correctness trials passed")
        except Exception as failure:
            contestant.fail("audit", failure)


def _prepared_contestants(calls: _PluginCalls, chosen: Mapping[str, Implementation],
                          protocol: Mapping[str, Any]) -> list[timing.Contestant]:
    """One contestant per implementation, each prepared on its own tensors; a failure is kept, not raised."""
    contestants = []
    for name, implementation in chosen.items():
        workload = calls.workload(seed=0)
        contestant = timing.Contestant(name=name, prepared=None, tensors=workload.tensors,
                                       budget=timing.Budget(protocol["budgetSeconds"]))
        contestants.append(contestant)
        try:
            with contestant.guarded(compiling=True):
                prepared = calls.prepare_pass(implementation, workload)
            if isinstance(prepared, PreparedPass):
                contestant.prepared = prepared
            else:
                answered = "nothing" if prepared is None else f"{type(prepared).__name__}, not a PreparedPass,"
                contestant.error = f"prepare: the plugin's prepare_pass answered {answered} for {name}"
        except Exception as error:
            contestant.fail("prepare", error)
    return contestants


def _settled_details(prepared) -> dict[str, Any]:
    """What the implementation settled on while running (autotuned configs), to add to its details."""
    if prepared is None or prepared.settled_details is None:
        return {}
    try:
        settled = dict(prepared.settled_details())
        json.dumps(settled, allow_nan=False)  # a child process sends them, and every result records them, as JSON
        return settled
    except Exception as error:  # a report about details must not cost the run
        return {"settledDetailsError": f"{type(error).__name__}: {error}"}


def _settled_implementation(implementation: Implementation, settled: Mapping[str, Any]) -> Implementation:
    """The implementation with its settled details added (refused, and said so, where they contradict its record)."""
    try:
        return dataclasses.replace(implementation, details={**implementation.details, **settled})
    except ValueError as error:  # a settled ``tf32`` that disagrees with the declared math mode
        return dataclasses.replace(implementation, details={**implementation.details,
                                                            "settledDetailsError": f"ValueError: {error}"})


@dataclass
class Measured:
    """What the harness measured of one implementation, as plain data: made where it ran (this process, or a child
    process of its own, which sends it as JSON: ``runners.isolation``) and turned into results by ``rerun_workload``.

    ``samples`` to ``host_synchronization`` are its contestant's (``runners.timing.Contestant``), ``correctness``
    its record's document; ``input_seeds`` to ``violations`` what ``integrity_section`` records; ``memory`` and
    ``memory_error`` its peaks' section or why there is none (both None off CUDA, which measures no memory);
    ``telemetry`` the GPU's as it was timed there; ``isolation`` where it was measured.
    """

    name: str
    isolation: str
    error: str | None
    samples: list[list[float]]
    host_exposed: int
    host_inclusive: list[float]
    host_synchronization: dict[str, Any] | None
    correctness: dict[str, Any]
    input_seeds: list[int]
    timed_calls: int
    audited_calls: list[int]
    distinct_addresses: int
    wall_clock: list[str | None]
    violations: list[str]
    settled_details: dict[str, Any]
    memory: dict[str, Any] | None
    memory_error: str | None
    telemetry: dict[str, Any]

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.samples)

    @classmethod
    def failed(cls, name: str, error: str, implementation: Implementation, request: RerunRequest, target: str,
               protocol: Mapping[str, Any], violations: Sequence[str] = ()) -> "Measured":
        """An implementation of which its child process measured nothing, and why."""
        trials = protocol["correctnessTrials"]
        record = correctness.CorrectnessRecord(
            tolerance=correctness.tolerance_for(request.dtype, implementation.uses_tf32),
            trials=len(correctness.trials_for(trials, request.dtype)), uses_tf32=implementation.uses_tf32, figures=[])
        return cls(name=name, isolation=isolation.CHILD_PROCESS, error=error, samples=[], host_exposed=0,
                   host_inclusive=[], host_synchronization=None,
                   correctness=record.as_document(correctness.policy_document(trials)), input_seeds=[],
                   timed_calls=0, audited_calls=[], distinct_addresses=0, wall_clock=[], violations=list(violations),
                   settled_details={}, memory=None, memory_error=error if target == "cuda" else None,
                   telemetry=telemetry.Unavailable("nothing was measured").as_document())

    def answer(self) -> dict[str, Any]:
        """What a child process sends back: everything but the name and the isolation, which its parent knows."""
        document = dataclasses.asdict(self)
        del document["name"], document["isolation"]
        return document

    @classmethod
    def from_answer(cls, name: str, answer: Any) -> "Measured":
        """A child process's :meth:`answer`, checked field by field; ValueError when it is not one."""
        if not isinstance(answer, dict) or set(answer) != set(ANSWER_SHAPES):
            raise ValueError(f"an answer with fields {sorted(answer) if isinstance(answer, dict) else answer!r:.200}, "
                             f"not {sorted(ANSWER_SHAPES)}")
        wrong = sorted(field for field, shape in ANSWER_SHAPES.items() if not isolation.conforms(answer[field], shape))
        if wrong or not all(answer["samples"]):
            raise ValueError(f"an answer whose {', '.join(wrong) or 'samples'} are not what the harness records")
        return cls(name=name, isolation=isolation.CHILD_PROCESS, **answer)


ANSWER_SHAPES = {"error": (str, None), "samples": [[float]], "host_exposed": int, "host_inclusive": [float],
                 "host_synchronization": (dict, None), "correctness": dict, "input_seeds": [int], "timed_calls": int,
                 "audited_calls": [int], "distinct_addresses": int, "wall_clock": [(str, None)], "violations": [str],
                 "settled_details": dict,
                 "memory": (dict, None), "memory_error": (str, None), "telemetry": dict}
"""The JSON shape of each field of a child's answer (``isolation.conforms``)."""


def measure(calls: _PluginCalls, chosen: Mapping[str, Implementation], protocol: Mapping[str, Any], target: str,
            device_index: int, progress: Callable[[str], None], where: str = isolation.HARNESS_PROCESS,
            metrics: Sequence[str] = METRICS) -> list[Measured]:
    """Prepare, check, warm up, time (interleaved), audit and measure the memory of ``chosen`` in this process:
    the built-in implementations in the harness process, or one third-party implementation in its child.
    Without ``speed`` in ``metrics`` nothing is timed; without ``memory``, no peak is measured."""
    device = calls.device
    if target == "cuda":
        import torch

        torch.cuda.set_device(device)  # events and streams below belong to the current device
    contestants = _prepared_contestants(calls, chosen, protocol)
    records = _check_correctness(calls, contestants, chosen, protocol["correctnessTrials"], progress)
    seeds = integrity.secret_seeds(protocol["inputSets"])
    input_sets = integrity.InputSets([calls.tensors(seed) for seed in seeds])
    audit_bytes = timing.audit_bytes_each(target, device, len(contestants))
    for contestant in contestants:
        contestant.audit = integrity.AuditReservoir(protocol["auditCalls"], max_bytes=audit_bytes)
    timer = timing.make_timer(target, device)
    gpu = telemetry.open_telemetry(target, device_index, protocol["telemetry"])
    try:
        gpu.wait_until_ready()
    except telemetry.TelemetryRefused as refused:
        raise RerunError(f"{device} is not fit to time on: {refused}") from refused
    if METRIC in metrics:
        timing.warm_up(contestants, protocol, timer, input_sets)
        timing.check_host_synchronization(contestants, target, timer, input_sets)
        timing.run_trials(contestants, protocol, timer, input_sets, progress, after_trial=gpu.sample)
        _audit(calls, contestants, seeds, input_sets, records)
    measures_memory = memory.METRIC in metrics and target == "cuda"
    peaks = memory.measure_peaks(contestants, input_sets[0], device) if measures_memory else {}
    policy = correctness.policy_document(protocol["correctnessTrials"])
    measured = []
    for contestant in contestants:
        memory_section, memory_error = peaks.get(contestant.name, (None, None))
        measured.append(Measured(
            name=contestant.name, isolation=where, error=contestant.error, samples=contestant.samples,
            host_exposed=contestant.host_exposed, host_inclusive=contestant.host_inclusive,
            host_synchronization=contestant.host_synchronization,
            correctness=records[contestant.name].as_document(policy), input_seeds=list(seeds),
            timed_calls=contestant.audit.seen, audited_calls=sorted(kept.call for kept in contestant.audit.kept),
            distinct_addresses=contestant.addresses.distinct if contestant.addresses else 0,
            wall_clock=list(contestant.wall_clock), violations=list(contestant.violations),
            settled_details=_settled_details(contestant.prepared), memory=memory_section, memory_error=memory_error,
            telemetry=gpu.as_document()))
    return measured


def integrity_section(measured: Measured, warnings: Sequence[scan.ScanWarning]) -> dict[str, Any]:
    """What a result records of its integrity checks: the secret seeds, the audited calls, how many distinct
    addresses its inputs had, how many GPU batches disagreed with the wall clock, any violations, the static
    scan's warnings about the source of the module that provides the implementation (which never decide), and
    the process it was measured in."""
    return {"inputSeeds": list(measured.input_seeds), "timedCalls": measured.timed_calls,
            "distinctAddresses": measured.distinct_addresses, "auditedCalls": list(measured.audited_calls),
            "wallClockBatches": {"checked": len(measured.wall_clock),
                                 "disagreed": sum(message is not None for message in measured.wall_clock)},
            "violations": list(measured.violations), "scanWarnings": [warning.as_document() for warning in warnings],
            "isolation": measured.isolation}


def _measured_in_child(request: RerunRequest, plugin: LoadedPlugin, provider: LoadedPlugin,
                       implementation: Implementation, target: str, device_index: int, protocol: Mapping[str, Any],
                       metrics: Sequence[str], progress: Callable[[str], None]) -> Measured:
    """One third-party implementation measured in a child process of its own (``runners.isolation``)."""
    job = {"request": {"family": request.family, "pass_": request.pass_, "parameters": dict(request.parameters),
                       "dtype": request.dtype, "options": dict(request.options)},
           "sources": [dataclasses.asdict(source) for source in dict.fromkeys((plugin.source, provider.source))],
           "implementation": implementation.name, "target": target, "device_index": device_index,
           "protocol": dict(protocol), "metrics": list(metrics)}
    progress(f"  {implementation.name}: measured alone, in a child process")
    try:
        answer = isolation.run_in_child(_measure_in_child, job, protocol["budgetSeconds"], progress)
    except isolation.ChildFailed as failure:
        return Measured.failed(implementation.name, str(failure), implementation, request, target, protocol,
                               failure.violations)
    try:
        return Measured.from_answer(implementation.name, answer)
    except ValueError as garbage:
        return Measured.failed(implementation.name, f"child process: answered garbage ({garbage})", implementation,
                               request, target, protocol)


INTEGRITY_VIOLATION = f"{integrity.IntegrityViolation.__name__}: "
"""How discovery's description of a plugin refused for tampering begins."""


def _measure_in_child(child: isolation.Child, job: Mapping[str, Any]) -> None:
    """A child process's work (``runners.isolation``): capture the harness's functions, then load the family's
    plugin and the implementation's module, measure that one implementation and answer with plain data."""
    integrity.harness_functions()  # before any plugin code is imported
    child.started()
    request, name, target = RerunRequest(**job["request"]), job["implementation"], job["target"]
    registry = registry_of(PluginSource(**source) for source in job["sources"])
    if registry.broken:
        tampered = [plugin.error.removeprefix(INTEGRITY_VIOLATION) for plugin in registry.broken
                    if plugin.error.startswith(INTEGRITY_VIOLATION)]
        if tampered:
            child.failed(f"import: integrity violation: {'; '.join(tampered)}",
                         [f"import: {violation}" for violation in tampered])
        else:
            child.failed("child process: its plugins did not load as in discovery ("
                         + "; ".join(f"{Path(plugin.name).name}: {plugin.error}" for plugin in registry.broken) + ")")
        return
    try:
        plugin, chosen = _plugin_and_implementations(registry, request.family, target, [name], request.dtype)
        calls = _PluginCalls(registry, plugin, request, device_for(target, job["device_index"]))
        [measured] = measure(calls, chosen, job["protocol"], target, job["device_index"], child.progress,
                             isolation.CHILD_PROCESS, job["metrics"])
    except Exception as error:  # the harness's own steps failed on this plugin: the parent reports it and goes on
        child.failed(f"child process: {type(error).__name__}: {error}")
        return
    child.answer(measured.answer())


def rerun_workload(request: RerunRequest, *, target: str, device_index: int = 0,
                   implementations: Sequence[str] | None = None, protocol: Mapping[str, Any],
                   environment: Mapping[str, Any] | None = None, registry: PluginRegistry | None = None,
                   progress: Callable[[str], None] = lambda message: None,
                   metrics: Sequence[str] = METRICS) -> list[RerunResult]:
    """Re-measure one workload and pass with every requested implementation; one result per implementation and
    metric of ``metrics`` (memory only on CUDA: a memory-only rerun is checked but not timed).

    The built-in implementations are measured here, interleaved; each third-party one after them, alone, in a
    child process of its own (``runners.isolation``)."""
    registry = registry or get_registry()
    if request.pass_ not in PASSES:
        raise RerunError(f"pass must be one of {', '.join(PASSES)}, not {request.pass_!r}")
    check_metrics(metrics, target)
    plugin, chosen = _plugin_and_implementations(registry, request.family, target, implementations, request.dtype)
    device = device_for(target, device_index)
    calls = _PluginCalls(registry, plugin, request, device)
    if environment is None:
        environment = capture_environment(target, device, registry)
    providers = {implementation.name: source for implementation, source in registry.implementation_sources(plugin)}
    isolated = [name for name in chosen if isolation.third_party(plugin, providers[name])]

    progress(f"{request.family} {request.pass_} {calls.dtype} "
             + " ".join(f"{k}={v}" for k, v in sorted(calls.parameters.items())) + f" on {device}: {', '.join(chosen)}")
    in_process = {name: implementation for name, implementation in chosen.items() if name not in isolated}
    measured = {found.name: found for found in measure(calls, in_process, protocol, target, device_index, progress,
                                                       metrics=metrics)} if in_process else {}
    if isolated and target == "cuda":
        import torch

        torch.cuda.empty_cache()  # what the built-ins held goes back to the device the children allocate on
    for name in isolated:
        measured[name] = _measured_in_child(request, plugin, providers[name], chosen[name], target, device_index,
                                            protocol, metrics, progress)
    observed_at = now_utc()
    shapes = [spec.shape for spec in calls.expected.values()]

    results = []
    for name, implementation in chosen.items():
        found = measured[name]
        shared = dict(family=request.family, pass_=request.pass_, parameters=request.parameters, dtype=request.dtype,
                      options=request.options,
                      implementation=_settled_implementation(implementation, found.settled_details),
                      correctness=found.correctness, environment=environment, protocol=protocol,
                      observed_at=observed_at, cost=calls.cost)
        outcome = f"failed: {found.error}" if found.error else "correct"
        if METRIC in metrics:
            results.append(RerunResult(
                **shared, metric=METRIC, rerun_of=request.rerun_of.get(name),
                status="passed" if found.passed else "failed", error=found.error,
                timing=timing.timing_summary(found.samples, found.host_exposed, found.host_inclusive,
                                             found.host_synchronization) if found.passed else None,
                integrity=integrity_section(found, scan.scan_module(providers[name].module, shapes)),
                telemetry=found.telemetry))
            outcome = f"median {results[-1].timing['median'] / 1e6:.4g} ms" if found.passed else outcome
        if found.memory is not None or found.memory_error is not None:
            results.append(RerunResult(
                **shared, metric=memory.METRIC, rerun_of=request.memory_rerun_of.get(name),
                status="failed" if found.memory_error else "passed", error=found.memory_error, timing=None,
                memory=found.memory))
            outcome += f", peak {found.memory['median']:.5g} MB" if found.memory else ""
        progress(f"  {name}: {outcome}")
    return results
