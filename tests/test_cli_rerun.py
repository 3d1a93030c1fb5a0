"""``flask rerun`` and ``flask plugins`` end to end on the CPU, against the app's database and API."""

import importlib.util
import io
import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runners import discovery

from .conftest import import_csv
from .factories import write_liger_csv


FNA_REFERENCE = ("fused_neighborhood_attention/forward/torch/nvidia-h100-80gb-hbm3/"
                 "batch2-dilation2-heads8-hidden512-kernel_size7-seq1024-fp32/2025-05-27-19-26-55")
SMOKE = ["--target", "cpu", "--protocol", "smoke"]
TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"
DATA = Path(__file__).resolve().parent / "data"


def source_run(app, **where):
    from app.models import Run

    with app.app_context():
        query = Run.select().where(Run.evidence == "source-reported", Run.metric == "speed")
        for field, value in where.items():
            query = query.where(getattr(Run, field) == value)
        return query.get()


def reruns(app):
    from app.models import Run

    with app.app_context():
        return list(Run.select().where(Run.source == "kernelindex"))


def test_rerun_of_the_fna_reference_run_records_a_linked_rerun(small_app, runner):
    original = source_run(small_app, external_id=FNA_REFERENCE)
    result = runner.invoke(args=["rerun", "--external-id", FNA_REFERENCE, *SMOKE, "--implementation", "torch"])
    assert result.exit_code == 0, result.output
    assert "recorded: created 1" in result.output and "1 passed, 0 failed" in result.output
    [rerun] = reruns(small_app)
    assert rerun.rerun_of_id == original.id and rerun.evidence == "kernelindex-rerun"
    assert (rerun.kernel_id, rerun.pass_, rerun.implementation, rerun.status) == \
        ("fused_neighborhood_attention", "forward", "torch", "passed")
    assert rerun.workload_key == original.workload_key and rerun.median > 0
    assert rerun.details["correctness"]["passed"] and rerun.details["timing"]["trials"] == 2


def test_a_run_named_twice_is_counted_and_measured_once(small_app, runner):
    original = source_run(small_app, external_id=FNA_REFERENCE)
    result = runner.invoke(args=["rerun", str(original.id), str(original.id), "--external-id", FNA_REFERENCE, *SMOKE,
                                 "--implementation", "torch"])
    assert result.exit_code == 0, result.output
    assert "1 workload(s) from 1 run(s)" in result.output and "1 passed, 0 failed" in result.output
    assert len(reruns(small_app)) == 1


def test_an_external_id_a_speed_and_a_memory_row_share_reruns_the_speed_run(app, runner, tmp_path):
    """Liger publishes each workload's speed and memory at one timestamp, so both rows get one external id: the
    memory run was picked and refused ("measures memory")."""
    import csv

    rows = list(csv.reader((DATA / "liger_small.csv").open()))
    header, speed, memory = rows[0], rows[2], rows[4]
    assert (speed[3], memory[3]) == ("speed", "memory")
    memory[header.index("timestamp")] = speed[header.index("timestamp")]
    import_csv(runner, write_liger_csv(tmp_path / "shared_id.csv", [speed, memory]))
    original = source_run(app, implementation="liger")
    result = runner.invoke(args=["rerun", "--external-id", original.external_id, *SMOKE, "--implementation", "torch"])
    assert result.exit_code == 0, result.output
    [rerun] = reruns(app)
    assert (rerun.metric, rerun.workload_key) == ("speed", original.workload_key)


def test_rerun_of_the_mta_reference_by_kernel_and_pass_writes_a_bundle(small_app, runner, tmp_path):
    bundle = tmp_path / "results.jsonl"
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", *SMOKE,
                                 "--implementation", "torch", "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    [line] = bundle.read_text().splitlines()  # one workload, however many source runs share it
    document = json.loads(line)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    assert document["rerunOf"] == original.id
    assert document["workload"] == {"parameters": original.parameters, "dtype": "bf16", "options": original.options}
    assert document["environment"]["target"] == "cpu" and document["protocol"]["preset"] == "smoke"
    assert document["correctness"]["policy"]["tolerances"]["bf16"] >= document["correctness"]["relL2Error"]
    assert not reruns(small_app)  # --out writes the bundle instead of the database

    loaded = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert loaded.exit_code == 0, loaded.output
    assert [run.rerun_of_id for run in reruns(small_app)] == [original.id]


