"""A timing protocol as a person reads it: warm-up, trials, samples, inputs, flush, launch queue.

A rerun protocol's ``measurement.parameters`` repeats the harness, timer, primary
statistic, comparability family and notes the protocol already states; those are shown
once. The rest read as sentences with units (``256 MiB before each call``,
``2× the call's time, 50 µs – 10 ms``). A parameter this module does not know is still
shown, under its own name, so nothing in the digested document is hidden; one that is null (a
CPU protocol's GPU-only steps: no L2 flush, no telemetry) is a step not taken, and is left out.
"""

from .. import formatting

STATED_ELSEWHERE = {"harness", "timer", "primaryStatistic", "comparabilityFamily", "notes"}
MIB = 1024 * 1024


def launch_queue(queue: dict) -> str:
    delay = (f"{formatting.quantity(queue['minDelayNs'], 'ns')} – {formatting.quantity(queue['maxDelayNs'], 'ns')}"
             if "minDelayNs" in queue and "maxDelayNs" in queue else "")
    factor = f"{formatting.parameter_value(queue['delayFactor'])}× the call's time" if "delayFactor" in queue else ""
    return "; ".join(part for part in (queue.get("method", ""), ", ".join(p for p in (factor, delay) if p)) if part)


def isolation(section: dict) -> str:
    """Where each implementation is measured, and the deadline of a child process (``runners.isolation``)."""
    deadline = section.get("deadline") or {}
    limits = (f" (deadline: {deadline['startSeconds']} s to start, then {deadline['budgetFactor']}× the time budget)"
              if {"startSeconds", "budgetFactor"} <= set(deadline) else "")
    return "; ".join(f"{where}: {section[key]}" for where, key in (("harness process", "harnessProcess"),
                                                                   ("child process", "childProcess"))
                     if key in section) + limits


def known_rows(parameters: dict) -> list:
    """``(label, sentence)`` for the parameters KernelIndex's rerun protocol defines, in reading order."""
    p = parameters
    rows = []
    if "preset" in p or "name" in p:
        rows.append(("preset", " ".join(filter(None, (p.get("preset"), f"({p['name']})" if "name" in p else None)))))
    if "warmupReps" in p:
        rows.append(("warm-up", f"{p['warmupReps']} calls before timing"))
    if "trials" in p:
        samples = f" × {p['samplesPerTrial']} samples" if "samplesPerTrial" in p else ""
        order = f", {p['interleaving']}" if "interleaving" in p else ""
        rows.append(("trials", f"{p['trials']} trials{samples}{order}"))
    if "inputSets" in p and "inputSeedSource" in p:  # version 2: fresh values every call
        rows.append(("inputs", f"{p['inputSets']} sets from secret seeds (each result records its own), every "
                               "floating input shifted one element further each call"))
    elif "inputSets" in p:
        seeds = f" (seeds {', '.join(map(str, p['inputSeeds']))})" if p.get("inputSeeds") else ""
        rows.append(("inputs", f"{p['inputSets']} seeded sets{seeds}, rotated call by call"))
    if isinstance(p.get("inputAddresses"), dict):  # version 3
        rows.append(("input addresses", f"a new address for every call ({p['inputAddresses']['addresses']} per "
                                        f"input, {p['inputAddresses']['stepBytes']} bytes apart)"))
    if isinstance(p.get("l2FlushBytes"), (int, float)):  # None on a CPU: no cache is flushed there
        rows.append(("L2 flush", f"{formatting.significant(p['l2FlushBytes'] / MIB)} MiB written before each call"))
    if isinstance(p.get("launchQueue"), dict):
        rows.append(("launch queue", launch_queue(p["launchQueue"])))
    if "statistics" in p:
        rows.append(("statistics", ", ".join(p["statistics"]) if isinstance(p["statistics"], list) else p["statistics"]))
    if "correctnessTrials" in p:
        rows.append(("correctness trials", str(p["correctnessTrials"])))
    if "auditCalls" in p:
        bound = (f" (fewer where their copies would take more than an equal share of "
                 f"{formatting.significant(p['auditDeviceMemory'] * 100)}% of the free GPU memory)"
                 if isinstance(p.get("auditDeviceMemory"), (int, float)) else "")
        rows.append(("audit", f"{p['auditCalls']} timed calls drawn at random{bound}, checked against the reference"))
    if isinstance(p.get("wallClock"), dict) and {"relative", "absoluteNsPerCall"} <= set(p["wallClock"]):
        rows.append(("wall-clock check", f"samples within {formatting.significant(p['wallClock']['relative'] * 100)}% "
                     f"of each batch's wall-clock time + "
                     f"{formatting.quantity(p['wallClock']['absoluteNsPerCall'], 'ns')} per call"
                     + (f", in all but {formatting.significant(p['wallClock']['disagreeingBatchesAllowed'] * 100)}% "
                        "of an implementation's batches" if "disagreeingBatchesAllowed" in p["wallClock"] else "")))
    if "budgetSeconds" in p:
        rows.append(("time budget", formatting.quantity(p["budgetSeconds"] * 1e9, "ns")))
    if isinstance(p.get("isolation"), dict):
        rows.append(("isolation", isolation(p["isolation"])))
    return rows


KNOWN = {"preset", "name", "warmupReps", "trials", "samplesPerTrial", "interleaving", "inputSets", "inputSeeds",
         "inputSeedSource", "perCallOffset", "inputAddresses", "l2FlushBytes", "launchQueue", "statistics",
         "correctnessTrials", "auditCalls", "auditDeviceMemory", "wallClock", "budgetSeconds", "isolation"}


def protocol_section(protocol: dict) -> dict:
    """Harness, timer and primary statistic, the protocol's parameters as sentences, comparability, notes once."""
    harness = protocol.get("harness") or {}
    comparability = protocol.get("comparability") or {}
    measurement = dict(protocol.get("measurement") or {})
    parameters = measurement.pop("parameters", None) or {}
    rows = formatting.flatten(measurement)
    rows += known_rows(parameters)
    rows += formatting.flatten({name: value for name, value in parameters.items()
                                if name not in KNOWN and name not in STATED_ELSEWHERE and value is not None})
    rows.append(("comparabilityFamily", comparability.get("family", "")))
    return {"harness": harness.get("name", ""), "repository": harness.get("repository"),
            "rows": [(name, text) for name, text in rows if text != ""],
            "notes": comparability.get("notes") or parameters.get("notes", "")}
