"""The peewee models: the registry's tables.

Canonical documents (BenchmarkRun, BenchmarkProtocol, ExecutionEnvironment,
Workload, Implementation) are stored once each in ``Manifest``, keyed by their
digest, and never change: a correction is a new document. ``Run`` is the
queryable index over a BenchmarkRun document, with the fields pages and the API
filter and sort on copied out of its documents, plus what changes over time
(rank, supersession) which is not part of any digest.
"""

import hashlib
import json
import operator
from datetime import datetime, timezone
from functools import reduce

import peewee

from .db import database


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class JSONField(peewee.TextField):
    """JSON stored as text: the same on SQLite and PostgreSQL, and key order is kept as written."""

    def db_value(self, value):
        return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def python_value(self, value):
        return None if value is None else json.loads(value)


class BaseModel(peewee.Model):
    class Meta:
        database = database
        legacy_table_names = False


class Manifest(BaseModel):
    """One canonical document. ``digest`` is ``sha256:`` + hex of its RFC 8785 form without metadata."""

    digest = peewee.CharField(primary_key=True, max_length=71)
    kind = peewee.CharField(max_length=40, index=True)
    document = JSONField()


class Family(BaseModel):
    """A kernel family (``kernel_name`` upstream) and the title pages show for it."""

    name = peewee.CharField(primary_key=True, max_length=120)
    title = peewee.CharField(max_length=200)


class SourceFile(BaseModel):
    """One imported file: where it came from upstream and exactly which bytes were read."""

    source = peewee.CharField(max_length=60)  # liger-kernel-bench, kernelindex
    location = peewee.TextField()  # the path or URL given to the importer
    repository = peewee.TextField(null=True)
    upstream_path = peewee.TextField(null=True)
    commit = peewee.CharField(max_length=40, null=True)
    sha256 = peewee.CharField(max_length=64, index=True)
    bytes = peewee.BigIntegerField()
    license = peewee.CharField(max_length=60, null=True)
    rows_read = peewee.IntegerField(default=0)
    runs_created = peewee.IntegerField(default=0)
    imported_at = peewee.DateTimeField(default=utcnow)


class ComparisonGroup(BaseModel):
    """Runs that may fairly be ranked against each other (DESIGN.md, "Comparison group").

    ``shared`` is the document the key digests: kernel, workload, pass, metric, GPU,
    comparability family and evidence kind. Size and leader count current runs only.
    """

    key = peewee.CharField(primary_key=True, max_length=71)
    shared = JSONField()
    kernel = peewee.CharField(max_length=120, index=True)
    workload_key = peewee.CharField(max_length=71, index=True)
    gpu = peewee.CharField(max_length=120)
    evidence_kind = peewee.CharField(max_length=40)
    size = peewee.IntegerField(default=0)
    leader = peewee.CharField(max_length=16, null=True)  # Run.id of rank 1

    @classmethod
    def gpus(cls) -> set[str]:
        """Every GPU a run in the index is on: each run has its group, and groups are far fewer than runs (no index
        of runs leads with the GPU)."""
        return {gpu for (gpu,) in cls.select(cls.gpu).distinct().tuples()}

    def others_of_workload(self) -> list:
        """The other groups of this workload (other passes, metrics, GPUs, the other evidence kind), by GPU."""
        return list(ComparisonGroup.select()
                    .where((ComparisonGroup.workload_key == self.workload_key) & (ComparisonGroup.key != self.key))
                    .order_by(ComparisonGroup.gpu, ComparisonGroup.evidence_kind))


SOURCE_REPORTED = "source-reported"
KERNELINDEX_RERUN = "kernelindex-rerun"
KERNELINDEX_REPLICATED = "kernelindex-replicated"
EVIDENCE_LEVELS = (SOURCE_REPORTED, KERNELINDEX_RERUN, KERNELINDEX_REPLICATED)  # DESIGN.md, "Evidence levels"
KERNELINDEX_SOURCE = "kernelindex"  # the source of every run KernelIndex measured itself


INVALIDATED, REINSTATED = "invalidated", "reinstated"  # what a maintainer decided (InvalidationDecision.action)


def invalidation(reason: str | None, by: str | None, at) -> dict | None:
    """Why, by whom and when a result was invalidated (None when it stands), as the API and twins give it."""
    return None if at is None else {"reason": reason, "by": by, "at": at}


def standing(status: str, invalidated_at) -> str:
    """The status pages show: ``invalidated`` for a result found gamed, else its status (``passed``, ``failed``,
    ``undetermined``)."""
    return "invalidated" if invalidated_at is not None else status


