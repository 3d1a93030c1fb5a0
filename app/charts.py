"""Chart geometry, computed on the server: the template only draws what this returns.

``line_chart`` places one line per implementation: the swept parameter across,
the median up. An axis turns logarithmic when its values span a wide range
(sweeps of powers of two across; latencies spanning decades up), and the chart
says so. A swept value that is not a number (a model name) gets evenly spaced
categories. Colours come from a palette that stays distinguishable for common
colour-vision deficiencies, and each line also has its own dash pattern.
"""

import math

from . import formatting

WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 30, 52
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4", "3 1")
LOG_X_SPAN = 16  # max/min of the swept values at which the x axis goes log2
LOG_Y_SPAN = 20  # max/min of the medians at which the y axis goes log10


def _scale(low: float, high: float, logarithmic: bool, start: float, end: float):
    if logarithmic:
        low, high = math.log(low), math.log(high)
    span = (high - low) or 1.0

    def place(value):
        value = math.log(value) if logarithmic else value
        return round(start + (value - low) / span * (end - start), 1)

    return place


def _nice_ticks(low: float, high: float, count: int = 5) -> list:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _log_ticks(low: float, high: float) -> list:
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if low <= value <= high:
                ticks.append(value)
    if len(ticks) > 8:
        ticks = [t for t in ticks if str(t).lstrip("0.").startswith("1")]
    return ticks or [low, high]


def line_chart(series: dict, *, x_name: str, unit: str, title: str) -> dict:
    """``series`` maps a label to rows with ``x_number``/``x_value``, ``median``, ``p20``, ``p80``, ``id``."""
    rows = [row for points in series.values() for row in points]
    chart = {"width": WIDTH, "height": HEIGHT, "title": title, "x_label": x_name, "series": [], "x_ticks": [],
             "y_ticks": [], "empty": not rows, "plot": {"x0": LEFT, "x1": WIDTH - RIGHT, "y0": TOP,
                                                        "y1": HEIGHT - BOTTOM, "x_mid": (LEFT + WIDTH - RIGHT) // 2,
                                                        "tick_x": LEFT - 6, "tick_y": HEIGHT - BOTTOM + 16,
                                                        "label_y": HEIGHT - 8, "y_label_y": 14}}
    if not rows:
        chart.update(x_scale="", y_scale="", y_label="")
        return chart
    numeric = all(row["x_number"] is not None for row in rows)
    if numeric:
        xs = sorted({row["x_number"] for row in rows})
        log_x = xs[0] > 0 and xs[-1] / xs[0] >= LOG_X_SPAN
        place_x = _scale(xs[0], xs[-1], log_x, LEFT + 12, WIDTH - RIGHT - 12)
        x_of = lambda row: place_x(row["x_number"])  # noqa: E731
        shown = xs if len(xs) <= 12 else xs[::math.ceil(len(xs) / 12)]
        chart["x_ticks"] = [{"pos": place_x(x), "label": formatting.parameter_value(x)} for x in shown]
        chart["x_scale"] = "log₂" if log_x else "linear"
    else:
        categories = sorted({row["x_value"] for row in rows})
        place_c = _scale(0, max(len(categories) - 1, 1), False, LEFT + 24, WIDTH - RIGHT - 24)
        x_of = lambda row: place_c(categories.index(row["x_value"]))  # noqa: E731
        chart["x_ticks"] = [{"pos": place_c(i), "label": c} for i, c in enumerate(categories)]
        chart["x_scale"] = "categories"

    medians = [row["median"] for row in rows]
    low, high = min(medians), max(medians)
    log_y = low > 0 and high / low >= LOG_Y_SPAN
    if log_y:
        low, high = low / 1.25, high * 1.25
        ticks = _log_ticks(low, high)
    else:
        low, high = 0.0, high * 1.1 or 1.0
        ticks = _nice_ticks(low, high)
    place_y = _scale(low, high, log_y, HEIGHT - BOTTOM, TOP)
    shown_unit = formatting.common_unit([high], unit)
    chart["y_ticks"] = [{"pos": place_y(t), "label": formatting.in_unit(t, shown_unit)}
                        for t in ticks if t > 0 or not log_y]
    chart["y_scale"] = "log₁₀" if log_y else "linear"
    chart["y_label"] = f"median ({shown_unit[0]})"

    for index, (label, points) in enumerate(sorted(series.items())):
        points = sorted(points, key=lambda row: x_of(row))
        markers = [{"cx": x_of(row), "cy": place_y(row["median"]), "id": row["id"],
                    "title": f"{label} · {x_name} {row['x_value']}: {formatting.quantity(row['median'], unit)}"}
                   for row in points]
        chart["series"].append({
            "label": label,
            "color": PALETTE[index % len(PALETTE)],
            # one dash further each time the colours come round: no two of 64 lines share colour and dash
            "dash": DASHES[(index + index // len(PALETTE)) % len(DASHES)],
            "points": " ".join(f"{m['cx']},{m['cy']}" for m in markers),
            "markers": markers,
        })
    return chart