@pytest.mark.parametrize("arguments, message", [
    (["nosuchrun"], "no run with id 'nosuchrun'"),
    (["--external-id", "nope/forward"], "no run with external id"),
    (["--kernel", "no_such_kernel"], "no source-reported speed runs of no_such_kernel; and no plugin here declares "
                                     "the family 'no_such_kernel'"),
    (["--kernel", "fused_neighborhood_attention", "--implementation", "cuda_graph"], "has no implementation"),
])
def test_bad_input_exits_non_zero_with_a_message(small_app, runner, arguments, message):
    result = runner.invoke(args=["rerun", *arguments, *SMOKE])
    assert result.exit_code != 0
    assert message in result.output


UNPLUGGED_ROW = ("kernelindex_unplugged", "liger", "forward", "speed", "ms", "T", "tokens", "1024", "1.0", "0.9",
                 "1.1", '{"B": 2}', "NVIDIA H100 80GB HBM3", "2026-01-01 00:00:00", "0.8.0")
"""An upstream row of a family no plugin will ever declare."""


def test_a_family_without_a_plugin_is_refused(small_app, runner, tmp_path):
    unplugged = write_liger_csv(tmp_path / "unplugged.csv", [UNPLUGGED_ROW])
    import_csv(runner, unplugged)
    result = runner.invoke(args=["rerun", "--kernel", "kernelindex_unplugged", *SMOKE])
    assert result.exit_code != 0 and "no plugin implements the family 'kernelindex_unplugged'" in result.output


def test_memory_runs_are_not_rerun(small_app, runner):
    from app.models import Run

    with small_app.app_context():
        memory = Run.select().where(Run.metric == "memory").get()
    result = runner.invoke(args=["rerun", memory.id, *SMOKE])
    assert result.exit_code != 0 and "measures memory" in result.output


def test_memory_results_are_linked_to_the_memory_run_of_their_workload(small_app):
    from app.models import Run
    from app.rerun_requests import harness_requests

    with small_app.app_context():
        published = Run.get(Run.metric == "memory")
        speed = Run.get((Run.metric == "speed") & (Run.workload_key == published.workload_key)
                        & (Run.implementation == published.implementation) & (Run.pass_ == published.pass_))
        [request] = harness_requests([speed], "NVIDIA H200")
    assert request.memory_rerun_of == {published.implementation: published.id}
    assert request.rerun_of[published.implementation] == speed.id


@pytest.mark.parametrize("arguments, message", [
    ([], "name runs to rerun"),
    (["--pass", "forward"], "give --kernel too"),
    (["x", "--server", "http://localhost:5000"], "--server needs --token"),
    (["x", "--metric", "memory", "--target", "cpu"], "a cpu rerun measures no memory"),
    (["x", "--metric", "power"], "'power' is not one of 'speed', 'memory'"),
    (["x", "--server", "notaurl", "--token", "t"], "--server must be an http:// or https:// address"),
    (["x", "--server", "", "--token", "t"], "--server must be an http:// or https:// address, not ''"),
    (["x", "--out", ""], "--out names a bundle file, not an empty argument"),
    (["x", "--budget", "0"], "--budget is a number of seconds above 0, not 0.0"),
    (["x", "--budget", "nan"], "not nan"),
    (["x", "--budget", "1e10"], "--budget is at most 604800 seconds (a week), not 1e+10"),
    (["x", "--out", "/nonexistent/folder/bundle.jsonl"], "--out /nonexistent/folder/bundle.jsonl: No such file"),
    (["\udcff"], "a run id is 1 to 16 printable characters"),  # bytes that are not UTF-8 (``$'\\xff'``)
    (["--external-id", "\udcff"], "an external id is 1 to 600 printable characters"),
    (["--kernel", "\udcff"], "a family is 1 to 120 printable characters"),
    (["x", "--target", "cpu", "--device", "1"], "--device 1 picks a CUDA device; this rerun's target is cpu"),
    (["x", "--target", "cpu", "--device", "0"], "--device 0 picks a CUDA device; this rerun's target is cpu"),
    (["x", "--device", "one"], "'one' is not a valid integer"),
])
def test_usage_errors(runner, arguments, message):
    result = runner.invoke(args=["rerun", *arguments])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize("index", ["2", "-1"])