class Run(BaseModel):
    """One observation: a BenchmarkRun document plus what the registry knows about it over time.

    ``identity_key`` is the upstream observation's identity (kernel, provider, pass,
    metric, x, parsed config, GPU, timestamp) and makes imports idempotent;
    ``measurement_key`` names the kernel, implementation, pass, metric, normalized workload,
    GPU (and a rerun's host): runs sharing it and a comparison group are one measurement's
    history, of which only the newest (``superseded_by`` null) ranks.
    Latency figures are in ns; memory figures in the source's unit (MB).
    """

    id = peewee.CharField(primary_key=True, max_length=16)
    digest = peewee.CharField(max_length=71, unique=True)
    identity_key = peewee.CharField(max_length=64, unique=True)
    measurement_key = peewee.CharField(max_length=64, index=True)
    external_id = peewee.TextField(index=True)
    source = peewee.CharField(max_length=60)
    source_file = peewee.ForeignKeyField(SourceFile, null=True, backref="runs", on_delete="SET NULL")
    kernel = peewee.ForeignKeyField(Family, column_name="kernel", backref="runs")
    implementation = peewee.CharField(max_length=80)
    pass_ = peewee.CharField(column_name="pass", max_length=40)
    metric = peewee.CharField(max_length=40)
    unit = peewee.CharField(max_length=10)
    gpu = peewee.CharField(max_length=120)  # the hardware as named upstream, e.g. NVIDIA H100 80GB HBM3
    gpu_product = peewee.CharField(max_length=120)
    x_name = peewee.CharField(max_length=80)
    x_value = peewee.CharField(max_length=80)
    x_number = peewee.DoubleField(null=True)  # x_value as a number, for sorting and charts
    parameters = JSONField()
    dtype = peewee.CharField(max_length=20, null=True)
    options = JSONField()
    median = peewee.DoubleField(null=True)  # null for a failed rerun: it has no timing
    p20 = peewee.DoubleField(null=True)
    p80 = peewee.DoubleField(null=True)
    status = peewee.CharField(max_length=20)
    evidence = peewee.CharField(max_length=40)
    observed_at = peewee.DateTimeField()
    labels = JSONField()
    protocol_digest = peewee.CharField(max_length=71)
    workload_digest = peewee.CharField(max_length=71)
    environment_digest = peewee.CharField(max_length=71)
    implementation_digest = peewee.CharField(max_length=71)
    workload_key = peewee.CharField(max_length=71, index=True)
    comparison_key = peewee.ForeignKeyField(ComparisonGroup, column_name="comparison_key", backref="runs")
    rank = peewee.IntegerField(null=True)
    superseded_by = peewee.ForeignKeyField("self", null=True, backref="supersedes", on_delete="SET NULL")
    rerun_of = peewee.ForeignKeyField("self", null=True, backref="reruns", on_delete="SET NULL")
    host = peewee.CharField(max_length=120, null=True)  # the rerun host: its token's, never what the result says
    details = JSONField(null=True)  # reruns: raw samples, correctness, cost; failures: the error
    created_at = peewee.DateTimeField(default=utcnow)
    received_at = peewee.DateTimeField(null=True)  # reruns: when the server received the result (006_rerun_hosts)
    # 010_invalidated_results: a result found gamed, by the harness at run time or later by a maintainer
    invalidated_reason = peewee.TextField(null=True)
    invalidated_by = peewee.CharField(max_length=120, null=True)
    invalidated_at = peewee.DateTimeField(null=True)

    class Meta:
        indexes = (
            (("comparison_key", "rank"), False),
            # 002_page_indexes: family pages, search, the home page (see that migration)
            (("kernel", "pass", "metric", "gpu", "superseded_by"), False),
            (("kernel", "implementation", "gpu", "superseded_by", "observed_at"), False),
            # 017_current_runs_newest_first: search's page of ids from the index alone (it replaced 002's
            # (superseded_by, observed_at))
            (("superseded_by", "observed_at", "id", "kernel", "implementation", "gpu"), False),
            (("created_at",), False),
            (("source", "created_at"), False),
        )

    @property
    def is_current(self) -> bool:
        return self.superseded_by_id is None

    @classmethod
    def current(cls, *selection):
        """Runs that no newer observation of the same measurement supersedes: the ones that rank."""
        return cls.select(*selection).where(cls.superseded_by.is_null())

    @classmethod
    def rankable(cls, *selection):
        """Current runs that passed and that nobody invalidated: the only ones a ranking may hold."""
        return cls.current(*selection).where((cls.status == "passed") & cls.invalidated_at.is_null())

    @classmethod
    def with_group(cls):
        """Runs read with their comparison group, family and source file (if any) in one query: what a run's
        pages and API document show of each, without a query apiece."""
        return (cls.select(cls, ComparisonGroup, Family, SourceFile).join(ComparisonGroup)
                .switch(cls).join(Family).switch(cls).join(SourceFile, peewee.JOIN.LEFT_OUTER))

    def linked_runs(self) -> dict:
        """The runs this one's history names, read in one query: ``superseded_by`` and ``rerun_of`` (a run
        or None) and ``supersedes`` and ``reruns`` (newest first)."""
        conditions = [Run.superseded_by == self.id, Run.rerun_of == self.id]
        conditions += [Run.id == run_id for run_id in (self.superseded_by_id, self.rerun_of_id) if run_id]
        linked = list(Run.select().where(reduce(operator.or_, conditions)).order_by(Run.observed_at.desc(), Run.id))
        by_id = {run.id: run for run in linked}
        return {"superseded_by": by_id.get(self.superseded_by_id), "rerun_of": by_id.get(self.rerun_of_id),
                "supersedes": [run for run in linked if run.superseded_by_id == self.id],
                "reruns": [run for run in linked if run.rerun_of_id == self.id]}

    @property
    def standing(self) -> str:
        return standing(self.status, self.invalidated_at)

    @property
    def invalidation(self) -> dict | None:
        return invalidation(self.invalidated_reason, self.invalidated_by, self.invalidated_at)

    def invalidation_history(self) -> list[dict]:
        """Every maintainer's decision on this run, oldest first, as the API and twins give them."""
        decisions = self.invalidation_decisions.order_by(InvalidationDecision.decided_at, InvalidationDecision.id)
        return [{"action": decision.action, "reason": decision.reason, "by": decision.decided_by,
                 "at": decision.decided_at} for decision in decisions]

    @classmethod
    def matching(cls, filters: dict, *selection):
        """Runs matching the API's filters (already validated), newest first (ties by id: the order of the
        ``(observed_at DESC, id)`` index, 014_run_list_order, that a page walks without sorting).

        ``gpu`` matches the name upstream gave the hardware or its product name.
        """
        query = cls.select(*selection)
        for name in ("kernel", "implementation", "pass_", "metric", "evidence", "source", "external_id"):
            if filters.get(name):
                query = query.where(getattr(cls, name) == filters[name])
        if filters.get("gpu"):
            query = query.where((cls.gpu == filters["gpu"]) | (cls.gpu_product == filters["gpu"]))
        return query.order_by(cls.observed_at.desc(), cls.id)

    @classmethod
    def matching_count(cls, filters: dict) -> int:
        """How many runs :meth:`matching` selects, each term read from an index (015_run_list_counts).

        A ``gpu`` filter is counted as two disjoint sets: the runs upstream named ``gpu``, and those found by
        their product name whose own name is another (for them ``gpu <> gpu_product``, the partial index's
        condition, says ``gpu`` is not the filter's name).
        """
        gpu = filters.get("gpu")
        if not gpu:
            return cls.matching(filters).order_by().count()
        others = cls.matching({**filters, "gpu": None}).order_by()
        renamed = (cls.gpu_product == gpu) & (cls.gpu != cls.gpu_product)
        return others.where(cls.gpu == gpu).count() + others.where(renamed).count()

    @classmethod
    def after(cls, query, observed_at: datetime, run_id: str):
        """``query`` (ordered as :meth:`matching` orders) from the run after (``observed_at``, ``run_id``) on: a range
        of the order's index, however deep the page."""
        return query.where((cls.observed_at <= observed_at)
                           & ((cls.observed_at < observed_at) | (cls.id > run_id)))

    def manifest_bundle(self) -> dict:
        """The five canonical documents this run's digests name, by kind (the downloadable manifest)."""
        digests = {"run": self.digest, "protocol": self.protocol_digest, "environment": self.environment_digest,
                   "workload": self.workload_digest, "implementation": self.implementation_digest}
        documents = dict(Manifest.select(Manifest.digest, Manifest.document)
                         .where(Manifest.digest.in_(list(digests.values()))).tuples())
        return {kind: documents[digest] for kind, digest in digests.items()}

    def visible_attestations(self):
        """This run's attestations that maintainers have not hidden, oldest first."""
        return (self.attestations.where(Attestation.hidden == False)  # noqa: E712
                .order_by(Attestation.created_at, Attestation.id))

    def open_issue_count(self) -> int:
        return IssueReport.unresolved().where(IssueReport.run == self).count()


