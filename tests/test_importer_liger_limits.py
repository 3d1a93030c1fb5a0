"""The Liger importer's bounds: what either database would refuse is refused as a row (with its line)
or as a file (with its line), the same on SQLite and PostgreSQL, and a folder goes on past a bad file."""

import os
import time

import pytest

from app.models import Run, SourceFile

from .factories import HEADER
from .test_importer_liger import FNA_CONFIG, fna_row, import_liger, write

GOOD = fna_row("256")


def nested_config(depth: int) -> str:
    """A CSV cell holding a JSON object ``depth`` levels deep."""
    inner = "1"
    for _ in range(depth):
        inner = '{""a"": ' + inner + "}"
    return f'"{inner}"'


def only_rejected(tmp_path, bad_row):
    """A file whose line 2 is ``bad_row`` and line 3 a good row."""
    return write(tmp_path, "one_bad.csv", ",".join(HEADER), bad_row, GOOD)


@pytest.mark.parametrize("bad_row, reason", [
    (fna_row("128", provider="li\x00ger"), "kernel_provider contains a control character"),
    (fna_row("128", gpu="NVIDIA\x07H100"), "gpu_name contains a control character"),
    *((fna_row("128", gpu=gpu), "gpu_name is 1 to 120 printable characters")  # ranked apart from NVIDIA H100 ...
      for gpu in ("NVIDIA\tH100 80GB HBM3", "NVIDIA\u2028H100 80GB HBM3", "NVIDIA H100 80GB HBM3\u200b",
                  "NVIDIA H100 80GB HBM3\u3164", "NVIDIA\u00a0H100 80GB HBM3")),
    (fna_row("128").replace('""dtype""', '""d\\u0000type""'), "extra_benchmark_config_str contains a control"),
    (fna_row("128").replace("fused_neighborhood_attention", "k" * 121, 1), "kernel_name is longer than 120"),
    (fna_row("128", provider="p" * 81), "kernel_provider is longer than 80"),
    (fna_row("128").replace(",ms,", ",milliseconds,"), "metric_unit is longer than 10"),
    (fna_row("128").replace(",ms,", ",furlongs,"),
     "metric_name and metric_unit are 'speed' in 'furlongs'; importable: speed in ms, memory in MB"),
    (fna_row("128").replace(",ms,", ",MB,"), "metric_name and metric_unit are 'speed' in 'MB'"),
    (fna_row("128").replace(",speed,", ",<x>,"), "metric_name and metric_unit are '<x>' in 'ms'"),
    (fna_row("1" * 81), "x_value is longer than 80"),
    (fna_row("128").replace("torch.float32", "f" * 21), "dtype is longer than 20"),
    (fna_row("128", provider="p" * 70), "Implementation document is not valid: {'metadata': {'name': ['Length must be between 1 and 100"),
    (fna_row("128").replace('""bias""', '""' + "b" * 700 + '""'), "the external id is longer than 600"),
    (fna_row("128", timestamp="9999-12-31 23:59:59"), "timestamp 9999-12-31 23:59:59 is after the import"),
    (fna_row("128", timestamp="0001-01-01 00:00:00"), "timestamp 0001-01-01 00:00:00 is before 2000"),
    (fna_row("128", timestamp="1999-12-31 23:59:59"), "timestamp 1999-12-31 23:59:59 is before 2000"),
    (fna_row("128").replace(FNA_CONFIG, nested_config(9)), "extra_benchmark_config_str is nested deeper than 8"),
    (fna_row("128").replace(FNA_CONFIG, "[" * 20_000 + "]" * 20_000), "extra_benchmark_config_str is nested deeper"),
    (fna_row("128").replace('""batch_size"": 2', '""batch_size"": 2, ""batch_size"": 4'),  # json keeps the 4
     "extra_benchmark_config_str names 'batch_size' twice"),
    (fna_row("128").replace('""bias"": true', '""bias"": {""a"": 1, ""a"": 1}'),
     "extra_benchmark_config_str names 'a' twice"),
    (fna_row("128").replace('""bias"": true', '""' + "k" * 500 + '"": 1, ""' + "k" * 500 + '"": 2'),
     f"extra_benchmark_config_str names {'k' * 80!r} twice"),  # not the whole key, however long
    (fna_row("128").replace("fused_neighborhood_attention", " fused_neighborhood_attention", 1),
     "kernel_name is 1 to 120 printable characters with no / and no white space at either end"),
    (fna_row("128", provider="liger "), "kernel_provider is 1 to 80 printable characters"),
    (fna_row("128").replace(",forward,", ",forward\t,"), "kernel_operation_mode is 1 to 40 printable characters"),
    (fna_row("128", provider="li\u202eger"), "kernel_provider is 1 to 80 printable"),
    (fna_row("128", provider="li\u2066ger"), "kernel_provider is 1 to 80 printable"),
    (fna_row("128", provider="li\u200bger"), "kernel_provider is 1 to 80 printable"),
    *((fna_row("128", provider=name), "kernel_provider is 1 to 80 printable")  # drawn as "liger"
      for name in ("liger\u3164", "\uffa0liger", "liger\u2800", "\u115fliger", "liger\ufe0f", "liger\u034f",
                   "liger\u17b4", "liger\U000e0100")),
    (fna_row("128").replace("fused_neighborhood_attention", "fna/forward", 1), "kernel_name is 1 to 120"),
    # drawn as the composed name, ranked apart from it
    (fna_row("128", gpu="NVIDIA Ge\u0301Force"), "gpu_name is written in Unicode's composed form (NFC), as "
                                                "'NVIDIA G\u00e9Force'"),
    (fna_row("128", provider="lige\u0301r"), "kernel_provider is written in Unicode's composed form (NFC)"),
    *((fna_row("128").replace("fused_neighborhood_attention", name, 1), "kernel_name is 1 to 120 printable")
      for name in (".", "..", "fna.json", "fna.csv")),  # /families/fna.json is the twin of /families/fna
    (fna_row("128", median="0", p20="0"), "y_value_50 is 0 ns as stored; figures must be above 0"),
    (fna_row("128", median="1e-300", p20="1e-300"), "y_value_50 is 0 ns as stored"),  # rounds to 0 ns
    (fna_row("128", median="0.2", p80="0.11"),
     "y_value_20 <= y_value_50 <= y_value_80 does not hold: 0.09, 0.2, 0.11"),
    (fna_row("128", median="0.05", p20="0.09"), "y_value_20 <= y_value_50 <= y_value_80 does not hold"),
    (fna_row("128").replace("0.09,0.11", "0.09,1e308"), "a latency in ns is inf (only finite numbers)"),
    (fna_row("128").replace('""bias"": true', '""bias"": ' + "1" * 5000),
     "extra_benchmark_config_str holds an integer of more than 4300 digits"),
    (fna_row("128").replace('""bias"": true', '""bias"": ""\\ud800""'),
     "extra_benchmark_config_str contains a NUL, control character or lone surrogate"),
    ('cross_entropy,liger,forward,speed,ms,V,vocab size,4096,0.1,0.09,0.11,"{""B"": null, ""T"": 2048}",'
     "NVIDIA H100 80GB HBM3,2025-05-27 19:25:08,0.2.1",  # a traceback, which ended the import of a folder
     "cross_entropy cannot derive its parameters from this row: unsupported operand type(s)"),
    *((fna_row("128").replace('""batch_size"": 2', f'""batch_size"": {batch}'), reason)  # as the rerun importer
      for batch, reason in (("null", "fused_neighborhood_attention derives empty or impossible tensors"),
                            ("-2", "fused_neighborhood_attention derives empty or impossible tensors"),
                            ("0", "fused_neighborhood_attention derives empty or impossible tensors"),
                            ("1.5", "fused_neighborhood_attention derives empty or impossible tensors"),
                            ("true", "fused_neighborhood_attention derives empty or impossible tensors"),
                            ('""2""', "fused_neighborhood_attention derives empty or impossible tensors"),
                            ("100000000000", "fused_neighborhood_attention derives 6.55e+15 tensor elements"))),
])
def test_rows_either_database_would_refuse_are_rejected_with_their_line(tmp_path, app, runner, bad_row, reason):
    result = import_liger(runner, only_rejected(tmp_path, bad_row))
    assert result.exit_code == 0, result.output
    assert "read 2, created 1, unchanged 0, superseded 0, rejected 1" in result.output, result.output
    assert f"line 2: rejected: {reason}" in result.output, result.output
    with app.app_context():
        assert [run.x_value for run in Run.select()] == ["256"]


