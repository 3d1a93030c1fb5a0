"""Whether a rerun result holds together: its summaries are those of its own figures, and its claims those this
server can work out itself.

A result states figures twice: raw (the timing samples, each output's norms in every correctness trial) and
summarized (median, p20, p80 and cv; each output's error, the run's relative L2 error, the tolerance and the
verdict). Pages show the summaries, and ranks come from them, so a summary that is not that of its figures would
be shown as measured. The harness writes both from one computation (``runners.timing.timing_summary``,
``runners.memory.memory_summary``, ``runners.correctness.CorrectnessCheck.as_document``); this module does the
same computation again and refuses a result where the two disagree.

It also refuses claims the server can check against what it knows: the architecture of a GPU it knows
(``runners.hardware.KNOWN_GPUS``), the math mode of a bf16 or fp16 workload (its dtype), the cost of the workload
(its family's own ``workload_cost`` hook: the run page's achieved rates and share of the floor divide by it) and
the settings of a published protocol whose comparability family a result ranks in (``runners.timing``).

Every check here holds for every result the harness has written (the bundles under ``benchmarks/``).
"""

import math

from runners import timing
from runners.correctness import POLICY_VERSIONS, UNREADABLE_RECORD, rejudge, worst_output
from runners.discovery import PluginNotFound, get_registry
from runners.hardware import KNOWN_GPUS
from runners.rerun import RerunError, completed_workload, plugin_cost

RELATIVE = 1e-9
"""How far a stated figure may lie from the one computed again (relative): the same arithmetic on the same numbers
gives the same float, and this leaves room for a harness that sums in another order."""
CV_RELATIVE = 1e-6
"""The same for the coefficient of variation, a square root of a sum over every sample."""

ARCHITECTURES = {**{product: architecture for product, _, architecture in KNOWN_GPUS.values()},
                 **{name: architecture for name, (_, _, architecture) in KNOWN_GPUS.items()}}
"""The compute architecture of every GPU the harness names, by its product and by its full name."""

PUBLISHED_PROTOCOLS = {settings["comparabilityFamily"]: preset for preset, settings in timing.PROTOCOL_PRESETS.items()}
"""The preset each published comparability family is measured under (``kernelindex_rerun``: ``standard``)."""
PUBLISHED_SETTINGS = ("name", "preset", "trials", "samplesPerTrial", "warmupReps", "inputSets", "correctnessTrials",
                      "timer")
"""What a result ranking in a published family must state as ``runners.timing.protocol_document`` publishes it:
what makes two medians comparable (bundles made before protocol version 3 state no ``auditCalls``)."""


def agrees(stated, computed, relative: float = RELATIVE) -> bool:
    """Whether a stated figure is the computed one (NaN agrees with NaN)."""
    if math.isnan(stated) or math.isnan(computed):
        return math.isnan(stated) and math.isnan(computed)
    return stated == computed or abs(stated - computed) <= relative * max(abs(stated), abs(computed))


def statistics_problem(where: str, figures: dict, samples: list) -> str | None:
    """Why a section's median, p20 and p80 are not those of its samples (as ``runners.timing.summary_figures``
    computes them), or None."""
    for name, computed in timing.summary_figures(samples).items():
        if not agrees(figures[name], computed):
            return f"{where}.{name} is {figures[name]:.10g}, but its samples give {computed:.10g}"
    return None


def figures_problem(result: dict) -> str | None:
    """Why a result's timing or memory summary is not that of its own samples, or None."""
    if (timed := result["timing"]) is not None:
        pooled = [sample for trial in timed["samples"] for sample in trial]
        if problem := statistics_problem("timing", timed, pooled):
            return problem
        cv = timing.coefficient_of_variation(pooled)
        if not agrees(timed["cv"], cv, CV_RELATIVE):
            return f"timing.cv is {timed['cv']:.6g}, but its samples give {cv:.6g}"
    if (peaks := result["memory"]) is not None:
        return statistics_problem("memory", peaks, peaks["samples"])
    return None


