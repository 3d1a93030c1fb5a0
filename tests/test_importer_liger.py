"""The Liger-Kernel CSV importer: normalization, idempotence, supersession and every failure path."""

import codecs
import csv
import gzip
import io
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

import pytest

from app.importers.liger_csv import LigerCsvReader
from app.importers.liger_rows import parse_number, parsed_config
from app.models import Family, Manifest, Run, SourceFile
from runners.discovery import family_definitions

from .conftest import DATA, LIGER_DATA, liger_files
from .factories import HEADER

FNA_CONFIG = '"{""batch_size"": 2, ""hidden_size"": 512, ""num_heads"": 8, ""kernel_size"": 7, ""dilation"": 1, ""bias"": true, ""dtype"": ""torch.float32""}"'


def import_liger(runner, *locations):
    return runner.invoke(args=["import", "liger", *map(str, locations)])


def fna_row(x="256", median="0.1", timestamp="2025-05-27 19:25:08", gpu="NVIDIA H100 80GB HBM3", provider="liger",
            p20=None, p80=None):
    """A row of upstream's FNA CSV; p20 and p80 bracket a numeric median (0.09 and 0.11 by default) unless given."""
    try:
        number = float(median)
    except ValueError:
        number = 0.1
    p20 = p20 or f"{min(0.09, number):g}"
    p80 = p80 or f"{max(0.11, number):g}"
    return (f"fused_neighborhood_attention,{provider},forward,speed,ms,seq_len,sequence length,{x},{median},{p20},"
            f"{p80},{FNA_CONFIG},{gpu},{timestamp},0.5.10")