def test_a_device_torch_does_not_see_is_a_usage_error(runner, monkeypatch, index):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    result = runner.invoke(args=["rerun", "x", "--device", index])
    assert result.exit_code == 2 and f"--device {index}: torch sees CUDA devices 0 to 1 here" in result.output


@pytest.fixture
def server(small_app, monkeypatch):
    """Route the command's HTTP calls to the app's own API through its test client."""
    client = small_app.test_client()

    def urlopen(request, timeout):
        if isinstance(request, str):  # a GET
            request = urllib.request.Request(request)
        response = client.open(request.full_url.replace("http://kernelindex.test", ""), method=request.get_method(),
                               data=request.data, headers=dict(request.header_items()))
        if response.status_code >= 400:
            raise urllib.error.HTTPError(request.full_url, response.status_code, "refused", {},
                                         io.BytesIO(response.data))
        return io.BytesIO(response.data)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return "http://kernelindex.test"


def test_results_posted_to_the_server_need_a_valid_token(small_app, runner, server, tmp_path, monkeypatch):
    """A token the server refuses is found before anything is measured. Probed: `flask rerun --server URL --token
    WRONG` measured every workload (hours, on a GPU) and only then learnt the token was refused; the results it
    saved can only be imported by the server's operator (a GPU host has no database to import them into)."""
    monkeypatch.chdir(tmp_path)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    small = ["--target", "cpu", "--protocol", "smoke", "--implementation", "torch", "--server", server]
    refused = runner.invoke(args=["rerun", original.id, *small, "--token", "kih_not_a_token"])
    assert refused.exit_code == 1 and "Error: http://kernelindex.test refuses the token: unknown or revoked " \
                                      "rerun-host token; nothing was measured" in refused.output, refused.output
    assert "trial" not in refused.output and not list(tmp_path.glob("kernelindex-unsent-*.jsonl"))
    assert not reruns(small_app)

    token = runner.invoke(args=["tokens", "create", "cpu-host"]).output.strip()
    accepted = runner.invoke(args=["rerun", original.id, *small, "--token", token])
    assert accepted.exit_code == 0, accepted.output
    assert [run.rerun_of_id for run in reruns(small_app)] == [original.id]


def test_a_token_for_other_hardware_stops_the_rerun_before_it_measures(small_app, runner, server, tmp_path,
                                                                       monkeypatch):
    """A token the server accepts, for GPU models other than this host's: before GET /api/v1/rerun-token the rerun
    measured every workload and the post was then refused (403), the results left in an unsent bundle."""
    monkeypatch.chdir(tmp_path)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    token = runner.invoke(args=["tokens", "create", "h100-host", "--gpu", "NVIDIA H100 80GB HBM3"]).output.strip()
    refused = runner.invoke(args=["rerun", original.id, "--target", "cpu", "--protocol", "smoke", "--implementation",
                                  "torch", "--server", server, "--token", token])
    assert refused.exit_code == 1, refused.output
    assert ("Error: http://kernelindex.test would refuse the results: the token for host 'h100-host' posts results "
            "for NVIDIA H100 80GB HBM3 only, not ") in refused.output and "; nothing was measured" in refused.output
    assert "trial" not in refused.output and not list(tmp_path.glob("kernelindex-unsent-*.jsonl"))
    assert not reruns(small_app)


