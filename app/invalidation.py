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
"""

from .comparison import rerank
from .db import database
from .importers.kernelindex_rerun import mark_replications
from .inputs import control_character_in, describe, direction_control_in
from .locks import lock_scopes, retried
from .models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, Run, utcnow

REASON_LENGTH = 2000


class InvalidationRefused(ValueError):
    """An invalidation that cannot be recorded: no reason, no decider, or the run already invalidated."""


@retried
def invalidate(run_id: str, reason: str, by: str) -> Run:
    """Record ``run_id`` invalidated for ``reason`` by ``by``, and rank its group again without it."""
    reason = (reason or "").replace("\r\n", "\n").replace("\r", "\n").strip()  # a browser's textarea sends CRLF
    by = (by or "").strip()
    if not reason:
        raise InvalidationRefused("say why the result cannot be trusted")
    if not by:
        raise InvalidationRefused("say who decides")
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
    with database.atomic():
        run = Run.get_or_none(Run.id == run_id)
        if run is None:
            raise InvalidationRefused(f"no run {run_id}")
        lock_scopes([run.comparison_key.shared])
        run = Run.get_by_id(run_id)  # as it stands now that the scope is ours
        if run.invalidated_at is not None:
            raise InvalidationRefused(f"{run_id} was invalidated already, by {run.invalidated_by}: "
                                      f"{run.invalidated_reason}")
        evidence = KERNELINDEX_RERUN if run.evidence == KERNELINDEX_REPLICATED else run.evidence
        Run.update(invalidated_reason=reason, invalidated_by=by[:120], invalidated_at=utcnow(),
                   evidence=evidence).where(Run.id == run_id).execute()
        rerank([run.comparison_key_id])
        mark_replications([run.workload_key])
    return Run.get_by_id(run_id)
