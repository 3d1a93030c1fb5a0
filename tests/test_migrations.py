"""Every migration applied to an empty database gives exactly the models' schema; rollback removes it."""

import peewee
import pytest

from app import db
from app.models import ALL_MODELS


def model_schema(model):
    return {field.column_name for field in model._meta.sorted_fields}


def index_columns(database, table):
    return {tuple(index.columns) for index in database.get_indexes(table)}


def test_migrations_create_the_models_schema(app):
    with app.app_context():
        database = db.database.obj
        tables = set(database.get_tables())
        for model in ALL_MODELS:
            table = model._meta.table_name
            assert table in tables, table
            columns = {column.name: column for column in database.get_columns(table)}
            assert set(columns) == model_schema(model), table
            for field in model._meta.sorted_fields:
                assert columns[field.column_name].null == field.null or field.primary_key, (table, field.name)
            for index in model._meta.indexes:
                if isinstance(index, peewee.ModelIndex):  # Run's (observed_at DESC, id): by its name
                    assert index._name in {i.name for i in database.get_indexes(table)}, (table, index._name)
                    continue
                columns_ = tuple(model._meta.fields[name].column_name if name in model._meta.fields else name
                                 for name in index[0])
                assert columns_ in index_columns(database, table), (table, columns_)


def test_rollback_removes_everything(app):
    with app.app_context():
        router = db.migration_router()
        for name in reversed(router.done):
            router.rollback()
        remaining = set(db.database.obj.get_tables()) - {router.migrate_table}
        assert remaining == set()
        db.upgrade()
        assert {m._meta.table_name for m in ALL_MODELS} <= set(db.database.obj.get_tables())


def database_from_models(tmp_path):
    """A fresh database whose tables the models create, to hold the migrated one against."""
    from playhouse.db_url import connect

    from .conftest import fresh_database_url

    from_models = connect(fresh_database_url("ki_test_models", tmp_path))
    with from_models.bind_ctx(ALL_MODELS):
        from_models.create_tables(ALL_MODELS)
    return from_models


def column_types(database, table):
    return {(column.name, column.data_type.lower(), column.null) for column in database.get_columns(table)}


def indexes(database, table):
    return {(tuple(index.columns), index.unique) for index in database.get_indexes(table)}


@pytest.mark.parametrize("describe", [column_types, indexes], ids=["column types", "indexes"])
def test_migrated_schema_matches_the_models(app, tmp_path, describe):
    """The migrations and the models agree on column types (on PostgreSQL a float is not a double)
    and on indexes (no index the models do not declare survives: a redundant one costs every insert)."""
    with app.app_context():
        migrated = db.database.obj
        from_models = database_from_models(tmp_path)
        for model in ALL_MODELS:
            table = model._meta.table_name
            assert describe(migrated, table) == describe(from_models, table), table
        from_models.close()


def test_008_links_source_rows_by_their_normalized_workload(app, runner, tmp_path):
    """Rows stored under the row-spelled keys of before 008 are linked and ranked as a fresh import links them."""
    import importlib

    from app.models import ComparisonGroup, Run

    from .test_importer_liger import HEADER, ROPE_CONFIG, import_liger, rope_row, write

    path = write(tmp_path, "rope.csv", ",".join(HEADER),
                 rope_row("liger", "H", 8192, ROPE_CONFIG.format(name="seq_len", value=2048), "0.128", "15:39:57"),
                 rope_row("liger", "T", 2048, ROPE_CONFIG.format(name="hidden_size", value=8192), "0.116", "15:40:08"))
    import_liger(runner, path)
    migration = importlib.import_module("migrations.008_canonical_measurements_and_rejudgements")
    with app.app_context():
        fresh = {run.id: (run.measurement_key, run.superseded_by_id, run.rank) for run in Run.select()}
        for number, run in enumerate(Run.select()):  # as before 008: two measurements, both ranked
            Run.update(measurement_key=f"row-spelled-{number}", superseded_by=None, rank=1).where(
                Run.id == run.id).execute()
        migration.canonical_measurements(db.database)
        assert {run.id: (run.measurement_key, run.superseded_by_id, run.rank) for run in Run.select()} == fresh
        assert ComparisonGroup.get().size == 1


def test_011_gives_a_rerun_charted_along_its_first_parameter_that_parameters_value(small_app):
    """A rerun of a workload without ``seq`` is charted along its first parameter; stored before the importer took
    that parameter's value, its point was blank."""
    import importlib

    from app.importers.kernelindex_rerun import record_rerun_results
    from app.models import Run

    from .factories import correctness_record, harness_cost, rerun_result
    from .pages_support import reference_run

    result = {**rerun_result(reference_run(small_app), "torch"), "rerunOf": None, "family": "rms_norm",
              "workload": {"parameters": {"tokens": 512, "hidden": 4096}, "dtype": "bf16", "options": {"eps": 1e-6}},
              "correctness": correctness_record(error=1e-4, dtype="bf16")}
    result["cost"] = harness_cost(result)
    migration = importlib.import_module("migrations.011_rerun_swept_values")
    with small_app.app_context():
        run = Run.get_by_id(record_rerun_results([result], families={}).created[0])
        assert (run.x_name, run.x_value, run.x_number) == ("tokens", "512", 512.0)  # as the importer now stores it
        Run.update(x_value="", x_number=None).where(Run.id == run.id).execute()  # as it did before
        migration.fill_swept_values(db.database)
        run = Run.get_by_id(run.id)
        assert (run.x_value, run.x_number) == ("512", 512.0)