def test_results_are_kept_when_the_connection_breaks(small_app, runner, server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")

    def reset(request, timeout):
        raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(urllib.request, "urlopen", reset)
    result = runner.invoke(args=["rerun", original.id, "--target", "cpu", "--protocol", "smoke", "--implementation",
                                 "torch", "--server", server, "--token", "t"])
    assert result.exit_code == 1 and "could not read run" in result.output  # the run is looked up there first
    from app.rerun_requests import harness_requests

    with small_app.app_context():
        [request] = harness_requests([original], None)
    monkeypatch.setattr("app.cli.rerun.fetched_requests", lambda server, run_ids: [request])
    result = runner.invoke(args=["rerun", original.id, "--target", "cpu", "--protocol", "smoke", "--implementation",
                                 "torch", "--server", server, "--token", "t"])
    assert result.exit_code == 1 and "could not post to http://kernelindex.test: " in result.output
    assert "Traceback" not in result.output
    [unsent] = tmp_path.glob("kernelindex-unsent-*.jsonl")
    assert json.loads(unsent.read_text())["rerunOf"] == original.id


def test_a_server_answering_an_html_error_page_is_reported(small_app, runner, monkeypatch):
    def not_found(request, timeout):
        raise urllib.error.HTTPError("http://kernelindex.test/x", 404, "Not Found", {},
                                     io.BytesIO(b"<html><body>Not Found</body></html>"))

    monkeypatch.setattr(urllib.request, "urlopen", not_found)
    result = runner.invoke(args=["rerun", "abc", *SMOKE, "--server", "http://kernelindex.test", "--token", "t"])
    assert result.exit_code == 1 and "http://kernelindex.test: HTTP 404 Not Found" in result.output, result.output
    assert "Traceback" not in result.output


def test_a_server_answering_what_is_no_workload_is_reported(small_app, runner, monkeypatch):
    """JSON that is not the API's, or a page (a proxy's sign-in page, another site at that address) answered 200,
    which was reported as the JSON parser's "Expecting value: line 1 column 1 (char 0)"."""
    for body in (b"{}", b"[]", b"<!doctype html><html><body>Sign in</body></html>", b"\xff\xfe"):
        monkeypatch.setattr(urllib.request, "urlopen", lambda request, timeout, body=body: io.BytesIO(body))
        result = runner.invoke(args=["rerun", "abc", *SMOKE, "--server", "http://kernelindex.test", "--token", "t"])
        assert result.exit_code == 1 and "its answer is no rerun workload" in result.output, result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("refusal, message", [
    ("RerunRejected", "Error: the database refused the results: result 1: a conflict (results saved to "),
    ("DatabaseBusy", "Error: The database is busy; nothing was changed."),
])
def test_results_are_kept_when_this_database_cannot_record_them(small_app, runner, tmp_path, monkeypatch, refusal,
                                                                 message):
    """The results were measured, then lost where this database refused them or stayed busy (as where it is
    read-only): as when a server refuses them, they are kept in a bundle to import later."""
    from app.importers.kernelindex_rerun import RerunRejected
    from app.locks import DatabaseBusy

    def refuse(results):
        raise RerunRejected("result 1: a conflict") if refusal == "RerunRejected" else DatabaseBusy()

    monkeypatch.chdir(tmp_path)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    monkeypatch.setattr("app.importers.kernelindex_rerun.record_rerun_results", refuse)
    result = runner.invoke(args=["rerun", original.id, *SMOKE, "--implementation", "torch"])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output, result.output
    [unsent] = tmp_path.glob("kernelindex-unsent-*.jsonl")
    assert json.loads(unsent.read_text())["rerunOf"] == original.id and f"results saved to {unsent.name}" in (
        result.output.replace("./", ""))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_results_are_kept_when_the_bundle_cannot_be_written(small_app, runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    result = runner.invoke(args=["rerun", original.id, *SMOKE, "--implementation", "torch", "--out", "/dev/full"])
    assert result.exit_code == 1 and "could not append to --out /dev/full: No space left on device" in result.output
    assert "Traceback" not in result.output
    [unsent] = tmp_path.glob("kernelindex-unsent-*.jsonl")
    assert json.loads(unsent.read_text())["rerunOf"] == original.id


def test_results_are_kept_where_neither_the_bundle_nor_the_current_folder_can_be_written(small_app, runner, tmp_path,
                                                                                      monkeypatch):
    """The unsent bundle goes to the temporary folder when the current one cannot take it, and to standard output
    when no file can be written at all."""
    from app.cli import rerun as rerun_cli

    writable = tmp_path / "tmp"
    writable.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rerun_cli.tempfile, "tempdir", str(writable))
    append = rerun_cli.append_bundle

    def full_outside(folder):
        def appended(path, results):
            if Path(path).resolve().parent != folder:
                raise OSError(28, "No space left on device")
            append(path, results)
        return appended

    original = source_run(small_app, kernel="multi_token_attention", implementation="torch", pass_="forward")
    arguments = ["rerun", original.id, *SMOKE, "--implementation", "torch", "--out", "bundle.jsonl"]
    monkeypatch.setattr(rerun_cli, "append_bundle", full_outside(writable))
    in_temporary = runner.invoke(args=arguments)
    [unsent] = writable.glob("kernelindex-unsent-*.jsonl")
    assert in_temporary.exit_code == 1 and f"results saved to {unsent}" in in_temporary.output
    assert json.loads(unsent.read_text())["rerunOf"] == original.id and not list(tmp_path.glob("kernelindex-unsent-*"))

    monkeypatch.setattr(rerun_cli, "append_bundle", full_outside(tmp_path / "nowhere"))
    printed = runner.invoke(args=arguments)
    assert printed.exit_code == 1 and "the results are printed above, one bundle line each" in printed.output
    [line] = [line for line in printed.stdout.splitlines() if line.startswith("{")]
    assert json.loads(line)["rerunOf"] == original.id


def test_plugins_command_lists_plugins_and_broken_ones(runner, tmp_path, monkeypatch):
    (tmp_path / "broken.py").write_text("raise ImportError('needs a GPU library')\n")
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    result = runner.invoke(args=["plugins"])
    assert result.exit_code == 1, result.output
    assert "1 plugin(s) could not be loaded" in result.stderr
    assert "multi_token_attention  cpu  torch, torch_compile  [builtin: plugins.multi_token_attention.cpu]" \
        in result.output
    assert "BROKEN [directory:" in result.output and "needs a GPU library" in result.output
    if importlib.util.find_spec("transformers") is None:
        assert "huggingface (unavailable: transformers does not import: No module named 'transformers')" \
            in result.output
    as_json = runner.invoke(args=["plugins", "--json"])
    assert as_json.exit_code == 1
    listing = json.loads(as_json.stdout)
    assert {plugin["origin"] for plugin in listing["plugins"]} == {"builtin"}
    assert listing["broken"][0]["error"] == f"ImportError: needs a GPU library ({tmp_path / 'broken.py'}, line 1)"


def test_plugins_command_lists_added_implementations_with_their_origin(runner, tmp_path, monkeypatch):
    shutil.copy(TEST_PLUGINS / "rms_norm_vector_norm.py", tmp_path)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    example = tmp_path / "rms_norm_vector_norm.py"
    result = runner.invoke(args=["plugins"])
    assert result.exit_code == 0, result.output
    [rms_norm_cpu] = [line for line in result.output.splitlines() if line.startswith("rms_norm  cpu  ")]
    assert rms_norm_cpu.startswith("rms_norm  cpu  torch, torch_compile, huggingface")
    assert rms_norm_cpu.endswith(f", vector_norm [directory: {example}]  [builtin: plugins.rms_norm.cpu]")
    assert f"(adds vector_norm to rms_norm on cpu)  [directory: {example}]" in result.output.splitlines()


ADDED_TO_MTA = """
import dataclasses

from plugins.multi_token_attention.reference import FAMILY
from runners import hookimpl
from runners.types import AddedImplementation, Implementation


def prepare_pass(implementation, workload, pass_):
    return FAMILY.prepare_torch(dataclasses.replace(implementation, name="torch"), workload, pass_)


@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="multi_token_attention", target="cpu", prepare_pass=prepare_pass,
                                implementation=Implementation("torch_again", "A kernel author", "1"))]
"""


def test_rerun_runs_an_added_implementation_named_and_records_it(small_app, runner, tmp_path, monkeypatch):
    plugins_dir = tmp_path / "plugins"
    plugins_dir.mkdir()
    (plugins_dir / "torch_again.py").write_text(ADDED_TO_MTA)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(plugins_dir))
    bundle = tmp_path / "results.jsonl"
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", *SMOKE,
                                 "--implementation", "torch", "--implementation", "torch_again", "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    documents = [json.loads(line) for line in bundle.read_text().splitlines()]
    assert [(d["implementation"]["name"], d["status"]) for d in documents] == [("torch", "passed"),
                                                                             ("torch_again", "passed")]
    assert documents[1]["implementation"]["project"] == "A kernel author"
    loaded = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert loaded.exit_code == 0, loaded.output
    assert sorted(run.implementation for run in reruns(small_app)) == ["torch", "torch_again"]


