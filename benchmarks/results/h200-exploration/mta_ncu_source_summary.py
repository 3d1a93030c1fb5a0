"""Dev only: summarise an ncu ``--page source --print-source sass --csv`` export of one kernel: stall reasons over
all samples, the top stall sites, and the instructions that issue loads, wait on them or multiply, in address order."""
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
names = rows[head]
data = [r for r in rows[head + 1:] if len(r) == len(names)]
samples = names.index("Warp Stall Sampling (All Samples)")
executed = names.index("Instructions Executed")
reasons = [i for i, n in enumerate(names) if n.startswith("stall_") and "Not Issued" not in n]
total = sum(float(r[samples] or 0) for r in data)
by_reason = {names[i][6:]: sum(float(r[i] or 0) for r in data) for i in reasons}
print(f"{len(data)} SASS instructions, {total:.0f} stall samples")
print("by reason:", ", ".join(f"{k} {v / total:.1%}" for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1])
                              if v / total >= 0.01))
print("\ntop stall sites:")
for r in sorted(data, key=lambda r: -float(r[samples] or 0))[:15]:
    top = max(reasons, key=lambda i: float(r[i] or 0))
    print(f"  {float(r[samples]) / total:5.1%}  {r[0][-5:]}  {r[1].strip()[:70]:70s} ({names[top][6:]})")
print("\nloads, waits and products, in address order (samples, times executed):")
keys = ("LDGSTS", "DEPBAR", "BAR.SYNC", "HGMMA", "STG", "EXIT")
for r in data:
    if any(k in r[1] for k in keys):
        print(f"  {r[0][-5:]} {float(r[samples] or 0):4.0f} {int(float(r[executed] or 0)):6d}  {r[1].strip()[:80]}")