# 014_run_list_order: /api/v1/runs newest first (ties by id), walked in order without a sort; a descending column
# cannot be written in Meta.indexes
Run.add_index(Run.index(Run.observed_at.desc(), Run.id, name="run_observed_at_desc_id"))
# 015_run_list_counts: the run list's count and order for evidence and source, its count for gpu
Run.add_index(Run.index(Run.evidence, Run.observed_at.desc(), Run.id, name="run_evidence_observed_at_desc_id"))
Run.add_index(Run.index(Run.source, Run.observed_at.desc(), Run.id, name="run_source_observed_at_desc_id"))
Run.add_index(Run.index(Run.gpu, name="run_gpu"))
Run.add_index(Run.index(Run.gpu_product, Run.gpu, name="run_gpu_product_gpu_renamed", where=Run.gpu != Run.gpu_product))
# 018_run_list_implementation: the run list's count and order for implementation, with the filters asked beside it
Run.add_index(Run.index(Run.implementation, Run.observed_at.desc(), Run.id, Run.kernel, Run.gpu, Run.gpu_product,
                        name="run_implementation_observed_at_desc_id_kernel_gpu_gpu_product"))


class Rejudgement(BaseModel):
    """A stored rerun judged again under a later correctness policy, from its recorded errors (no GPU).

    The run's own verdict and the policy it cites never change; a rejudgement sits beside them,
    one per run and policy document (``policy_digest``, a CorrectnessPolicy in ``Manifest``).
    ``verdict`` is ``runners.correctness.Verdict.as_document()``: error bounds, trials, reasons.
    """

    run = peewee.ForeignKeyField(Run, backref="rejudgements", on_delete="CASCADE", index=False)
    policy_version = peewee.IntegerField()
    policy_digest = peewee.CharField(max_length=71)
    status = peewee.CharField(max_length=20)  # passed, failed, undetermined
    verdict = JSONField()
    judged_at = peewee.DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("run", "policy_digest"), True),)


