"""An implementation's details as the run page shows them: settings as rows, autotuned configs as tables.

An autotuned Triton implementation records, per kernel, the configs the autotuner chose
and the keys it chose them for (``{"config": {"BLOCK_M": 16, ...}, "key": ["1024", ...]}``).
Shown flat these read as Python dict reprs; here each kernel gets a small table, one
row per chosen config, its columns the config's parameters plus the autotune key. A
kernel for which nothing was tuned (the workload never launched it) is left out rather
than shown as an empty value.
"""

from .. import formatting


def autotuned_table(kernel: str, choices: list) -> dict:
    columns = []
    for choice in choices:
        columns += [name for name in (choice.get("config") or {}) if name not in columns]
    rows = [[formatting.parameter_value((choice.get("config") or {}).get(name, "")) for name in columns]
            + [" · ".join(map(str, choice.get("key") or []))] for choice in choices]
    return {"kernel": kernel, "columns": columns + ["autotune key"], "rows": rows}


def implementation_details(details: dict) -> dict:
    """``rows``: the plain settings, none empty; ``autotuned``: a table per kernel the autotuner tuned."""
    autotuned = details.get("autotuned") if isinstance(details.get("autotuned"), dict) else {}
    plain = {name: value for name, value in details.items() if not (name == "autotuned" and autotuned)}
    return {
        "rows": [(name, text) for name, text in formatting.flatten(plain) if text != ""],
        "autotuned": [autotuned_table(kernel, choices) for kernel, choices in sorted(autotuned.items())
                      if isinstance(choices, list) and choices],
    }
