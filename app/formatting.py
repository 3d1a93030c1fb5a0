"""Numbers, dates and digests as a person reads them, and the Jinja filters that apply them.

One rule for every quantity a page shows: three significant figures (a whole number keeps
every digit: ``4,321 s`` or ``3,351 GB/s``, never a made-up ``4,320 s``), in one unit per
table or chart chosen from its values. Stored figures keep full precision (latency in
ns, memory in MB). A lone figure reads in its best unit (``84.6 ms``, ``720 µs``,
``52.5 MB``); figures shown together (a comparison, a table, an axis) share the unit
:func:`common_unit` picks and are formatted with :func:`in_unit` (``0.315 ms`` beside
``84.6 ms``); a p20–p80 spread reads ``84.5–84.6 ms``. JSON twins carry the numbers and
the unit in separate fields (:func:`in_unit_number`, :func:`ratio_fields`); manifests
never go through this module.
"""

import math
from datetime import date, datetime

# (unit, size of one of it in the stored unit), smallest first
TIME_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))
# memory is stored in the MB of Liger-Kernel's rows and KernelIndex's reruns, 2**20 bytes (runners.memory): its larger
# units are binary multiples of that MB, so a figure in GB is the source's MB / 1024, never / 1000
MEMORY_UNITS = (("MB", 1.0), ("GB", 1024.0), ("TB", 1024.0 ** 2))
STORED_SCALES = {"ns": TIME_UNITS, "MB": MEMORY_UNITS}
SIGNIFICANT_FIGURES = 3


def significant(value: float, figures: int = SIGNIFICANT_FIGURES) -> str:
    """``value`` to ``figures`` significant figures, without exponent or trailing zeros: 84.55 → ``84.6``; the
    integer part is never rounded away (1115.3 → ``1,115``), since a zero standing for a measured digit misleads."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(figures - 1 - magnitude, 0)
    rounded = round(value, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > magnitude:  # 999.6 → 1000: one figure fewer
        decimals = max(decimals - 1, 0)
        rounded = round(value, decimals)
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def scale_for(stored_unit: str):
    return STORED_SCALES.get(stored_unit, ((stored_unit, 1.0),))


def best_unit(value: float, stored_unit: str) -> tuple[str, float]:
    """The largest unit in which ``value`` (in ``stored_unit``) is at least 1."""
    scale = scale_for(stored_unit)
    chosen = scale[0]
    for unit in scale:
        # 999.6 µs rounds to 1000 µs at three figures: it reads 1 ms
        if abs(value) >= unit[1] or float(significant(abs(value) / unit[1]).replace(",", "")) >= 1:
            chosen = unit
    return chosen


def quantity(value, stored_unit: str) -> str:
    """``84550209, "ns"`` → ``84.6 ms``; ``None`` → an em dash."""
    if value is None:
        return "—"
    unit, size = best_unit(value, stored_unit)
    return f"{significant(value / size)} {unit}"


def common_unit(values, stored_unit: str) -> tuple[str, float]:
    """One display unit for figures shown together: the best unit of the largest."""
    present = [abs(v) for v in values if v is not None]
    return best_unit(max(present) if present else 0.0, stored_unit)


def in_unit(value, unit: tuple[str, float]) -> str:
    """``314960`` in ``("ms", 1e6)`` → ``0.315 ms``."""
    if value is None:
        return "—"
    return f"{significant(value / unit[1])} {unit[0]}"


def figure(value):
    """``value`` rounded as pages show it, as a number: 84.5502 → ``84.6`` (``None`` stays ``None``)."""
    return None if value is None else float(significant(value).replace(",", ""))


def in_unit_number(value, unit: tuple[str, float]):
    """``314960`` in ``("ms", 1e6)`` → ``0.315``: the figure a JSON twin carries beside its unit."""
    return None if value is None else figure(value / unit[1])


def spread_in_unit(p20, p80, unit: tuple[str, float]) -> str:
    """A p20–p80 spread in one unit, the unit written once: ``84.5–84.6 ms``."""
    if p20 is None or p80 is None:
        return "—"
    return f"{significant(p20 / unit[1])}–{significant(p80 / unit[1])} {unit[0]}"


def spread(p20, p80, stored_unit: str) -> str:
    """A lone spread in the best unit of its upper end: ``84550209, 84650000, "ns"`` → ``84.6–84.7 ms``."""
    return spread_in_unit(p20, p80, common_unit([p20, p80], stored_unit))


def times(value: float) -> str:
    """A ratio above 1 to three significant figures, or as many more as it takes not to read 1: a member ranked
    below #1 at 1.0014 times its median is ``1.001``, never the ``1`` that says they are the same."""
    figures = SIGNIFICANT_FIGURES
    while significant(value, figures) == "1" and figures < 17:  # 17 figures tell any two doubles apart
        figures += 1
    return significant(value, figures)