def write(tmp_path, name, *lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_summary_and_normalized_parameters(app, runner):
    result = import_liger(runner, DATA / "liger_small.csv")
    assert result.exit_code == 0, result.output
    assert "read 9, created 9, unchanged 0, superseded 0, rejected 0" in result.output
    with app.app_context():
        mta = Run.get((Run.kernel == "multi_token_attention") & (Run.implementation == "torch"))
        assert mta.parameters == {"seq": 1024, "batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1}
        assert mta.options == {"bias": True} and mta.dtype == "bf16" and mta.x_name == "seq"
        assert mta.evidence == "source-reported" and mta.status == "passed"
        assert (mta.median, mta.p20, mta.p80, mta.unit) == (719872, 716800, 726016, "ns")
        fna = Run.get((Run.kernel == "fused_neighborhood_attention") & (Run.implementation == "torch"))
        assert fna.median == 84550209  # past 2**24: stored as a double, never a single-precision float
        named_model = Run.get(Run.implementation == "liger_triton")  # x is a model name: its vocabulary is known
        assert named_model.x_value == "llama_2_7b" and named_model.x_number is None
        assert named_model.parameters == {"tokens": 2048, "vocab": 32000} and named_model.dtype == "fp32"
        assert named_model.options == {"model_config": "llama_2_7b", "batch": 1, "seq": 2048}
        memory = Run.get(Run.metric == "memory")
        assert (memory.median, memory.unit) == (52.5, "MB")
        assert Family.get_by_id("multi_token_attention").title == "Multi-token attention"
        source = SourceFile.get()
        assert source.rows_read == 9 and source.runs_created == 9 and len(source.sha256) == 64


def test_gpu_form_factors_are_never_merged(app, runner):
    import_liger(runner, DATA / "liger_small.csv")
    with app.app_context():
        hbm3, pcie = (Run.get((Run.implementation == "liger") & (Run.gpu == gpu) & (Run.metric == "speed"))
                      for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"))
        assert hbm3.gpu_product == pcie.gpu_product == "NVIDIA H100"
        assert hbm3.comparison_key_id != pcie.comparison_key_id
        assert hbm3.environment_digest != pcie.environment_digest


def test_reimport_creates_nothing(app, runner):
    import_liger(runner, DATA / "liger_small.csv")
    with app.app_context():
        counts = (Run.select().count(), Manifest.select().count(), SourceFile.select().count())
    again = import_liger(runner, DATA / "liger_small.csv")
    assert "created 0, unchanged 9" in again.output
    with app.app_context():
        assert (Run.select().count(), Manifest.select().count(), SourceFile.select().count()) == counts


def test_config_is_compared_parsed_and_newer_observations_supersede(app, runner):
    import_liger(runner, DATA / "liger_small.csv")
    result = import_liger(runner, DATA / "liger_small_later.csv")
    # the liger row differs only in the order of its config keys: the same observation
    assert "read 2, created 1, unchanged 1, superseded 1, rejected 0" in result.output, result.output
    with app.app_context():
        old, new = (Run.select().where((Run.kernel == "fused_neighborhood_attention") & (Run.implementation == "torch"))
                    .order_by(Run.observed_at))
        assert old.superseded_by_id == new.id and new.superseded_by_id is None
        assert old.rank is None and new.rank == 2  # liger 0.315 ms stays #1
        assert [run.id for run in new.supersedes] == [old.id]
        assert new.comparison_key.size == 2


def test_history_in_any_order_gives_the_same_runs(tmp_path, app, runner):
    import_liger(runner, DATA / "liger_small_later.csv", DATA / "liger_small.csv")
    with app.app_context():
        current = {r.external_id: (r.rank, r.superseded_by_id is None) for r in Run.select()}
    assert len(current) == 10
    assert sum(1 for rank, is_current in current.values() if not is_current) == 1


def test_malformed_rows_are_rejected_with_line_numbers(tmp_path, app, runner):
    path = write(tmp_path, "mixed.csv", ",".join(HEADER),
                 fna_row("128"),
                 fna_row("256", median="fast"),
                 fna_row("512").replace("2025-05-27 19:25:08", "yesterday"),
                 'fused_neighborhood_attention,liger,forward,speed,ms,seq_len,sequence length,1024,0.1,0.09,0.11,"{not json}",NVIDIA H100 80GB HBM3,2025-05-27 19:25:08,0.5.10',
                 fna_row("2048")[:40],
                 fna_row("4096", median="-1"),
                 fna_row("8192"))
    result = import_liger(runner, path)
    assert result.exit_code == 0
    assert "read 7, created 2, unchanged 0, superseded 0, rejected 5" in result.output
    for line, reason in ((3, "y_value_50 is not a number"), (4, "timestamp"),
                         (5, "extra_benchmark_config_str is not JSON"),
                         (6, "expected 15 fields"), (7, "y_value_50 is not a finite non-negative number")):
        assert f"line {line}: rejected: {reason}" in result.output, result.output
    with app.app_context():
        assert sorted(Run.select(Run.x_value).tuples()) == [("128",), ("8192",)]


def test_figures_are_read_as_the_csv_writes_numbers_only(tmp_path, app, runner):
    """``float()`` reads ``1_000`` and other scripts' digits; no upstream row spells a figure so."""
    path = write(tmp_path, "spelled.csv", ",".join(HEADER), fna_row("128", median="1_000"),
                 fna_row("256", median="\u0663"), fna_row("512", median="\uff13"), fna_row("1024", median="0.1"))
    result = import_liger(runner, path)
    assert "read 4, created 1, unchanged 0, superseded 0, rejected 3" in result.output, result.output
    for line, text in ((2, "'1_000'"), (3, "'\u0663'"), (4, "'\uff13'")):
        assert f"line {line}: rejected: y_value_50 is not a number: {text}" in result.output, result.output


def test_a_row_naming_an_option_value_its_family_does_not_measure_is_rejected(tmp_path, app, runner):
    """As a rerun result is: the family reads ``bias`` as true or false, so "false" (a string, read as true) or a
    misspelled name would store a workload it does not measure."""
    path = write(tmp_path, "options.csv", ",".join(HEADER),
                 fna_row("128"),
                 fna_row("256").replace('""bias"": true', '""bias"": ""false""'),
                 fna_row("512").replace('""bias"": true', '""Bias"": false'))
    result = import_liger(runner, path)
    assert "read 3, created 1, unchanged 0, superseded 0, rejected 2" in result.output, result.output
    assert ('line 3: rejected: fused_neighborhood_attention workloads take the option bias as true or false, '
            'not "false"') in result.output
    assert 'line 4: rejected: fused_neighborhood_attention workloads name the option bias, not "Bias"' in result.output


def test_rows_no_run_can_hold_are_rejected_and_the_others_imported(tmp_path, app, runner):
    path = write(tmp_path, "hostile.csv", ",".join(HEADER),
                 fna_row("128"),
                 fna_row("256", median="1e10"),  # ms: more ns than canonical JSON's integers reach
                 fna_row("99999999999999999999999999"),
                 fna_row("512").replace('""batch_size"": 2', '""batch_size"": 1e999'),
                 fna_row("1024", gpu="   "),
                 fna_row("2048").replace("fused_neighborhood_attention,", "zz/../x,", 1),
                 fna_row("4096"),
                 fna_row("4096", median="0.2"))
    result = import_liger(runner, path)
    assert result.exit_code == 0, result.output
    assert "read 8, created 2, unchanged 0, superseded 0, rejected 6" in result.output
    for line, reason in ((3, "a latency in ns is an integer beyond"), (4, "x_value is an integer beyond"),
                         (5, "a number in extra_benchmark_config_str is inf"), (6, "empty gpu_name"),
                         (7, "kernel_name is 1 to 120 printable characters with no /"),
                         (9, "the observation of line 8 again, with other figures")):
        assert f"line {line}: rejected: {reason}" in result.output, result.output
    with app.app_context():
        assert sorted(Run.select(Run.x_value).tuples()) == [("128",), ("4096",)]


def test_a_stored_observation_given_other_figures_is_rejected_and_kept(tmp_path, app, runner):
    """A corrected or tampered file: the same observation (kernel, provider, x, config, GPU, timestamp) with another
    median is reported, and the stored run keeps its figures; the same figures again are unchanged."""
    import_liger(runner, write(tmp_path, "first.csv", ",".join(HEADER), fna_row("128"), fna_row("256")))
    result = import_liger(runner, write(tmp_path, "edited.csv", ",".join(HEADER), fna_row("128"),
                                        fna_row("256", median="0.9999"), fna_row("512")))
    assert "read 3, created 1, unchanged 1, superseded 0, rejected 1" in result.output, result.output
    with app.app_context():
        stored = Run.get(Run.x_value == "256")
        assert f"line 3: rejected: the observation run {stored.id} holds, with other figures" in result.output
        assert stored.median == 100_000 and Run.select().count() == 3


@pytest.mark.parametrize("content, message", [
    ("", "the file is empty"),
    ("a,b,c\n1,2,3\n", "missing columns"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (",".join(HEADER) + ",gpu_name\n", "the header names gpu_name more than once"),
])
def test_wrong_format_files_change_nothing(tmp_path, app, runner, content, message):
    import_liger(runner, DATA / "liger_small.csv")
    path = tmp_path / "bad.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = import_liger(runner, path)
    assert result.exit_code == 1 and message in result.output
    with app.app_context():
        assert Run.select().count() == 9 and SourceFile.select().count() == 1


def test_a_csv_may_start_with_a_byte_order_mark(tmp_path, app, runner):
    """Spreadsheets write one; it is no part of the first column's name (rerun bundles read it the same way)."""
    path = tmp_path / "marked.csv"
    path.write_bytes(codecs.BOM_UTF8 + (DATA / "liger_small.csv").read_bytes())
    result = import_liger(runner, path)
    assert result.exit_code == 0 and "created 9" in result.output, result.output


def test_truncated_file_keeps_its_good_rows_and_reports_the_cut_one(tmp_path, app, runner):
    text = (DATA / "liger_small.csv").read_text()
    path = tmp_path / "truncated.csv"
    path.write_text(text[: text.index("multi_token_attention,liger") + 60])
    result = import_liger(runner, path)
    assert "rejected 1" in result.output and "line 7: rejected: expected 15 fields" in result.output
    assert "created 5" in result.output


def test_arguments_that_name_nothing_to_import_are_usage_errors(app, runner, tmp_path):
    result = import_liger(runner, tmp_path)
    assert result.exit_code == 2 and "is a folder with no .csv file in it" in result.output
    result = runner.invoke(args=["import", "liger", str(DATA / "liger_small.csv"), "--commit", "main\x01"])
    assert result.exit_code == 2 and "a commit is 7 to 40 hexadecimal digits" in result.output
    with app.app_context():
        assert Run.select().count() == 0


def test_missing_file_and_failing_url(app, runner, tmp_path):
    result = import_liger(runner, tmp_path / "nope.csv")
    assert result.exit_code == 1 and "could not read" in result.output
    result = import_liger(runner, "http://127.0.0.1:9/liger.csv")
    assert result.exit_code == 1 and "could not fetch" in result.output
    with app.app_context():
        assert Run.select().count() == 0


@pytest.mark.parametrize("location, message", [
    ("http://user:secret@127.0.0.1:9/liger.csv", "holds a user name or password, which an import neither sends"),
    ("https://token@127.0.0.1:9/liger.csv", "holds a user name or password"),
    ("file:///etc/hostname", "is no file, and an import fetches http:// and https:// URLs only"),
    ("ftp://127.0.0.1:9/liger.csv", "is no file, and an import fetches http:// and https:// URLs only"),
])
def test_a_url_an_import_does_not_fetch_is_refused_saying_why(app, runner, location, message):
    """Read as a path, ``file://`` and ``ftp://`` were 'No such file'; urllib took ``user:secret@127.0.0.1`` for a
    host name, and the import said it was unknown."""
    result = import_liger(runner, location)
    assert result.exit_code == 1 and message in result.output, result.output
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


@contextmanager
def serving(answer, threaded: bool = False):
    """A local HTTP server that answers every GET with ``answer(handler)``, its base URL yielded, shut down after
    (``threaded``: one that answers several requests at once)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            answer(self)

        def log_message(self, *args):
            pass

    server = (ThreadingHTTPServer if threaded else HTTPServer)(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def test_import_from_url(app, runner):
    body = (DATA / "liger_small.csv").read_bytes()

    def answer(handler):
        if handler.path == "/loop.csv":
            handler.send_response(302)
            handler.send_header("Location", "/loop.csv")
            handler.end_headers()
            return
        if handler.path != "/liger.csv":
            handler.send_error(404)
            return
        handler.send_response(200)
        handler.end_headers()
        handler.wfile.write(body)

    with serving(answer) as base:
        assert "created 9" in import_liger(runner, f"{base}/liger.csv").output
        missing = import_liger(runner, f"{base}/missing.csv")
        assert missing.exit_code == 1 and "404" in missing.output
        looping = import_liger(runner, f"{base}/loop.csv")  # urllib says so in three lines
        assert looping.exit_code == 1 and "redirect error that would lead to an infinite loop" in looping.output
        assert len(looping.output.strip().splitlines()) == 1, looping.output


def test_a_url_is_fetched_within_the_timeout_in_all_and_up_to_the_cap(app, runner, monkeypatch):
    """A server sending a byte at a time never trips the socket's timeout, nor one sending without end the cap."""
    def answer(handler):
        handler.send_response(200)
        handler.end_headers()
        try:
            while True:
                handler.wfile.write(b"x" * (1 if handler.path == "/slow.csv" else 64 * 1024))
                handler.wfile.flush()
                time.sleep(0.05 if handler.path == "/slow.csv" else 0)
        except OSError:  # the importer hung up
            pass

    app.config["IMPORT_TIMEOUT_SECONDS"] = 1
    monkeypatch.setattr("app.importers.liger_csv.MAX_LIGER_CSV_BYTES", 2 ** 20)
    with serving(answer, threaded=True) as base:
        slow = import_liger(runner, f"{base}/slow.csv")
        assert slow.exit_code == 1 and "took longer than the import's timeout" in slow.output, slow.output
        endless = import_liger(runner, f"{base}/endless.csv")
        assert endless.exit_code == 1 and "holds more than 1 MiB, the most this import reads" in endless.output
        shouted = import_liger(runner, base.replace("http", "HTTP") + "/endless.csv")  # a scheme in any case
        assert shouted.exit_code == 1 and "holds more than 1 MiB" in shouted.output, shouted.output


def test_a_url_whose_headers_drip_is_refused_within_the_timeout(app, runner):
    """A server sending its headers a byte at a time trips neither the socket's timeout nor the body's deadline."""
    def answer(handler):
        try:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            for _ in range(200):  # 10 s, a byte each 50 ms
                handler.wfile.write(b"x")
                handler.wfile.flush()
                time.sleep(0.05)
            handler.wfile.write(b"\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass

    app.config["IMPORT_TIMEOUT_SECONDS"] = 1
    with serving(answer, threaded=True) as base:
        started = time.monotonic()
        result = import_liger(runner, f"{base}/drip.csv")
        assert time.monotonic() - started < 5, result.output
        assert result.exit_code == 1 and "took longer than the import's timeout" in result.output, result.output


def test_a_url_whose_server_hangs_up_before_its_content_length_imports_nothing(app, runner):
    """The body ends at a row's end, so every row it holds is whole: only the announced length tells it is cut."""
    body = (DATA / "liger_small.csv").read_bytes()

    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body) + 1000))
        handler.end_headers()
        handler.wfile.write(body)

    with serving(answer) as base:
        result = import_liger(runner, f"{base}/liger.csv")
    assert result.exit_code == 1, result.output
    assert (f"the server hung up after {len(body)} of the {len(body) + 1000} bytes it announced"
            in result.output), result.output
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


def test_a_url_sent_compressed_though_never_asked_so_is_refused_saying_so(app, runner):
    """urllib asks for no encoding and decodes none: the gzip bytes were called no UTF-8 text."""
    body = gzip.compress((DATA / "liger_small.csv").read_bytes())

    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with serving(answer) as base:
        result = import_liger(runner, f"{base}/liger.csv")
    assert result.exit_code == 1, result.output
    assert "the server sent it encoded (gzip, its Content-Encoding), which an import does not decode" in result.output
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


def test_a_redirect_to_anything_but_http_is_not_followed(app, runner):
    """urllib's own redirect handler follows one to ftp:// (and refuses file://): neither is fetched, nor contacted."""
    ftp = socket.create_server(("127.0.0.1", 0))
    ftp.settimeout(0.5)
    targets = {"/ftp.csv": f"ftp://127.0.0.1:{ftp.getsockname()[1]}/liger.csv", "/file.csv": "file:///etc/hostname"}

    def answer(handler):
        handler.send_response(302)
        handler.send_header("Location", targets[handler.path])
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    try:
        with serving(answer) as base:
            for path, target in targets.items():
                result = import_liger(runner, f"{base}{path}")
                assert result.exit_code == 1, result.output
                assert f"Redirection to url '{target}' is not allowed" in result.output, result.output
            with pytest.raises(TimeoutError):
                ftp.accept()  # nobody came
    finally:
        ftp.close()
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


@pytest.mark.skipif(not LIGER_DATA.is_dir(), reason="../shared/data/liger is not present")
def test_source_commit_is_read_from_source_md(app, runner):
    import_liger(runner, LIGER_DATA / "history" / "2024-09-03_b5672a15.csv", LIGER_DATA / "all_benchmark_data_cutile.csv")
    with app.app_context():
        by_path = {f.location.rsplit("/", 1)[-1]: f for f in SourceFile.select()}
        first = by_path["2024-09-03_b5672a15.csv"]
        assert first.commit == "b5672a153b7b314a367996fc6cd60a57aeda4ccc"
        assert first.upstream_path == "benchmark/data/all_benchmark_data.csv"
        assert first.repository == "https://github.com/linkedin/Liger-Kernel" and first.license == "BSD-2-Clause"
        cutile = by_path["all_benchmark_data_cutile.csv"]
        assert cutile.commit == "7a12e092579dba20fa02388bf80a2c39cbc9010a"
        assert cutile.upstream_path == "benchmark/data/all_benchmark_data_cutile.csv"


# The sweeps name one quantity differently (H in one sweep is hidden_size in another's config):
# the recomputation spells out its own synonyms rather than reuse the importer's table.
SYNONYMS = {"H": "hidden_size", "T": "seq_len", "L": "seq_len", "B": "batch_size", "bsz": "batch_size",
            "V": "vocab_size", "num_heads": "heads", "C_in": "heads_in", "C_out": "heads_out", "K": "k"}


def newest_csv_groups():
    """Rank and group size of every row of the newest main CSV, recomputed without the app."""
    import json

    def number(text):
        try:
            value = float(text)
        except ValueError:
            return text
        return int(value) if value.is_integer() else value

    groups = {}
    for row in csv.DictReader(io.open(LIGER_DATA / "all_benchmark_data.csv", newline="")):
        workload = {SYNONYMS.get(k, k): v for k, v in json.loads(row["extra_benchmark_config_str"]).items()}
        workload[SYNONYMS.get(row["x_name"], row["x_name"])] = number(row["x_value"])
        key = (row["kernel_name"], row["kernel_operation_mode"], row["metric_name"], row["gpu_name"],
               json.dumps(workload, sort_keys=True))
        groups.setdefault(key, []).append(row)
    expected = {}
    for rows in groups.values():
        newest = {}  # a provider's later row of one workload supersedes its earlier ones
        for row in sorted(rows, key=lambda row: row["timestamp"]):
            newest[row["kernel_provider"]] = row
        medians = [float(m["y_value_50"]) for m in newest.values()]
        for member in rows:
            rank = 1 + sum(1 for value in medians if value < float(member["y_value_50"]))
            expected[(member["kernel_name"], member["kernel_provider"], member["kernel_operation_mode"],
                      member["metric_name"], member["x_value"], member["extra_benchmark_config_str"],
                      member["gpu_name"], member["timestamp"])] = (
                rank if newest[member["kernel_provider"]] is member else None, len(newest))
    return expected


@pytest.mark.skipif(not LIGER_DATA.is_dir(), reason="../shared/data/liger is not present")
def test_whole_history_one_run_per_observation_and_ranks_match_newest_csv(tmp_path):
    from .conftest import fresh_database_url, liger_files, make_app

    app = make_app(fresh_database_url("ki_test_history", tmp_path))
    history = [f for f in liger_files() if "cut" not in f]
    result = app.test_cli_runner().invoke(args=["import", "liger", *history])
    assert result.exit_code == 0, result.output
    with app.app_context():
        assert Run.select().count() == 2940
        assert Run.select().where(Run.superseded_by.is_null(False)).count() == 136
        expected = newest_csv_groups()
        runs = {}
        for run in Run.current(Run, Run.comparison_key):
            runs[run.external_id] = run
        checked = 0
        from app.importers.liger_csv import LigerCsvReader
        from runners.discovery import family_definitions

        reader = LigerCsvReader(family_definitions())
        for row in csv.DictReader(io.open(LIGER_DATA / "all_benchmark_data.csv", newline="")):
            checked_row = reader.check(row)
            run = Run.get(Run.identity_key == checked_row.identity.identity_key)
            key = (row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"], row["metric_name"],
                   row["x_value"], row["extra_benchmark_config_str"], row["gpu_name"], row["timestamp"])
            assert (run.rank, run.comparison_key.size) == expected[key], run.external_id
            checked += 1
        assert checked == 2448


ROPE_CONFIG = '"{{""dtype"": ""torch.bfloat16"", ""{name}"": {value}, ""num_q_heads"": 32, ""num_kv_heads"": 8}}"'


def rope_row(provider, x_name, x_value, config, median, timestamp):
    return (f"rope,{provider},backward,speed,ms,{x_name},label,{x_value},{median},{median},{median},{config},"
            f"NVIDIA A100-SXM4-80GB,2024-09-03 {timestamp},0.2.1")


def test_superseded_counts_the_runs_an_import_put_out_of_date(tmp_path, app, runner):
    """The third observation of a measurement puts one run out of date, the second's: the first, already superseded,
    is only pointed at the newest (it was counted again on every later import)."""
    config = ROPE_CONFIG.format(name="seq_len", value=2048)
    for number, timestamp in enumerate(("15:39:57", "15:40:57", "15:41:57")):
        path = write(tmp_path, f"rope{number}.csv", ",".join(HEADER), rope_row("liger", "H", 8192, config, "0.128",
                                                                               timestamp))
        result = import_liger(runner, path)
        assert f"read 1, created 1, unchanged 0, superseded {min(number, 1)}, rejected 0" in result.output, result.output
    with app.app_context():
        first, second, third = Run.select().order_by(Run.observed_at)
        assert (first.superseded_by_id, second.superseded_by_id, third.superseded_by_id) == (third.id, third.id, None)


def test_one_file_s_later_row_of_a_workload_supersedes_the_earlier_however_its_sweep_spells_it(tmp_path, app,
                                                                                                 runner):
    """Issue 17: upstream's hidden-size sweep at hidden 8192 and sequence sweep at seq 2048 are one workload."""
    by_hidden = ROPE_CONFIG.format(name="seq_len", value=2048)
    by_seq = ROPE_CONFIG.format(name="hidden_size", value=8192)
    path = write(tmp_path, "rope.csv", ",".join(HEADER),
                 rope_row("liger", "H", 8192, by_hidden, "0.128", "15:39:57"),
                 rope_row("huggingface", "H", 8192, by_hidden, "0.6215", "15:39:59"),
                 rope_row("liger", "T", 2048, by_seq, "0.116", "15:40:08"),
                 rope_row("huggingface", "T", 2048, by_seq, "0.6214", "15:40:10"))
    result = import_liger(runner, path)
    assert "read 4, created 4, unchanged 0, superseded 2, rejected 0" in result.output, result.output
    with app.app_context():
        earlier_liger, earlier_hf, liger, huggingface = Run.select().order_by(Run.observed_at)
        assert (earlier_liger.superseded_by_id, earlier_hf.superseded_by_id) == (liger.id, huggingface.id)
        assert (liger.rank, huggingface.rank, earlier_liger.rank) == (1, 2, None)
        assert liger.comparison_key.size == 2


def test_one_observation_spelled_by_two_sweeps_at_one_second_is_one_run(tmp_path, app, runner):
    """Its two rows make one run document (one digest): the import failed on the run digest's unique index, a
    traceback; with other figures both were stored, and which of them ranked followed their ids."""
    by_hidden = ROPE_CONFIG.format(name="seq_len", value=2048)
    by_seq = ROPE_CONFIG.format(name="hidden_size", value=8192)
    result = import_liger(runner, write(tmp_path, "rope.csv", ",".join(HEADER),
                                        rope_row("liger", "H", 8192, by_hidden, "0.128", "15:39:57"),
                                        rope_row("liger", "T", 2048, by_seq, "0.128", "15:39:57"),
                                        rope_row("liger", "H", 8192, by_hidden, "0.2", "15:40:57"),
                                        rope_row("liger", "T", 2048, by_seq, "0.3", "15:40:57")))
    assert result.exit_code == 0, result.output
    assert "read 4, created 2, unchanged 1, superseded 1, rejected 1" in result.output, result.output
    assert ("line 5: rejected: the observation of line 4, its sweep spelled another way, with other figures"
            in result.output)
    result = import_liger(runner, write(tmp_path, "again.csv", ",".join(HEADER),
                                        rope_row("liger", "T", 2048, by_seq, "0.131", "15:39:57"),
                                        rope_row("huggingface", "T", 2048, by_seq, "0.6", "15:39:58")))
    assert "read 2, created 1, unchanged 0, superseded 0, rejected 1" in result.output, result.output
    with app.app_context():
        earlier, later = Run.select().where(Run.implementation == "liger").order_by(Run.observed_at)
        assert (earlier.median, later.median, later.rank) == (128_000, 200_000, 1)
        assert f"line 2: rejected: the observation run {earlier.id} holds, its sweep spelled another way" in result.output


@pytest.mark.skipif(not LIGER_DATA.is_dir(), reason="../shared/data/liger is not present")
def test_upstream_rope_group_ranks_each_implementation_once(liger_app):
    """rope, backward, A100, seq 2048 (hidden 8192): liger at 15:39:57 and 15:40:08, huggingface beside it."""
    with liger_app.app_context():
        runs = [run for run in Run.select().where((Run.kernel == "rope") & (Run.pass_ == "backward")
                                                  & (Run.metric == "speed") & (Run.implementation == "liger")
                                                  & (Run.gpu == "NVIDIA A100-SXM4-80GB")).order_by(Run.observed_at)
                if (run.parameters["seq"], run.parameters["hidden"]) == (2048, 8192)]
        assert [f"{run.observed_at:%H:%M:%S}" for run in runs] == ["15:39:57", "15:40:08"]
        earlier, later = runs
        assert earlier.superseded_by_id == later.id and earlier.rank is None
        members = Run.current().where((Run.comparison_key == later.comparison_key) & Run.rank.is_null(False))
        assert sorted((run.rank, run.implementation) for run in members) == [(1, "liger"), (2, "huggingface")]
        assert later.comparison_key.size == 2


def test_every_upstream_sweep_moves_its_workload():
    """Each point of every upstream sweep of sizes, normalized as the importer does, has tensors of its own shapes:
    a swept value the importer parked in an option (layer norm's ``T`` once, beside the unused ``seq_len`` it took for
    the rows) left every point of a sweep the same workload."""
    if not LIGER_DATA.is_dir():
        pytest.skip("../shared/data/liger is not present")
    reader = LigerCsvReader(family_definitions())
    sweeps = {}
    for path in liger_files():
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                definition = reader.families.get(row["kernel_name"])
                x_value = parse_number(row["x_value"])
                if definition is None or isinstance(x_value, str):
                    continue  # models by name: several share a vocabulary, so a cross-entropy workload
                config = parsed_config(row["extra_benchmark_config_str"])
                _, parameters, dtype, options = reader.normalize(row, config, x_value)
                shapes = tuple(spec.shape for spec in definition.tensors({**parameters, **options}, dtype))
                sweep = (row["kernel_name"], row["x_name"], row["extra_benchmark_config_str"])
                sweeps.setdefault(sweep, {})[row["x_value"]] = shapes
    assert len(sweeps) > 50
    for sweep, points in sweeps.items():
        assert len(set(points.values())) == len(points), sweep
