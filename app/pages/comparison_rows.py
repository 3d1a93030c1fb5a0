"""The comparison page's member rows: figures in one unit, and spread bars on one shared axis.

The axis is linear unless the group spans more than ``LOG_AXIS_SPAN`` (largest p80 over
smallest p20): at 268× a linear axis shrinks the leader's bar to nothing, so the axis
turns logarithmic and says so.
"""

import math

from .. import formatting
from .links import run_url
from .titles import implementation_title

AXIS_HEADROOM = 1.05  # the axis ends a little past the largest p80 (and, on a log axis, starts before the least p20)
LOG_AXIS_SPAN = 10.0
MIN_BAR_PERCENT = 0.4  # a spread of zero width still shows as a sliver


def spread_ends(member: dict) -> tuple:
    low = member["p20"] if member["p20"] is not None else member["median"]
    high = member["p80"] if member["p80"] is not None else member["median"]
    return low, high


def bar_axis(members: list) -> dict:
    """Where 0% and 100% of the bars lie, and whether the axis is logarithmic."""
    ends = [end for member in members for end in spread_ends(member) if end]
    if not ends:
        return {"log": False, "low": 0.0, "high": 1.0}
    low, high = min(ends), max(ends) * AXIS_HEADROOM
    if low > 0 and high / low > LOG_AXIS_SPAN:
        return {"log": True, "low": math.log(low / AXIS_HEADROOM), "high": math.log(high)}
    return {"log": False, "low": 0.0, "high": high}


def placed(value, axis: dict) -> float:
    """``value`` as a percentage along the axis."""
    if not value:
        return 0.0
    position = math.log(value) if axis["log"] else value
    return round(100 * (position - axis["low"]) / ((axis["high"] - axis["low"]) or 1.0), 2)


def standing(position: int, member: dict, metric: str = "speed") -> tuple[str, str]:
    """The member's standing as a keyword for the twin and as the page words it."""
    if position == 0:
        return "leader", "#1"
    if member["tied_with_leader"]:
        return "tied", "tied with #1"
    if member["within_noise_of_leader"]:
        return "within_noise", "within noise of #1"
    return "ratio", formatting.ratio(member["ratio"], metric)


def execution_of(member: dict) -> tuple:
    """A rerun member's math mode and host-inclusive median (None for source rows, which record neither)."""
    details = member.get("details") or {}
    host = ((details.get("timing") or {}).get("hostInclusive") or {}).get("median")
    return (details.get("implementation") or {}).get("mathMode"), host


def mixed_math_modes(rows: list) -> str | None:
    """The group's sentence when its members compute in different math modes (they still rank together)."""
    modes = sorted({row["math_mode"] for row in rows if row["math_mode"]})
    if len(modes) < 2:
        return None
    return (f"Mixed math modes ({', '.join(modes)}): compare each member with those of its own or a looser "
            "mode; a TF32 figure beside an IEEE fp32 one is not like for like.")


def member_row(position: int, member: dict, shown_unit: tuple, axis: dict, current_id, metric: str = "speed") -> dict:
    low, high = spread_ends(member)
    math_mode, host_median = execution_of(member)
    left = placed(low, axis)
    keyword, words = standing(position, member, metric)
    return {
        "id": member["id"], "url": run_url(member["id"]), "rank": member["rank"],
        "implementation": implementation_title(member["implementation"]),
        "implementation_name": member["implementation"],
        "unit": shown_unit[0],
        "median": formatting.in_unit_number(member["median"], shown_unit),
        "p20": formatting.in_unit_number(member["p20"], shown_unit),
        "p80": formatting.in_unit_number(member["p80"], shown_unit),
        "median_text": formatting.in_unit(member["median"], shown_unit),
        "spread_text": formatting.spread_in_unit(member["p20"], member["p80"], shown_unit),
        "bar": {"left": left, "width": max(placed(high, axis) - left, MIN_BAR_PERCENT),
                "median": placed(member["median"], axis)},
        "standing": keyword, "standing_text": words,
        **formatting.ratio_fields(member["ratio"]),
        "math_mode": math_mode,
        "host_median_text": formatting.in_unit(host_median, shown_unit) if host_median else None,
        "current": member["id"] == current_id,
        "observed": formatting.day(member["observed_at"]),
    }


def member_rows(members: list, current_id=None, metric: str = "speed") -> tuple[list, dict]:
    """The members' rows in one display unit, with bars on a shared axis, ratios to #1 in the words of ``metric``;
    and that axis as the page labels it."""
    unit_name = members[0]["unit"] if members else "ns"
    shown_unit = formatting.common_unit([spread_ends(m)[1] for m in members], unit_name)
    axis = bar_axis(members)
    rows = [member_row(position, member, shown_unit, axis, current_id, metric)
            for position, member in enumerate(members)]
    top = math.exp(axis["high"]) if axis["log"] else axis["high"]
    bottom = math.exp(axis["low"]) if axis["log"] else 0.0
    return rows, {"unit": shown_unit[0], "scale": "log" if axis["log"] else "linear",
                  "min": formatting.in_unit(bottom, shown_unit), "max": formatting.in_unit(top, shown_unit)}