def test_a_row_spanning_lines_is_reported_at_its_first_line(tmp_path, app, runner):
    spanning = fna_row("128", median="fast").replace('""bias"": true, ', '""bias"": true,\n\n')  # lines 2 to 4
    path = write(tmp_path, "spanning.csv", ",".join(HEADER), spanning, fna_row("512", median="slow"), GOOD)
    result = import_liger(runner, path)
    assert "read 3, created 1, unchanged 0, superseded 0, rejected 2" in result.output, result.output
    assert "line 2: rejected: y_value_50 is not a number: 'fast'" in result.output, result.output
    assert "line 5: rejected: y_value_50 is not a number: 'slow'" in result.output, result.output


def test_a_key_named_twice_among_thousands_is_found_at_once(tmp_path, app, runner):
    """The check for a repeated key read the pairs before each pair again: a cell within the csv module's field
    limit, of 12,000 keys and one of them twice at its end, took 3 s, and a 16 MiB file of such rows minutes."""
    keys = ",".join(f'""{index:x}"":0' for index in range(12_000))
    crowded = fna_row("128").replace('""bias"": true', f'{keys},""{11_999:x}"":1')
    path = write(tmp_path, "crowded.csv", ",".join(HEADER), *[crowded] * 4, GOOD)
    started = time.monotonic()
    result = import_liger(runner, path)
    assert time.monotonic() - started < 3, result.output
    assert "read 5, created 1, unchanged 0, superseded 0, rejected 4" in result.output, result.output
    assert "line 2: rejected: extra_benchmark_config_str names '2edf' twice" in result.output, result.output


