"""The evidence page (``/about/evidence``): what each evidence level means and what moves a run between them.

Every evidence badge links here (to the level's anchor), so the words a badge abbreviates
are written once, in this context, and its JSON twin carries the same text.
"""

from flask import url_for

from ..models import EVIDENCE_LEVELS
from .titles import EVIDENCE_SUMMARIES, evidence_title

HOW_REACHED = {
    "source-reported": "Every imported row starts here: the upstream harness published the figure and marked it "
                       "passed. KernelIndex keeps the figure as published and ranks it only among other "
                       "source-reported figures.",
    "kernelindex-rerun": "A KernelIndex GPU host rebuilt the workload, checked the output against a float64 "
                         "reference under the published correctness policy, and timed it under the published "
                         "protocol. The rerun is a new run linked to the one it reproduces; reruns rank among "
                         "themselves.",
    "kernelindex-replicated": "Current passed reruns of the same measurement, posted with rerun-host tokens issued "
                              "to two or more different hosts, agree within their spreads. A host is the identity "
                              "its token names, never what a result claims: one host posting twice, or two GPUs of "
                              "one host, is not a replication. If a later rerun disagrees, the runs go back to "
                              "KernelIndex rerun.",
}

RULES = (
    "Only KernelIndex reruns raise a level: a rerun by a token-holding KernelIndex host is the one way from "
    "source-reported to KernelIndex rerun.",
    "Replication needs agreeing reruns from two different hosts' tokens.",
    "Community attestations (notes and reproductions) are shown beside a run and never change its level, "
    "however many agree or disagree.",
    "A run superseded by a newer observation of the same measurement keeps its page and level but leaves the ranking.",
)


def evidence_anchor(level: str) -> str:
    return f"level-{level}"


def evidence_page_url(level: str | None = None) -> str:
    """The evidence page, at ``level``'s explanation when given: where every badge links."""
    return url_for("site.evidence_page", _anchor=evidence_anchor(level) if level else None)


def evidence_badge(level: str) -> dict:
    """What a badge shows: the level's name, a one-line ``title`` and the link to its explanation."""
    return {"level": level, "title": evidence_title(level), "summary": EVIDENCE_SUMMARIES.get(level, ""),
            "url": evidence_page_url(level) if level in EVIDENCE_LEVELS else evidence_page_url()}


def evidence_page() -> dict:
    return {
        "title": "Evidence levels",
        "levels": [{"level": level, "anchor": evidence_anchor(level), "title": evidence_title(level),
                    "summary": EVIDENCE_SUMMARIES[level], "how_reached": HOW_REACHED[level]}
                   for level in EVIDENCE_LEVELS],
        "rules": list(RULES),
    }
