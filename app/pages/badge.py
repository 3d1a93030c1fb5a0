"""Evidence cards to embed in a README: a run's or a family's badge, and the Markdown to copy.

A run's badge says its evidence level and median; where a KernelIndex rerun of it agrees
(its median within ``AGREEMENT`` of the run's), it adds "reproduced within X% on <GPU>",
X being the widest agreeing rerun's difference rounded up, and the GPU the rerun's (a
rerun may run on other hardware than the source's, and the badge says so). A family's badge says the best evidence level among
its current runs, how many there are, and the widest difference among its agreeing
reproductions. A family has no single median: its runs span workloads and GPUs.
"""

import math

from flask import url_for

from .. import formatting
from ..models import EVIDENCE_LEVELS, Family, Run
from .titles import evidence_title

AGREEMENT = 0.10  # a rerun agrees when its median is within 10% of the run's
LABEL = "KernelIndex"
COLOURS = {"source-reported": "#6c6c6c", "kernelindex-rerun": "#0b6e4f", "kernelindex-replicated": "#064e8a"}
CHARACTER_WIDTH = 6.6  # px per character of 11 px Verdana, enough for the widest common text
PADDING = 10


def reproduction_percent(source: Run, rerun: Run) -> float | None:
    """How far ``rerun``'s median is from ``source``'s, in percent, when it agrees; otherwise None."""
    if not source.median or rerun.median is None:
        return None
    difference = abs(rerun.median / source.median - 1)
    return difference * 100 if difference <= AGREEMENT else None


def agreeing(pairs) -> list:
    """``(percent, rerun GPU)`` of the ``(source, rerun)`` pairs whose rerun passed, stands and agrees."""
    found = ((reproduction_percent(source, rerun), rerun.gpu_product) for source, rerun in pairs
             if rerun.status == "passed" and rerun.invalidated_at is None)
    return [(percent, gpu) for percent, gpu in found if percent is not None]


def within(agreements: list, *, name_gpu: bool) -> str | None:
    """``reproduced within 6% on NVIDIA H200`` (the widest agreeing difference), or None."""
    if not agreements:
        return None
    percent, gpu = max(agreements)
    return f"reproduced within {math.ceil(round(percent, 6)) or 1}%" + (f" on {gpu}" if name_gpu else "")


def card(message_parts: list, evidence: str) -> dict:
    message = " · ".join(part for part in message_parts if part)
    label_width = round(len(LABEL) * CHARACTER_WIDTH + PADDING)
    message_width = round(len(message) * CHARACTER_WIDTH + PADDING)
    return {"label": LABEL, "message": message, "colour": COLOURS.get(evidence, COLOURS["source-reported"]),
            "label_width": label_width, "message_width": message_width, "width": label_width + message_width,
            "label_x": label_width / 2, "message_x": label_width + message_width / 2,
            "title": f"{LABEL}: {message}"}


def run_badge(run: Run, reruns) -> dict:
    """``run``'s card; ``reruns`` are the runs that rerun it (a run page has read them already)."""
    agreements = agreeing((run, rerun) for rerun in reruns)
    median = formatting.quantity(run.median, run.unit) if run.median is not None else run.status
    return card([evidence_title(run.evidence), median, within(agreements, name_gpu=True)], run.evidence)


def family_badge(family: Family) -> dict:
    current = Run.current().where(Run.kernel == family.name)
    levels = {level for (level,) in current.select(Run.evidence).distinct().tuples()}
    best = max(levels, key=EVIDENCE_LEVELS.index) if levels else "source-reported"
    # rows, not ids: the family's (kernel, implementation, gpu, superseded_by, ...) index holds no id, and COUNT(id)
    # walked every current run's entry in 017_current_runs_newest_first's index, which does
    count = current.count()
    source = Run.alias()
    reruns = (Run.current(Run.median, Run.gpu_product, Run.status, Run.invalidated_at,
                          source.median.alias("source_median"))
              .join(source, on=(Run.rerun_of == source.id)).where(Run.kernel == family.name).objects())
    agreements = agreeing((Run(median=rerun.source_median), rerun) for rerun in reruns)
    return card([family.title, evidence_title(best), f"{count:,} runs", within(agreements, name_gpu=False)], best)


def markdown_snippet(run: Run, reruns) -> str:
    """The Markdown that embeds ``run``'s badge (``reruns`` as for :func:`run_badge`), linked to its page."""
    badge = url_for("badges.run_badge", run_id=run.id, _external=True)
    page = url_for("runs.run_page", run_id=run.id, _external=True)
    return f"[![{run_badge(run, reruns)['title']}]({badge})]({page})"