def test_a_field_over_the_csv_limit_fails_its_file_with_the_line(tmp_path, app, runner):
    huge = fna_row("128").replace("0.5.10", "v" * (10 * 1024 * 1024))
    path = write(tmp_path, "huge.csv", ",".join(HEADER), GOOD, huge)
    result = import_liger(runner, path)
    assert result.exit_code == 1
    assert f"{path}: not imported, nothing changed: line 3: field larger than field limit" in result.output
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


def test_a_folder_goes_on_past_a_bad_file_and_exits_non_zero(tmp_path, app, runner):
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder, "a_huge.csv", ",".join(HEADER), fna_row("128").replace("0.5.10", "v" * 200_000))
    write(folder, "b_long_name.csv", ",".join(HEADER), fna_row("128", provider="p" * 70))
    write(folder, "c_nul.csv", ",".join(HEADER), fna_row("128", provider="\x00"))
    write(folder, "d_good.csv", ",".join(HEADER), GOOD)
    result = import_liger(runner, folder)
    assert result.exit_code == 1, result.output
    assert "a_huge.csv: not imported, nothing changed: line 2: field larger than field limit" in result.output
    assert "b_long_name.csv: not imported, nothing changed: every row was rejected" in result.output
    assert "c_nul.csv: not imported, nothing changed: every row was rejected" in result.output
    assert "d_good.csv: read 1, created 1" in result.output
    with app.app_context():
        assert Run.select().count() == 1
        assert [source.location.rsplit("/", 1)[-1] for source in SourceFile.select()] == ["d_good.csv"]


@pytest.mark.parametrize("lines, message", [
    ((), "the file has no rows, only a header"),
    ((fna_row("128", median="fast"), fna_row("256", timestamp="9999-12-31 00:00:00")), "every row was rejected"),
])
def test_a_file_with_nothing_importable_exits_non_zero_and_records_no_source(tmp_path, app, runner, lines, message):
    result = import_liger(runner, write(tmp_path, "empty.csv", ",".join(HEADER), *lines))
    assert result.exit_code == 1 and message in result.output, result.output
    for line in range(2, 2 + len(lines)):
        assert f"line {line}: rejected:" in result.output
    with app.app_context():
        assert SourceFile.select().count() == 0 and Run.select().count() == 0


def test_a_file_already_imported_is_still_a_success(tmp_path, app, runner):
    path = write(tmp_path, "good.csv", ",".join(HEADER), GOOD)
    assert import_liger(runner, path).exit_code == 0
    again = import_liger(runner, path)
    assert again.exit_code == 0 and "created 0, unchanged 1" in again.output
    with app.app_context():
        assert SourceFile.select().count() == 1


def test_tabs_line_breaks_and_unicode_in_cells_are_kept(tmp_path, app, runner):
    config = FNA_CONFIG.replace('""bias"": true', '""bias"": true, ""note"": ""été\\tnext\\nline""')
    row = fna_row("128").replace(FNA_CONFIG, config).replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3 é")
    result = import_liger(runner, write(tmp_path, "unicode.csv", ",".join(HEADER), row))
    assert result.exit_code == 0 and "created 1" in result.output, result.output
    with app.app_context():
        run = Run.get()
        assert run.gpu.endswith("é") and run.options["note"] == "été\tnext\nline"