class InvalidationDecision(BaseModel):
    """A maintainer invalidated a run, or reinstated one invalidated by mistake (012_invalidation_decisions).

    The run's ``invalidated_*`` columns say where it stands now, and rankings read them
    (``Run.rankable``); these rows say how it came to stand there, every decision kept.
    The harness's invalidations at run time are no one's decision and are not here: their
    evidence is the run's own (``details["integrity"]``), and no maintainer reinstates them.
    ``evidence`` is the run's level before the decision: a reinstatement gives back what its
    invalidation took from a superseded run, which no replication judges again.
    """

    run = peewee.ForeignKeyField(Run, backref="invalidation_decisions", on_delete="CASCADE", index=False)
    action = peewee.CharField(max_length=20)  # INVALIDATED, REINSTATED
    reason = peewee.TextField()
    decided_by = peewee.CharField(max_length=120)  # the maintainer
    decided_at = peewee.DateTimeField(default=utcnow)
    evidence = peewee.CharField(max_length=40, null=True)  # the run's as the decision found it

    class Meta:
        indexes = ((("run", "decided_at"), False),)


def earlier_post(post: BaseModel, since: datetime, *conditions):
    """The stored post on the unsaved ``post``'s run, made since ``since``, that says exactly what ``post`` says
    (every field its model lists in ``POSTED``; None matches an empty field), or None: a reader's post sent
    twice (a double click, a retried request) is one post."""
    model = type(post)
    same = [field.is_null() if value is None else field == value
            for field, value in ((getattr(model, name), getattr(post, name)) for name in model.POSTED)]
    return (model.select().where(model.run == post.run_id, model.created_at >= since, *same, *conditions)
            .order_by(model.id).first())