def correctness_problem(result: dict) -> str | None:
    """Why a correctness record's summary (each output's error, relL2Error, tolerance, passed) is not what its
    figures give under the policy version it names, or why a result that says it passed has a record that says it
    did not; None where it holds together, or where the record has no figures to judge by (version 1)."""
    correctness = result["correctness"]
    if result["status"] == "passed" and correctness.get("passed") is False:
        return "it says passed, but its correctness record says the check did not pass"
    policy = correctness.get("policy")
    published = POLICY_VERSIONS.get(policy.get("version")) if isinstance(policy, dict) else None
    if published is None or "outputFigures" not in correctness or "trials" not in correctness:
        return None
    try:
        verdict = rejudge(result, published)
    except UNREADABLE_RECORD as error:
        return f"its correctness record cannot be judged under policy version {published.version} ({error!r})"
    errors = {name: high for name, (_, high) in verdict.errors.items()}
    stated = correctness.get("outputErrors")
    if stated is not None and (set(stated) != set(errors)
                               or not all(agrees(stated[name], errors[name]) for name in errors)):
        return (f"correctness.outputErrors {stated} are not the errors its figures give under policy version "
                f"{published.version} ({errors})")
    if errors and correctness.get("relL2Error") is not None:
        worst = errors[worst_output(errors)]
        if not agrees(correctness["relL2Error"], worst):
            return f"correctness.relL2Error is {correctness['relL2Error']:.6g}, but its figures give {worst:.6g}"
    if "tolerance" in correctness and not agrees(correctness["tolerance"], verdict.tolerance):
        return (f"correctness.tolerance is {correctness['tolerance']:g}, but policy version {published.version} "
                f"holds this workload (tf32={correctness.get('tf32')}) to {verdict.tolerance:g}")
    judged = verdict.status == "passed"
    if "passed" in correctness and correctness["passed"] != judged:
        return (f"correctness.passed is {str(correctness['passed']).lower()}, but its figures "
                f"{'pass' if judged else 'do not pass'} policy version {published.version}")
    return None


def math_mode_problem(result: dict) -> str | None:
    """Why a bf16 or fp16 workload's declared math mode is not its dtype (``runners.types.FP32_MATH_MODES``: only
    an fp32 workload has a choice), or None."""
    dtype, mode = result["workload"]["dtype"], result["implementation"].get("mathMode")
    if dtype != "fp32" and mode is not None and mode != dtype:
        return f"its implementation's math mode {mode!r} is not that of a {dtype} workload ({dtype!r})"
    return None


def architecture_problem(result: dict) -> str | None:
    """Why the architecture a result gives is not that of the GPU it names, where the GPU is one the harness knows."""
    hardware = result["environment"]["hardware"]
    stated = hardware.get("architecture")
    for name in (hardware.get("name"), hardware["product"]):
        if stated is not None and name in ARCHITECTURES and ARCHITECTURES[name] != stated:
            return f"environment.hardware names {name}, an {ARCHITECTURES[name]} GPU, with the architecture {stated}"
    return None


def comparability_family(result: dict) -> str:
    """The family of results a result ranks among: its protocol's, ``kernelindex_rerun`` where it names none."""
    return result["protocol"].get("comparabilityFamily", "kernelindex_rerun")


def protocol_problem(result: dict) -> str | None:
    """Why a result ranking in a published comparability family does not state that family's protocol as
    ``runners.timing.protocol_document`` publishes it for the result's target, or None: a one-sample result would
    otherwise rank beside standard reruns. Other families (a grid's) rank only among themselves."""
    family = comparability_family(result)
    if family not in PUBLISHED_PROTOCOLS:
        return None
    preset, target = PUBLISHED_PROTOCOLS[family], result["environment"].get("target")
    if target is None:
        return f"it ranks in {family}, whose protocol times each target its own way, but names no target"
    published, stated = timing.protocol_document(preset, target), result["protocol"]
    differing = [setting for setting in PUBLISHED_SETTINGS if stated.get(setting) != published[setting]]
    if differing:
        return (f"it ranks in {family}, but its protocol states "
                f"{', '.join(f'{setting} {stated.get(setting)!r}' for setting in differing)} where the "
                f"{preset} protocol published for {target} has "
                f"{', '.join(f'{setting} {published[setting]!r}' for setting in differing)}")
    return None


def cost_problem(result: dict) -> str | None:
    """Why a result's cost is not what its family's own ``workload_cost`` hook counts for its workload, pass and
    dtype (on this server's plugin of its target, its workload completed as a rerun completes it), or None."""
    family, workload, target = result["family"], result["workload"], result["environment"].get("target")
    if target is None:
        return f"its cost cannot be checked: it names no target whose {family} plugin counts it"
    registry = get_registry()
    try:
        plugin = registry.find(family, target)
        parameters, options = completed_workload(plugin.record.family, workload["parameters"], workload["options"])
        counted = plugin_cost(registry, plugin, parameters, workload["dtype"], options, result["pass_"]).as_document()
    except (PluginNotFound, RerunError) as error:
        return f"its cost cannot be checked: {error}"
    if result["cost"] != counted:
        return (f"its cost {result['cost']} is not what {family}'s workload_cost hook counts for its workload, "
                f"{result['pass_']} pass and {workload['dtype']} ({counted})")
    return None


def consistency_problem(result: dict) -> str | None:
    """The first reason a validated result does not hold together, or None."""
    return (figures_problem(result) or correctness_problem(result) or math_mode_problem(result)
            or architecture_problem(result) or protocol_problem(result) or cost_problem(result))