def test_an_empty_location_is_a_usage_error_not_the_current_folder(tmp_path, app, runner, monkeypatch):
    write(tmp_path, "good.csv", ",".join(HEADER), GOOD)
    monkeypatch.chdir(tmp_path)
    result = import_liger(runner, "")
    assert result.exit_code == 2 and "not an empty argument" in result.output, result.output
    with app.app_context():
        assert Run.select().count() == 0


@pytest.mark.parametrize("command", ["liger", "kernelindex"])
def test_only_regular_files_are_read_and_no_more_than_the_cap(tmp_path, app, runner, monkeypatch, command):
    """A device or a pipe could be read forever: each is refused, and a file is read up to its importer's cap."""
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    for special in ("/dev/zero", pipe):
        result = runner.invoke(args=["import", command, str(special)])
        assert result.exit_code == 1 and f"{special} is not a regular file" in result.output, result.output
    if command == "liger":  # a folder's own folders are not read, whatever their names
        (tmp_path / "folder" / "inner.csv").mkdir(parents=True)
        result = runner.invoke(args=["import", command, str(tmp_path / "folder")])
        assert result.exit_code == 1 and "is not a regular file (a folder within a folder" in result.output
    monkeypatch.setattr("app.importers.liger_csv.MAX_LIGER_CSV_BYTES" if command == "liger"
                        else "app.importers.MAX_IMPORT_BYTES", 2 ** 20)
    large = tmp_path / "large.csv"
    large.write_bytes(b"x" * (2 ** 20 + 1))
    result = runner.invoke(args=["import", command, str(large)])
    assert result.exit_code == 1 and "holds more than 1 MiB, the most this import reads" in result.output
    with app.app_context():
        assert Run.select().count() == 0 and SourceFile.select().count() == 0


def test_a_liger_csv_is_read_up_to_16_mib(tmp_path, app, runner):
    """An import holds about 15 KB of memory a row until it commits: 256 MiB of rows (the bundles' cap) would have
    wanted some 17 GB. Upstream's largest CSV holds 0.65 MB."""
    large = tmp_path / "large.csv"
    large.write_bytes(b"x" * (16 * 2 ** 20 + 1))
    result = runner.invoke(args=["import", "liger", str(large)])
    assert result.exit_code == 1 and "holds more than 16 MiB, the most this import reads" in result.output


def test_a_file_whose_name_is_not_utf8_is_refused_and_the_folder_goes_on(tmp_path, app, runner):
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder, os.fsdecode(b"a\xff.csv"), ",".join(HEADER), fna_row("128"))
    write(folder, "b.csv", ",".join(HEADER), GOOD)
    result = import_liger(runner, folder)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert ".csv: not imported, nothing changed: its name holds a NUL, control character or lone surrogate" in (
        result.output)
    assert "b.csv: read 1, created 1" in result.output


def test_a_gpu_or_provider_spelled_as_a_stored_one_but_for_case_or_width_is_rejected(tmp_path, app, runner):
    """'nvidia h100 80gb hbm3' or 'Liger' read as the stored names on every page, yet ranked in groups of their own;
    within one file the first spelling met is the one later rows must use."""
    assert import_liger(runner, write(tmp_path, "first.csv", ",".join(HEADER), GOOD)).exit_code == 0
    rows = (fna_row("128", gpu="nvidia h100 80gb hbm3"), fna_row("128", provider="Liger"),
            fna_row("128", provider="\uff4c\uff49\uff47\uff45\uff52"),  # full-width
            fna_row("128", gpu="NVIDIA B200", provider="liger"), fna_row("512", gpu="nvidia b200"),
            fna_row("128", timestamp="2025-05-28 10:00:00"))
    result = import_liger(runner, write(tmp_path, "second.csv", ",".join(HEADER), *rows))
    assert "read 6, created 2, unchanged 0, superseded 0, rejected 4" in result.output, result.output
    assert ("line 2: rejected: the GPU 'nvidia h100 80gb hbm3' reads as 'NVIDIA H100 80GB HBM3', as the index "
            "(or this import) spells it: spell it so") in result.output
    for line in (3, 4):
        assert f"line {line}: rejected: the implementation " in result.output
        assert "reads as 'liger', as the index (or this import) spells it for fused_neighborhood_attention" \
            in result.output
    assert "line 6: rejected: the GPU 'nvidia b200' reads as 'NVIDIA B200'" in result.output
    with app.app_context():
        assert {(run.gpu, run.implementation) for run in Run.select()} == {
            ("NVIDIA H100 80GB HBM3", "liger"), ("NVIDIA B200", "liger")}
