"""Issue 25's A/B: does feeding inputs the protocol-3 way change what the honest implementations measure?

In one process, for the two reference workloads (fused neighborhood attention forward, seq 1024,
dilation 2, fp32; multi-token attention forward, L 1024, bf16: ``benchmarks/h200_reruns.sh`` and
``kernel_grid.py``'s references), each honest built-in implementation available here is prepared
and warmed up once, then timed in alternating rounds (A B, then B A, ...) two ways, with the same
timer, L2 flush and launch queue:

* **current**: the harness's own batches (``runners.timing.run_trials``): every call's inputs at a
  new address, its floating inputs rotated by a secret offset one element further each call, the
  audit's reservoir keeping copies of some outputs;
* **previous**: the way before issue 25, built here from the harness's primitives: four seeded
  input sets copied in turn into the same tensors (one address, no per-call offset, no audit).

It prints, per workload and implementation, the median and p20–p80 of each way's device-time
samples over all rounds, and the difference of the medians relative to the spread (the mean of
the two p20–p80 widths): within ±1, the protocols measure the same thing. On a CPU (``--target
cpu``) the workloads are shrunk so a try takes a minute.

    python3 benchmarks/protocol_ab.py [--target cuda] [--rounds 6] [--samples 20]
        [--family fna mta] [--without multi_token_attention:liger]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners import integrity, timing  # noqa: E402
from runners.discovery import get_registry  # noqa: E402
from runners.rerun import RerunRequest, _PluginCalls, chosen_implementations, device_for  # noqa: E402

WORKLOADS = {
    "cuda": {
        "fna": RerunRequest("fused_neighborhood_attention", "forward",
                            {"batch": 2, "heads": 8, "hidden": 512, "seq": 1024, "kernel_size": 7, "dilation": 2},
                            "fp32"),
        "mta": RerunRequest("multi_token_attention", "forward",
                            {"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1, "seq": 1024}, "bf16"),
    },
    "cpu": {
        "fna": RerunRequest("fused_neighborhood_attention", "forward",
                            {"batch": 1, "heads": 2, "hidden": 32, "seq": 64, "kernel_size": 7, "dilation": 2},
                            "fp32"),
        "mta": RerunRequest("multi_token_attention", "forward",
                            {"batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1, "seq": 64}, "fp32"),
    },
}
PREVIOUS_INPUT_SETS = 4  # what protocol 1 and 2 rotated through
WARMUP_CALLS = 5


def previous_inputs(contestant: timing.Contestant, input_sets):
    """Before each call, the previous way: the next input set copied into the same tensors, as it is."""
    def next_inputs():
        timing.load_inputs(contestant.tensors, input_sets[contestant.calls % len(input_sets)])
        contestant.calls += 1

    return next_inputs


def time_previous(contestant: timing.Contestant, timer, samples: int, input_sets) -> list[float]:
    """One batch of device-time samples fed the previous way, with the harness's timer; no audit."""
    with contestant.prepared.context():
        return timer.time_calls(contestant.prepared, samples, previous_inputs(contestant, input_sets)).samples


def time_current(contestant: timing.Contestant, timer, samples: int, input_sets) -> list[float]:
    """One trial of the harness's own (moving addresses, per-call offset, audit reservoir); its device-time samples."""
    before = len(contestant.samples)
    timing.run_trials([contestant], {"trials": 1, "samplesPerTrial": samples}, timer, input_sets)
    if contestant.error:
        raise RuntimeError(contestant.error)
    return [sample for trial in contestant.samples[before:] for sample in trial]


def summary(samples: list[float]) -> tuple[float, float, float]:
    return tuple(timing.summary_figures(samples).values())