class Attestation(BaseModel):
    """A community note or reproduction. Shown beside a run; never changes its evidence or rank."""

    POSTED = ("kind", "author", "body", "median", "p20", "p80", "unit", "gpu", "software", "link")
    """What a reader writes; the same author writing it all again is a repeat (:func:`earlier_post`)."""

    run = peewee.ForeignKeyField(Run, backref="attestations", on_delete="CASCADE")
    kind = peewee.CharField(max_length=20)  # note, reproduction
    author = peewee.CharField(max_length=80, null=True)
    body = peewee.TextField(default="")
    median = peewee.DoubleField(null=True)
    p20 = peewee.DoubleField(null=True)
    p80 = peewee.DoubleField(null=True)
    unit = peewee.CharField(max_length=10, null=True)
    gpu = peewee.CharField(max_length=120, null=True)
    software = peewee.TextField(null=True)
    link = peewee.TextField(null=True)
    hidden = peewee.BooleanField(default=False)
    created_at = peewee.DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("created_at", "id"), False),)  # 016_attestation_order: moderation's list, newest first

    def earlier_repeat(self, since: datetime):
        """The stored attestation this unsaved one repeats, hidden or not (a hidden one posted again would show
        again), or None."""
        return earlier_post(self, since)


class IssueReport(BaseModel):
    """A reader's report that something about a run is wrong; maintainers resolve it."""

    POSTED = ("reason", "body")
    """What a reader writes; writing it all again is a repeat (:func:`earlier_post`)."""

    run = peewee.ForeignKeyField(Run, backref="issue_reports", on_delete="CASCADE")
    reason = peewee.CharField(max_length=40)
    body = peewee.TextField(default="")
    resolved = peewee.BooleanField(default=False)
    created_at = peewee.DateTimeField(default=utcnow)

    @classmethod
    def unresolved(cls):
        return cls.select().where(cls.resolved == False)  # noqa: E712

    def earlier_repeat(self, since: datetime):
        """The open report this unsaved one repeats, or None: reporting again what a maintainer has resolved since
        says that it is not, and is a new report."""
        return earlier_post(self, since, IssueReport.resolved == False)  # noqa: E712


class Maintainer(BaseModel):
    """A maintainer account (created from the CLI); only maintainers moderate.

    A signed-in session carries ``session_version``; signing out increments it, so every
    session issued before (a copied cookie included) stops working on the server side.
    """

    username = peewee.CharField(max_length=80, unique=True)
    password_hash = peewee.TextField()
    session_version = peewee.IntegerField(default=0)
    created_at = peewee.DateTimeField(default=utcnow)

    @classmethod
    def from_session(cls, maintainer_id, session_version):
        """The maintainer a session names, or None if it names none or was signed out since."""
        if maintainer_id is None or session_version is None:
            return None
        return cls.get_or_none((cls.id == maintainer_id) & (cls.session_version == session_version))

    def end_sessions(self):
        """Sign out every session of this maintainer (an atomic increment, safe across workers)."""
        Maintainer.update(session_version=Maintainer.session_version + 1).where(Maintainer.id == self.id).execute()


class SignInAttempt(BaseModel):
    """One maintainer sign-in attempt, kept while the sign-in throttle (app/security.py) counts it.

    Stored in the database rather than in process memory so that every worker counts the same
    attempts. ``account`` is the username as typed, known or not; a successful sign-in deletes
    its account's attempts, and attempts older than the longest window are deleted as new ones come.
    """

    account = peewee.CharField(max_length=80)
    address = peewee.CharField(max_length=64)  # the client's address
    attempted_at = peewee.DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("account", "attempted_at"), False), (("address", "attempted_at"), False))

    @classmethod
    def times_since(cls, condition, since: datetime, other_than: int) -> list[datetime]:
        """When the attempts matching ``condition`` were made since ``since`` (oldest first), but one."""
        query = (cls.select(cls.attempted_at)
                 .where(condition & (cls.attempted_at >= since) & (cls.id != other_than))
                 .order_by(cls.attempted_at))
        return [attempt.attempted_at for attempt in query]

    @classmethod
    def forget_before(cls, moment: datetime):
        cls.delete().where(cls.attempted_at < moment).execute()

    @classmethod
    def forget_account(cls, account: str):
        cls.delete().where(cls.account == account).execute()