@pytest.mark.parametrize("plugin, message", [
    ("def generate_environment(target, device):\n    raise RuntimeError('no GPU tool')\n",
     "a plugin's generate_environment failed: RuntimeError('no GPU tool')"),
    ("def generate_environment(target, device):\n    return {'nothing': 1}\n",
     "generate_environment answered no hardware with vendor, product and architecture"),
    ("def update_environment(environment, target, device):\n    raise RuntimeError('no clock')\n",
     "a plugin's update_environment failed: RuntimeError('no clock')"),
    ("def update_environment(environment, target, device):\n    environment['mine'] = {'versions': {1, 2}}\n",
     "generate_environment and update_environment made an environment that is no JSON data: Object of type set is "
     "not JSON serializable"),  # it was json.dumps's traceback once every result was measured
])
def test_a_failing_environment_hook_stops_the_rerun_with_its_reason(small_app, runner, tmp_path, monkeypatch,
                                                                    plugin, message):
    plugins_dir = tmp_path / "plugins"
    plugins_dir.mkdir()
    (plugins_dir / "environment.py").write_text("from runners import hookimpl\n\n\n@hookimpl(tryfirst=True)\n"
                                                + plugin)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(plugins_dir))
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", *SMOKE,
                                 "--implementation", "torch", "--out", str(tmp_path / "results.jsonl")])
    assert result.exit_code == 1 and message in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_without_leaves_implementations_out(small_app, runner, tmp_path):
    bundle = tmp_path / "without.jsonl"
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", "--param", "seq=8",
                                 "--target", "cpu", "--protocol", "smoke", "--without", "torch_compile",
                                 "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    names = {json.loads(line)["implementation"]["name"] for line in bundle.read_text().splitlines()}
    assert names == {"torch"}
    for left_out, message in (["no_such"], "no selected workload's family has that implementation"), \
            (["torch", "torch_compile"], "leaves no implementation to rerun"):
        refused = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", "--target",
                                      "cpu", *[part for name in left_out for part in ("--without", name)]])
        assert refused.exit_code == 2 and message in refused.output, refused.output


