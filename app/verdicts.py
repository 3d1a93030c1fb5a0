"""Re-judging stored KernelIndex reruns under the current correctness policy, without a GPU.

A rerun keeps the verdict of the policy version it was judged under: its run document
cites that policy by digest, and neither changes. When the policy gains a version,
``rejudge_runs`` (``flask rejudge``) judges stored reruns again from the per-output errors
their details recorded (``runners.correctness.rejudge``) and stores each verdict beside
the original as a ``Rejudgement`` citing the new policy document by digest. Version 1
records lack per-trial figures, so their rejudgement may be ``undetermined``, and says why.

A rejudgement changes no status, rank or evidence level: a run that failed recorded no
timing (the harness times only what passed), so it has no median to rank whatever a later
version says of its outputs; only a fresh rerun can rank.
"""

from dataclasses import dataclass, field

from runners.correctness import POLICY, POLICY_TEXT, UNREADABLE_RECORD, Verdict, policy_document, rejudge

from .db import database
from .importers.kernelindex_rerun import policy_document as correctness_policy_document
from .locks import lock_rejudgements
from .manifests import document_digest
from .models import KERNELINDEX_SOURCE, Manifest, Rejudgement, Run
from .registry import chunks


@dataclass
class RejudgeSummary:
    """What ``rejudge_runs`` did: the verdicts it stored, and the runs it left as they were."""

    judged: list = field(default_factory=list)  # (run, Verdict)
    already: int = 0  # judged under the current policy already, as recorded or by an earlier rejudgement
    unreadable: list = field(default_factory=list)  # (run, what its record lacks)

    def line(self) -> str:
        statuses = [verdict.status for _, verdict in self.judged]
        counts = ", ".join(f"{statuses.count(status)} {status}" for status in ("passed", "failed", "undetermined"))
        return (f"rejudged {len(self.judged)} rerun(s) under policy version {POLICY.version}: {counts}; "
                f"{self.already} already judged under it; {len(self.unreadable)} without the figures to judge")


def stored_result(run: Run) -> dict:
    """The parts of a rerun's bundle line that ``rejudge`` reads, from the run's details as recorded."""
    details = run.details or {}
    return {"correctness": details["correctness"], "workload": {"dtype": run.dtype}, "error": details.get("error")}


def current_policy(seeded_trials: int) -> dict:
    """The current policy as the CorrectnessPolicy document a rerun of ``seeded_trials`` seeded trials would cite
    (an fp32 rerun's record counts its precision trial too: the policy names the seeded ones)."""
    return correctness_policy_document({"policy": policy_document(seeded_trials), "policyText": POLICY_TEXT})


def rejudgeable(run_ids=(), kernels=()) -> list[Run]:
    """Stored reruns (all, or those named), oldest first; those named are read 500 ids a statement (:func:`chunks`),
    as a command line may name more than a statement may bind."""
    query = Run.select().where((Run.source == KERNELINDEX_SOURCE) & Run.details.is_null(False))
    if kernels:
        query = query.where(Run.kernel.in_(sorted(set(kernels))))
    if not run_ids:
        return list(query.order_by(Run.observed_at, Run.id))
    named = [run for chunk in chunks(set(run_ids), 500) for run in query.where(Run.id.in_(chunk))]
    return sorted(named, key=lambda run: (run.observed_at, run.id))


def missing_figures(run: Run) -> str | None:
    """What a rerun's record lacks for ``rejudge`` (records from before the policy was versioned), or None."""
    correctness = (run.details or {}).get("correctness") or {}
    policy = correctness.get("policy") or {}
    wanted = {"policy version": policy.get("version"), "policy trials": policy.get("trials"),
              **{name: correctness.get(name) for name in ("outputErrors", "trials", "tf32")}}
    missing = [name for name, value in wanted.items() if value is None]
    return f"its correctness record lacks {', '.join(missing)}" if missing else None


def judged_under(run: Run, policy_digest: str) -> bool:
    """Whether the run cites this policy as recorded, or was re-judged under it already."""
    run_document = Manifest.get_by_id(run.digest).document
    recorded = (run_document["spec"].get("correctness") or {}).get("policyDigest")
    return recorded == policy_digest or Rejudgement.select().where(
        (Rejudgement.run == run) & (Rejudgement.policy_digest == policy_digest)).exists()


def rejudge_run(run: Run) -> Verdict | None:
    """Judge one stored rerun under the current policy and store the verdict; None if judged under it already
    (by another ``flask rejudge`` too: the check holds the run's row)."""
    result = stored_result(run)
    document = current_policy(result["correctness"]["policy"]["trials"])
    digest = document_digest(document)
    lock_rejudgements(run.id)
    if judged_under(run, digest):
        return None
    verdict = rejudge(result)
    Manifest.insert(digest=digest, kind=document["kind"], document=document).on_conflict_ignore().execute()
    Rejudgement.insert(run=run, policy_version=POLICY.version, policy_digest=digest, status=verdict.status,
                       verdict=verdict.as_document()).on_conflict_ignore().execute()
    return verdict


def rejudge_runs(runs) -> RejudgeSummary:
    """Judge every run given (stored reruns) under the current policy, one transaction per run; a record that cannot
    be judged (stored before its figures were checked) is reported and left as it is."""
    summary = RejudgeSummary()
    for run in runs:
        missing = missing_figures(run)
        if missing:
            summary.unreadable.append((run, missing))
            continue
        try:
            with database.atomic():
                verdict = rejudge_run(run)
        except UNREADABLE_RECORD as error:  # stored before the checks
            summary.unreadable.append((run, f"its correctness record cannot be judged ({error!r})"))
            continue
        if verdict is None:
            summary.already += 1
        else:
            summary.judged.append((run, verdict))
    return summary