class HostToken(BaseModel):
    """A rerun-host token, shown once at creation; only its SHA-256 is stored. Results posted with it are
    recorded as ``host`` whatever they claim, for the GPU kinds in ``gpus`` only (null: any)."""

    name = peewee.CharField(max_length=80, unique=True)
    token_hash = peewee.CharField(max_length=64, unique=True)
    revoked = peewee.BooleanField(default=False)
    created_at = peewee.DateTimeField(default=utcnow)
    host = peewee.CharField(max_length=120)
    gpus = JSONField(null=True)  # GPU names or products, e.g. ["NVIDIA H200"]
    may_request = peewee.BooleanField(default=False)  # may also ask for reruns (POST /api/v1/rerun-requests)

    @staticmethod
    def hash(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def find_active(cls, token: str):
        return cls.get_or_none((cls.token_hash == cls.hash(token)) & (cls.revoked == False))  # noqa: E712


REQUEST_QUEUED, REQUEST_RUNNING, REQUEST_DONE, REQUEST_FAILED, REQUEST_CANCELLED = (
    "queued", "running", "done", "failed", "cancelled")
REQUEST_STATUSES = (REQUEST_QUEUED, REQUEST_RUNNING, REQUEST_DONE, REQUEST_FAILED, REQUEST_CANCELLED)
REQUEST_PENDING = (REQUEST_QUEUED, REQUEST_RUNNING)


class RerunRequest(BaseModel):
    """A request to rerun some work on a GPU model (or the CPU); the record of its state, which the queue only delivers.

    ``workloads`` is the work resolved when it was asked for (one harness request per workload and pass:
    family, pass, parameters, dtype, options, rerunOf per implementation), so a worker needs nothing but this
    row (or its API document) to run it. A worker holds a running request by its lease: it renews
    ``lease_expires_at`` while it works; a lease that expires sends the request back to the queue, at most
    ``RERUN_MAX_ATTEMPTS`` times in all. A request still queued ``RERUN_REDELIVER_SECONDS`` after
    ``queued_at`` is put on the queue again, in case its message was lost (a duplicate is dropped at claim).
    """

    run = peewee.ForeignKeyField(Run, null=True, backref="rerun_requests", on_delete="SET NULL", index=False)
    comparison_key = peewee.CharField(max_length=71, null=True)
    family = peewee.CharField(max_length=120)
    workloads = JSONField()
    implementations = JSONField(null=True)  # null: every implementation the worker's plugin has
    target = peewee.CharField(max_length=10)  # cuda, cpu
    gpu = peewee.CharField(max_length=120, null=True)  # the GPU model wanted, e.g. NVIDIA H200; null on the CPU
    queue = peewee.CharField(max_length=160)
    protocol = peewee.CharField(max_length=40)
    requested_by = peewee.CharField(max_length=120)  # "maintainer NAME" or "token NAME"
    status = peewee.CharField(max_length=20, default=REQUEST_QUEUED)
    attempts = peewee.IntegerField(default=0)
    worker = peewee.CharField(max_length=200, null=True)  # the consumer that holds (or last held) it
    worker_host = peewee.CharField(max_length=120, null=True)
    worker_gpu = peewee.CharField(max_length=120, null=True)
    lease_expires_at = peewee.DateTimeField(null=True)
    queued_at = peewee.DateTimeField(default=utcnow)  # when its id was last put on the queue
    created_at = peewee.DateTimeField(default=utcnow)
    started_at = peewee.DateTimeField(null=True)
    finished_at = peewee.DateTimeField(null=True)
    error = peewee.TextField(null=True)
    log_tail = peewee.TextField(null=True)

    class Meta:
        indexes = ((("status", "lease_expires_at"), False), (("status", "queued_at"), False),
                   (("run", "created_at"), False), (("created_at",), False))

    @property
    def is_pending(self) -> bool:
        return self.status in REQUEST_PENDING

    def result_run_ids(self) -> list[str]:
        return [result.run_id for result in self.results.order_by(RerunRequestResult.id) if result.run_id]


class RerunRequestResult(BaseModel):
    """One implementation's result on one workload of a request, recorded once however often it is delivered.

    ``key`` (the idempotency key) digests the request's workload and the implementation; ``run`` is the
    run it created (null when the index already held the identical result).
    """

    request = peewee.ForeignKeyField(RerunRequest, backref="results", on_delete="CASCADE", index=False)
    key = peewee.CharField(max_length=64)
    run = peewee.ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="+", index=False)
    recorded_at = peewee.DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("request", "key"), True),)


class RerunWorker(BaseModel):
    """A consumer that checked in lately: the web offers reruns on the GPU models that have one."""

    name = peewee.CharField(max_length=200, unique=True)  # host/slot
    host = peewee.CharField(max_length=120)
    target = peewee.CharField(max_length=10)
    gpu = peewee.CharField(max_length=120)  # the model it found (the CPU's name for CPU workers)
    queue = peewee.CharField(max_length=160)
    seen_at = peewee.DateTimeField(default=utcnow)


ALL_MODELS = (Manifest, Family, SourceFile, ComparisonGroup, Run, Rejudgement, InvalidationDecision, Attestation,
              IssueReport, Maintainer, HostToken, SignInAttempt, RerunRequest, RerunRequestResult, RerunWorker)