def test_param_sweeps_a_workload_beyond_the_published_rows(small_app, runner, tmp_path):
    bundle = tmp_path / "sweep.jsonl"
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", *SMOKE,
                                 "--implementation", "torch", "--param", "seq=16", "--param", "seq=24",
                                 "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    results = [json.loads(line) for line in bundle.read_text().splitlines()]
    assert sorted(r["workload"]["parameters"]["seq"] for r in results) == [16, 24]
    assert all(r["rerunOf"] is None and r["status"] == "passed" for r in results)
    assert all(r["workload"]["parameters"]["heads_in"] == 4 for r in results)


def test_a_family_nothing_published_is_measured_from_its_parameters(small_app, runner, tmp_path, monkeypatch):
    """A family plugin just dropped in has no published run to rerun: --param gives its workloads."""
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(TEST_PLUGINS))
    refused = runner.invoke(args=["rerun", "--kernel", "toy_linear", *SMOKE])
    assert refused.exit_code == 1 and ("no source-reported speed runs of toy_linear; to measure it afresh, give each "
                                       "of its parameters: --param rows=... --param features=...") in refused.output
    bundle = tmp_path / "toy.jsonl"
    result = runner.invoke(args=["rerun", "--kernel", "toy_linear", "--pass", "forward", "--param", "rows=8",
                                 "--param", "features=4", "--param", "features=8", "--dtype", "bf16", *SMOKE,
                                 "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    assert "2 workload(s) from 0 run(s) and --param for toy_linear" in result.output
    documents = [json.loads(line) for line in bundle.read_text().splitlines()]
    assert sorted(d["workload"]["parameters"]["features"] for d in documents) == [4, 8]
    assert all(d["workload"]["dtype"] == "bf16" and d["workload"]["options"] == {"bias": True} and d["pass"] ==
               "forward" and d["rerunOf"] is None and d["status"] == "passed" for d in documents)
    loaded = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert loaded.exit_code == 0 and "created 2" in loaded.output, loaded.output
    dtype_alone = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--dtype", "fp16", *SMOKE])
    assert dtype_alone.exit_code == 2 and "--dtype is the dtype of workloads made from --param" in dtype_alone.output


def test_a_fresh_familys_options_come_from_param_too(small_app, runner, tmp_path):
    """DyT's workloads need the option beta, which no parameter gives: a name that is not a parameter is an option,
    swept like one; without it the rerun says which option is missing, before anything is measured."""
    fresh = ["rerun", "--kernel", "dyt", "--pass", "forward", "--implementation", "torch", "--metric", "speed", *SMOKE,
             "--param", "tokens=8", "--param", "hidden=16"]
    unsaid = runner.invoke(args=fresh)
    assert unsaid.exit_code == 2 and "dyt cannot derive this workload's tensors without the option 'beta'" in unsaid.output
    boolean = runner.invoke(args=[*fresh[:-4], "--param", "tokens=true", "--param", "hidden=16", "--param", "beta=false"])
    assert boolean.exit_code == 2 and "empty or impossible tensors" in boolean.output  # true is no size
    bundle = tmp_path / "dyt.jsonl"
    result = runner.invoke(args=[*fresh, "--param", "beta=false", "--param", "beta=true", "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    assert "2 workload(s) from 0 run(s) and --param for dyt" in result.output
    documents = [json.loads(line) for line in bundle.read_text().splitlines()]
    assert sorted(d["workload"]["options"]["beta"] for d in documents) == [False, True]
    assert all(d["workload"]["parameters"] == {"tokens": 8, "hidden": 16} and d["status"] == "passed"
               for d in documents)


@pytest.mark.parametrize("assignment, message", [("seq", "NAME=VALUE"), ("colour=red", "has no parameter colour"),
                                                 ("seq=Infinity", "not inf"), ("seq=1.5", "not 1.5"),
                                                 ("seq=true", "not True"), ("seq=big", "not 'big'"),
                                                 ("seq=-1", "empty or impossible tensors"),
                                                 ("seq=0", "empty or impossible tensors"),
                                                 ("seq=1" + "0" * 5000, "--param seq is an integer of more than 4300")])
def test_param_usage_errors(small_app, runner, assignment, message):
    result = runner.invoke(args=["rerun", "--kernel", "multi_token_attention", "--pass", "forward", *SMOKE,
                                 "--param", assignment])
    assert result.exit_code == 2 and message in result.output


def test_a_bundle_whose_last_line_has_no_line_break_takes_more_results_on_lines_of_their_own(small_app, runner,
                                                                                               tmp_path):
    """A bundle saved without its last line break (an editor, `head -c`, a cut-short copy) had the next result
    written onto its last line: the two were one line that is no JSON, and `flask import kernelindex` refused the
    whole file."""
    bundle = tmp_path / "results.jsonl"
    arguments = ["rerun", "--external-id", FNA_REFERENCE, *SMOKE, "--implementation", "torch", "--out", str(bundle)]
    assert runner.invoke(args=arguments).exit_code == 0
    bundle.write_text(bundle.read_text().rstrip("\n"))
    result = runner.invoke(args=arguments)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["implementation"]["name"] for line in bundle.read_text().splitlines()] == ["torch"] * 2
    loaded = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert loaded.exit_code == 0, loaded.output
    assert len(reruns(small_app)) == 2


def test_two_reruns_of_one_workload_ending_in_the_same_second_are_both_recorded(small_app, runner, monkeypatch):
    """Two `flask rerun`s of one workload started at once on one host (probed against one database) finished within
    a second: observedAt was cut to the second, so both results had one identity with other figures, the second was
    refused ("a result never overwrites another") and its rerun stopped there, and its saved bundle was refused
    again on import."""
    from datetime import datetime, timedelta, timezone

    from runners import rerun as harness

    second = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=5)
    moments = iter([second + timedelta(milliseconds=100), second + timedelta(milliseconds=600)])

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return next(moments)

    monkeypatch.setattr(harness, "datetime", Clock)
    arguments = ["rerun", "--external-id", FNA_REFERENCE, *SMOKE, "--implementation", "torch"]
    for _ in range(2):
        result = runner.invoke(args=arguments)
        assert result.exit_code == 0, result.output
    recorded = reruns(small_app)
    assert len({run.observed_at for run in recorded}) == 2
    assert len({run.external_id for run in recorded}) == 2, [run.external_id for run in recorded]  # ids stay unique


@pytest.mark.parametrize("content", [b"kernel_name,kernel_provider,metric_name\n", b"SQLite format 3\x00"],
                         ids=["a CSV", "a database"])
def test_out_naming_an_existing_file_that_is_no_bundle_is_refused_before_anything_is_measured(small_app, runner,
                                                                                              tmp_path, content):
    """--out appended its JSON lines to whatever file it named: probed with the SQLite database itself and with a
    Liger CSV, each of which then held results that `flask import kernelindex` cannot read, and the CSV, refused as
    a whole by `flask import liger`, no longer imported."""
    kept = tmp_path / "kept"
    kept.write_bytes(content)
    result = runner.invoke(args=["rerun", "--external-id", FNA_REFERENCE, *SMOKE, "--implementation", "torch",
                                 "--out", str(kept)])
    assert result.exit_code == 2 and f"--out {kept} holds something other than a bundle" in result.output, \
        result.output
    assert kept.read_bytes() == content and "trial" not in result.output
