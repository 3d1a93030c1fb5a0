"""Rerun the adversarial plugins of ``tests/plugins/adversarial`` on this host and print what caught each cheat.

Issue 25 asks that every known way of gaming a rerun be caught on the hardware it needs. The tests
check it (``tests/test_runners_integrity.py`` on the CPU, ``tests/test_runners_integrity_cuda.py``
on a GPU); this script makes the same reruns under a chosen protocol, prints one row per
implementation (status, integrity violations, error) and the plugins refused at import, and with
``--out`` appends the results to a JSON-lines bundle, the evidence a GPU run leaves behind:

    python3 benchmarks/adversarial_reruns.py --target cuda --out benchmarks/adversarial/h200-adversarial.jsonl
    python3 benchmarks/adversarial_reruns.py --target cpu --protocol smoke

The bundle lives outside ``results/``: its families exist only in the adversarial plugin set, and ``make serve``
imports every bundle under ``results/``.
"""

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVERSARIAL = ROOT / "tests" / "plugins" / "adversarial"
sys.path.insert(0, str(ROOT))
os.environ["KERNELINDEX_PLUGINS_DIR"] = str(ADVERSARIAL)  # before discovery reads it

from runners.discovery import get_registry  # noqa: E402
from runners.rerun import RerunRequest, rerun_workload  # noqa: E402
from runners.timing import protocol_document  # noqa: E402

WORKLOADS = {  # the tests' workloads: the linear layer's is its "published" shape
    "integrity_linear": RerunRequest("integrity_linear", "forward", {"rows": 64, "features": 32}, "fp32"),
    "integrity_matmul": RerunRequest("integrity_matmul", "forward", {"rows": 1024, "features": 1024}, "fp32"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--protocol", choices=("standard", "smoke"), default="standard")
    parser.add_argument("--out", type=Path, help="append every result to this JSON-lines bundle")
    args = parser.parse_args()

    registry = get_registry()
    for broken in registry.broken:
        print(f"refused at import: {Path(broken.name).name}: {broken.error}")
    families = {plugin.record.family.name for plugin in registry.kernel_plugins
                if plugin.record.target == args.target}
    protocol = protocol_document(args.protocol, args.target)
    print(f"\n{'family':18} {'implementation':26} {'status':7} error, or what the implementation reported")
    for family, request in WORKLOADS.items():
        if family not in families:
            print(f"{family:18} {'-':26} {'-':7} no {args.target} plugin")
            continue
        results = rerun_workload(request, target=args.target, protocol=protocol, registry=registry,
                                 metrics=("speed",))
        for result in results:  # a cache that never hit passes: its details say how often it did
            why = result.error or " ".join(f"{key}={value}" for key, value in result.implementation.details.items())
            print(f"{family:18} {result.implementation.name:26} {result.status:7} {why}")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a", encoding="utf-8") as bundle:
                bundle.writelines(result.bundle_line() + "\n" for result in results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
