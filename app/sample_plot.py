"""A rerun's raw samples as a picture, computed on the server: the template only draws what this returns.

Samples are placed in the order they were taken (trial after trial, each trial's samples
left to right), coloured by trial, against a shared y axis in one unit; a band marks the
p20–p80 spread and a line the median. Warm-up drift (a slope within a trial), a slow
trial (a shifted cluster) and outliers show at a glance. No JavaScript is needed.
"""

from . import formatting
from .charts import PALETTE, _nice_ticks

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 16, 40
HEADROOM = 0.05  # of the y range, above and below the extreme samples


def sample_plot(samples: list, *, median: float, p20: float, p80: float, unit: str) -> dict | None:
    """``samples`` is one list per trial, each in time order; None when there is nothing to plot."""
    trials = [[value for value in trial if value is not None] for trial in samples or []]
    flat = [value for trial in trials for value in trial]
    if not flat:
        return None
    low, high = min(flat + [p20]), max(flat + [p80])
    margin = (high - low) * HEADROOM or high * HEADROOM or 1.0
    low, high = max(low - margin, 0.0), high + margin
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM
    step = (x1 - x0) / max(len(flat) - 1, 1)

    def y_of(value):
        return round(y1 - (value - low) / (high - low) * (y1 - y0), 1)

    shown_unit = formatting.common_unit([high], unit)
    points, position = [], 0
    for index, trial in enumerate(trials):
        for value in trial:
            points.append({"cx": round(x0 + position * step, 1), "cy": y_of(value), "trial": index + 1,
                           "color": PALETTE[index % len(PALETTE)], "title": f"trial {index + 1}: "
                           f"{formatting.in_unit(value, shown_unit)}"})
            position += 1
    return {
        "width": WIDTH, "height": HEIGHT, "x0": x0, "x1": x1, "y0": y0, "y1": y1,
        "points": points,
        "band": {"y": y_of(p80), "height": round(y_of(p20) - y_of(p80), 1)},
        "median_y": y_of(median),
        "y_ticks": [{"y": y_of(t), "label": formatting.in_unit(t, shown_unit)}
                    for t in _nice_ticks(low, high, 4) if low <= t <= high],
        "trials": [{"number": i + 1, "color": PALETTE[i % len(PALETTE)], "samples": len(t)}
                   for i, t in enumerate(trials)],
        "label": (f"{len(flat)} samples in {len(trials)} trials, in time order; median "
                  f"{formatting.in_unit(median, shown_unit)}, p20–p80 {formatting.spread_in_unit(p20, p80, shown_unit)}"),
        "label_y": HEIGHT - 12, "x_mid": (x0 + x1) // 2, "tick_x": x0 - 6,
    }