def measure(request: RerunRequest, target: str, rounds: int, samples: int, without: list[str], registry):
    """Each implementation's samples under both ways, over alternating rounds: ``{name: {way: samples}}``."""
    device = device_for(target, 0)
    if target == "cuda":
        import torch

        torch.cuda.set_device(device)
    names = [name for name in chosen_implementations(request, target, None, registry)
             if f"{request.family}:{name}" not in without]
    calls = _PluginCalls(registry, registry.find(request.family, target), request, device)
    input_sets = integrity.InputSets([calls.tensors(seed) for seed in integrity.secret_seeds(PREVIOUS_INPUT_SETS)])
    timer = timing.make_timer(target, device)
    measured = {}
    for name in names:
        workload = calls.workload(seed=0)
        contestant = timing.Contestant(name=name, prepared=None, tensors=workload.tensors,
                                       budget=timing.Budget(3600), audit=integrity.AuditReservoir(8))
        contestant.prepared = calls.prepare_pass(registry.implementation(calls.plugin, name), workload)
        timing.warm_up([contestant], {"warmupReps": WARMUP_CALLS}, timer, input_sets)
        time_previous(contestant, timer, WARMUP_CALLS, input_sets)
        if contestant.error:
            print(f"{request.family} {name}: {contestant.error}", file=sys.stderr)
            continue
        ways = {"current": [], "previous": []}
        try:
            for round_ in range(rounds):
                order = ("current", "previous") if round_ % 2 == 0 else ("previous", "current")
                for way in order:
                    timed = time_current if way == "current" else time_previous
                    ways[way].extend(timed(contestant, timer, samples, input_sets))
        except RuntimeError as error:  # the harness invalidated it: say why, and go on with the others
            print(f"{request.family} {name}: {error}", file=sys.stderr)
            continue
        measured[name] = ways
        print(f"{request.family} {name}: {rounds} rounds done", file=sys.stderr, flush=True)
    return measured


def print_table(request: RerunRequest, measured: dict) -> None:
    print(f"\n{request.family} {request.pass_} {request.dtype} "
          + " ".join(f"{key}={value}" for key, value in request.parameters.items()) + " (µs)")
    print(f"{'implementation':<22}{'current median':>15}{'p20–p80':>22}{'previous median':>17}{'p20–p80':>22}"
          f"{'Δ median':>10}{'Δ / spread':>12}")
    for name, ways in measured.items():
        current, previous = summary(ways["current"]), summary(ways["previous"])
        spread = ((current[2] - current[1]) + (previous[2] - previous[1])) / 2
        difference = current[0] - previous[0]
        relative = f"{difference / spread:+.2f}" if spread else "-"
        print(f"{name:<22}{current[0] / 1e3:>15.2f}{f'{current[1] / 1e3:.2f}–{current[2] / 1e3:.2f}':>22}"
              f"{previous[0] / 1e3:>17.2f}{f'{previous[1] / 1e3:.2f}–{previous[2] / 1e3:.2f}':>22}"
              f"{difference / 1e3:>+10.2f}{relative:>12}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default: 6 on cuda, 2 on cpu)")
    parser.add_argument("--samples", type=int, default=None, help="timed calls per way and round "
                                                                    "(default: 20 on cuda, 5 on cpu)")
    parser.add_argument("--family", nargs="+", default=["fna", "mta"], choices=("fna", "mta"))
    parser.add_argument("--without", nargs="*", default=["multi_token_attention:liger"],
                        metavar="FAMILY:IMPLEMENTATION",
                        help="implementations left out (default: Liger's multi-token attention, which does not "
                             "finish compiling within a rerun's budget on an H200; see h200_reruns.sh)")
    arguments = parser.parse_args()
    cuda = arguments.target == "cuda"
    rounds = arguments.rounds or (6 if cuda else 2)
    samples = arguments.samples or (20 if cuda else 5)
    integrity.harness_functions()  # captured before any plugin is imported, as a rerun does
    registry = get_registry()
    requests = [WORKLOADS[arguments.target][family] for family in arguments.family]
    print(f"{rounds} alternating rounds of {samples} timed calls per way; current = protocol "
          f"{timing.PROTOCOL_VERSION} inputs, previous = {PREVIOUS_INPUT_SETS} sets copied into fixed tensors")
    for request in requests:  # each table as soon as it is measured, so a stopped run keeps what it finished
        print_table(request, measure(request, arguments.target, rounds, samples, arguments.without, registry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
