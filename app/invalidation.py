"""Invalidated results: a result found gamed keeps its page and leaves every ranking (issue 25).

Two ways a result becomes invalidated. The rerun harness finds the implementation
tampering with the measurement at run time (``runners.integrity``): its result says so in
``integrity.violations`` and is recorded invalidated as it is stored
(``importers.kernelindex_rerun.harness_invalidation``). Or a
maintainer finds it later and says why (``flask invalidate``, the moderation page).
Either way the run keeps its page, manifest and links; its page, its JSON twin and the
API show the reason, who decided and when; and it leaves its comparison group's ranking
(``Run.rankable``) and any replication it took part in (a replicated rerun is a
plain rerun again, and the runs it agreed with are judged again without it).

A maintainer's invalidation made by mistake is taken back the same way, with a reason
(``flask reinstate``, the moderation page): the run ranks again, gets back the evidence level
its invalidation took, and its replications are judged again with it. The harness's cannot
be: what it caught is evidence, not a judgement.
Every maintainer's decision is kept (``InvalidationDecision``), and the run's page shows them.
"""

import unicodedata

from runners.names import BLANKS

from .comparison import rerank
from .db import database
from .importers.kernelindex_rerun import HARNESS, mark_replications
from .inputs import control_character_in, describe, direction_control_in, surrogate_in
from .locks import lock_scopes, retried
from .models import (INVALIDATED, KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, REINSTATED, InvalidationDecision, Run,
                     utcnow)

REASON_LENGTH = 2000


class InvalidationRefused(ValueError):
    """An invalidation or reinstatement that cannot be recorded: no reason, no decider, or the run not in a state
    to take it."""


def drawn(character: str) -> bool:
    """Whether a page shows ``character``: not white space, a blank (:data:`runners.names.BLANKS`) or an invisible
    format character (a zero-width space, a byte order mark)."""
    return not (character.isspace() or character in BLANKS or unicodedata.category(character) == "Cf")


def checked_reason_and_decider(reason: str, by: str, asked: str) -> tuple[str, str]:
    """``reason`` (the answer to ``asked``) and ``by`` as a decision records them, or InvalidationRefused saying
    what to change."""
    reason = (reason or "").replace("\r\n", "\n").replace("\r", "\n").strip()  # a browser's textarea sends CRLF
    by = (by or "").strip()
    if not any(drawn(character) for character in reason):  # blank on the page, as no reason at all
        raise InvalidationRefused(f"say {asked}")
    if not by:
        raise InvalidationRefused("say who decides")
    if by == HARNESS:  # its invalidations are evidence, which no maintainer's could be mistaken for
        raise InvalidationRefused(f"{HARNESS!r} is the rerun harness, not a maintainer")
    if len(reason) > REASON_LENGTH:
        raise InvalidationRefused(f"the reason is longer than {REASON_LENGTH} characters")
    for text in (reason, by):
        character = control_character_in(text)
        if character:
            raise InvalidationRefused(f"remove the control character {describe(character)}: only text, tabs and "
                                      "new lines are allowed")
        character = direction_control_in(text)
        if character:
            raise InvalidationRefused(f"remove the text-direction control {describe(character)}: it makes the "
                                      "text after it read as something else")
        character = surrogate_in(text)
        if character:  # bytes that are not UTF-8 on the command line (``--reason $'\xff'``)
            raise InvalidationRefused(f"the text holds bytes that are not UTF-8 text ({describe(character)}): "
                                      "write it in UTF-8")
    return reason, by[:Run.invalidated_by.max_length]


def found_by_harness(run: Run) -> bool:
    """Whether the harness invalidated ``run`` at run time, which no maintainer takes back."""
    return run.invalidated_by == HARNESS


def locked_run(run_id: str) -> Run:
    """``run_id`` as it stands once this transaction holds its workload scope (``app.locks``)."""
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        raise InvalidationRefused(f"no run {run_id}")
    lock_scopes([run.comparison_key.shared])
    return Run.get_by_id(run_id)


@retried
def invalidate(run_id: str, reason: str, by: str) -> Run:
    """Record ``run_id`` invalidated for ``reason`` by ``by``, and rank its group again without it."""
    reason, by = checked_reason_and_decider(reason, by, asked="why the result cannot be trusted")
    with database.atomic():
        run = locked_run(run_id)
        if run.invalidated_at is not None:
            raise InvalidationRefused(f"{run_id} was invalidated already, by {run.invalidated_by}: "
                                      f"{run.invalidated_reason}")
        evidence = KERNELINDEX_RERUN if run.evidence == KERNELINDEX_REPLICATED else run.evidence
        decided_at = utcnow()
        Run.update(invalidated_reason=reason, invalidated_by=by, invalidated_at=decided_at,
                   evidence=evidence).where(Run.id == run_id).execute()
        InvalidationDecision.create(run=run_id, action=INVALIDATED, reason=reason, decided_by=by,
                                    decided_at=decided_at, evidence=run.evidence)
        rerank([run.comparison_key_id])
        mark_replications([run.workload_key])
    return Run.get_by_id(run_id)


def evidence_before_invalidation(run: Run) -> str:
    """The evidence level ``run`` had before the invalidation standing on it (its own where that decision did not keep
    it: one recorded by 012_invalidation_decisions from before it)."""
    invalidation = (run.invalidation_decisions.where(InvalidationDecision.action == INVALIDATED)
                    .order_by(InvalidationDecision.decided_at.desc(), InvalidationDecision.id.desc()).first())
    return invalidation.evidence if invalidation is not None and invalidation.evidence else run.evidence


@retried
def reinstate(run_id: str, reason: str, by: str) -> Run:
    """Take back a maintainer's invalidation of ``run_id``, for ``reason`` by ``by``: its group ranks it again and
    the replications of its workload are judged again with it."""
    reason, by = checked_reason_and_decider(reason, by, asked="why the result can be trusted after all")
    with database.atomic():
        run = locked_run(run_id)
        if run.invalidated_at is None:
            raise InvalidationRefused(f"{run_id} is not invalidated: there is nothing to reinstate")
        if found_by_harness(run):
            raise InvalidationRefused(f"{run_id} was invalidated by the rerun harness, which caught it tampering "
                                      "with the measurement as it ran: that is evidence, and no maintainer reinstates "
                                      "it (rerun the implementation instead)")
        Run.update(invalidated_reason=None, invalidated_by=None, invalidated_at=None,
                   evidence=evidence_before_invalidation(run)).where(Run.id == run_id).execute()
        InvalidationDecision.create(run=run_id, action=REINSTATED, reason=reason, decided_by=by, decided_at=utcnow(),
                                    evidence=run.evidence)
        rerank([run.comparison_key_id])
        mark_replications([run.workload_key])  # judges the current runs again; a superseded one keeps what it got back
    return Run.get_by_id(run_id)