RATIO_WORDS = {"speed": ("slower", "faster"), "memory": ("more memory", "less memory")}
"""How a ratio to #1 reads for each metric, above 1 and below it: lower is better for both, but a peak of memory is
neither slower nor faster."""


def ratio(value, metric: str = "speed") -> str:
    """A ratio to #1 as people say it: ``268× slower``, ``1.04× slower``, ``1.001× faster``, ``same``; of memory
    ``2.5× more memory``, ``1.2× less memory``."""
    if value is None:
        return "—"
    if value == 1:
        return "same"
    above, below = RATIO_WORDS[metric]
    return f"{times(value)}× {above}" if value > 1 else f"{times(1 / value)}× {below}"


def ratio_fields(value) -> dict:
    """A ratio to #1 for JSON: ``{"ratio": 5.04, "direction": "slower"}`` (``faster`` ratios are inverted)."""
    if value is None:
        return {"ratio": None, "direction": None}
    if value == 1:
        return {"ratio": 1.0, "direction": "same"}
    shown = times(value if value > 1 else 1 / value)
    return {"ratio": float(shown.replace(",", "")), "direction": "slower" if value > 1 else "faster"}


def day(value) -> str:
    """A date as ``2025-05-27``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value[:10]
    if isinstance(value, (datetime, date)):
        return value.strftime("%Y-%m-%d")
    return str(value)


def moment(value) -> str:
    """A timestamp as ``2025-05-27 19:26:55 UTC``."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return day(value)


def utc_timestamp(value) -> str:
    """A stored timestamp (naive UTC) as ``2025-05-27T19:26:55Z``: the one form every CSV download writes."""
    return value.isoformat() + "Z" if isinstance(value, datetime) else value


def short_digest(digest: str, hex_digits: int = 16) -> str:
    """``sha256:b614dce1fec1aaee…``: the algorithm and the first ``hex_digits`` hex digits."""
    if not digest:
        return ""
    algorithm, _, hex_part = digest.partition(":")
    if not hex_part:
        return digest[:hex_digits] + "…"
    return f"{algorithm}:{hex_part[:hex_digits]}…" if len(hex_part) > hex_digits else digest


def parameter_value(value) -> str:
    """A workload parameter as written in a summary line: ``true`` for booleans, numbers plain."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def flatten(value, prefix="") -> list:
    """Nested settings as ``(name, text)`` rows: ``{"a": {"b": 1}}`` → ``[("a.b", "1")]``."""
    if isinstance(value, dict):
        rows = []
        for name, inner in value.items():
            rows.extend(flatten(inner, f"{prefix}.{name}" if prefix else name))
        return rows
    if isinstance(value, list):
        return [(prefix, ", ".join(parameter_value(item) for item in value))]
    return [(prefix, parameter_value(value))]


def shape(dimensions) -> str:
    """A tensor shape as ``[2, 1024, 512]``."""
    return "[" + ", ".join(str(d) for d in dimensions) + "]"


def thousands(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


FILTERS = {
    "quantity": quantity,
    "spread": spread,
    "ratio": ratio,
    "day": day,
    "moment": moment,
    "short_digest": short_digest,
    "parameter_value": parameter_value,
    "shape": shape,
    "thousands": thousands,
    "significant": significant,
}


def register_filters(app) -> None:
    app.jinja_env.filters.update(FILTERS)