def test_012_records_the_invalidations_maintainers_made_before(small_app):
    """A run a maintainer invalidated before 012 gets its decision from its columns; one its harness invalidated gets
    none (no one decided it), nor does one that stands."""
    from app.invalidation import invalidate
    from app.models import InvalidationDecision, Run

    from .pages_support import reference_run
    from .test_invalidation import harness_found_gamed

    with small_app.app_context():
        gamed_id, honest_id = harness_found_gamed(reference_run(small_app))
        reported = Run.select().where(Run.source != "kernelindex").first()
        invalidate(reported.id, "the same figure as another GPU, to the digit", "alice")
        recorded = [(d.run_id, d.action, d.reason, d.decided_by, d.decided_at) for d in InvalidationDecision.select()]
        router = db.migration_router()
        while "012_invalidation_decisions" in router.done:  # as before 012: the run's columns alone
            router.rollback()
        assert "invalidation_decision" not in db.database.get_tables()
        db.upgrade()
        stored = Run.get_by_id(reported.id)
        assert [(d.run_id, d.action, d.reason, d.decided_by, d.decided_at) for d in InvalidationDecision.select()] == [
            (reported.id, "invalidated", stored.invalidated_reason, "alice", stored.invalidated_at)] == recorded
        assert Run.get_by_id(gamed_id).invalidated_at is not None and Run.get_by_id(honest_id).invalidated_at is None


def test_013_drops_the_rejudgements_made_against_a_policy_of_the_wrong_trial_count(app):
    """``rejudge`` rebuilt the policy from a record's trial count, which for fp32 counts the precision trial: it
    judged such reruns again under the version they were judged under, and re-judged older ones citing a policy
    no rerun cites. Both are dropped (the next rejudge redoes the latter); a sound re-judgement stays."""
    import importlib

    from app.models import Rejudgement
    from app.verdicts import rejudge_run
    from runners.correctness import POLICY, POLICY_TEXT, policy_document

    from .test_verdicts import liger_fna_backward, record

    current = liger_fna_backward()  # each another measurement (observedAt) than the older one
    current.update(observedAt="2026-12-01T00:00:00Z", correctness={
        **current["correctness"], "policy": policy_document(2), "policyText": POLICY_TEXT})
    miscounted = liger_fna_backward()
    miscounted.update(observedAt="2026-12-02T00:00:00Z", correctness={**miscounted["correctness"], "trials": 4})
    older, judged_now, miscounted = record(app, liger_fna_backward(), current, miscounted)
    migration = importlib.import_module("migrations.013_misjudged_rejudgements")
    with app.app_context():
        assert rejudge_run(older) is not None
        for run in (judged_now, miscounted):  # as rejudge stored them before
            Rejudgement.create(run=run, policy_version=POLICY.version, policy_digest=f"sha256:{run.id:0>64}",
                               status="failed", verdict={})
        migration.drop_misjudged_verdicts(db.database)
        assert [(r.run_id, r.policy_version) for r in Rejudgement.select()] == [(older.id, POLICY.version)]
        assert rejudge_run(judged_now) is None and rejudge_run(miscounted) is not None


def index_names(database, table):
    return {index.name for index in database.get_indexes(table)}


def roll_back_to_before(router, name):
    while name in router.done:
        router.rollback()


def test_015_adds_the_run_list_count_indexes_and_rolls_them_back(app):
    counting = {"run_evidence_observed_at_desc_id", "run_source_observed_at_desc_id", "run_gpu",
                "run_gpu_product_gpu_renamed"}
    with app.app_context():
        database = db.database.obj
        assert counting <= index_names(database, "run")
        roll_back_to_before(db.migration_router(), "015_run_list_counts")
        assert counting.isdisjoint(index_names(database, "run"))
        db.upgrade()
        assert counting <= index_names(database, "run")


def test_016_adds_the_attestation_order_index_and_rolls_it_back(app):
    with app.app_context():
        database = db.database.obj
        assert "attestation_created_at_id" in index_names(database, "attestation")
        roll_back_to_before(db.migration_router(), "016_attestation_order")
        assert "attestation_created_at_id" not in index_names(database, "attestation")
        db.upgrade()
        assert "attestation_created_at_id" in index_names(database, "attestation")


def test_017_widens_the_current_runs_index_and_rolls_back_to_002s(app):
    widened = ("superseded_by_id", "observed_at", "id", "kernel", "implementation", "gpu")
    with app.app_context():
        database = db.database.obj
        assert widened in index_columns(database, "run")
        assert ("superseded_by_id", "observed_at") not in index_columns(database, "run")
        roll_back_to_before(db.migration_router(), "017_current_runs_newest_first")
        assert ("superseded_by_id", "observed_at") in index_columns(database, "run")
        assert widened not in index_columns(database, "run")
        db.upgrade()
        assert widened in index_columns(database, "run")


def test_018_adds_the_run_list_implementation_index_and_rolls_it_back(app):
    name = "run_implementation_observed_at_desc_id_kernel_gpu_gpu_product"
    with app.app_context():
        database = db.database.obj
        assert name in index_names(database, "run")
        roll_back_to_before(db.migration_router(), "018_run_list_implementation")
        assert name not in index_names(database, "run")
        db.upgrade()
        assert name in index_names(database, "run")
