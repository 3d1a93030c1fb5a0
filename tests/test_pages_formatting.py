"""Numbers as a person reads them, and chart scales."""

import pytest

from app import charts, formatting
from app.pages import agreement


@pytest.mark.parametrize("value, unit, text", [
    (84550209, "ns", "84.6 ms"), (719872, "ns", "720 µs"), (314960, "ns", "315 µs"), (999, "ns", "999 ns"),
    (999_600, "ns", "1 ms"), (1_234_000_000, "ns", "1.23 s"), (52.5, "MB", "52.5 MB"), (1536, "MB", "1.5 GB"),
    (0, "ns", "0 ns"), (None, "ns", "—"), (12, "items", "12 items"),
])
def test_quantity(value, unit, text):
    assert formatting.quantity(value, unit) == text


def test_memory_reads_in_binary_multiples_of_the_sources_mb():
    """Liger-Kernel's rows count memory in MB of 2**20 bytes (torch.cuda.max_memory_allocated() / 2**20), and so do
    KernelIndex's reruns: GeGLU's 1582.25 MB on the A100 read '1.58 GB', 1000 of those MB, which is 1.66 GB of 10**9
    bytes and 1.55 of 2**30: right in neither."""
    assert formatting.quantity(1582.25, "MB") == "1.55 GB"
    assert formatting.quantity(1024 ** 2 * 3, "MB") == "3 TB"
    assert formatting.quantity(1000, "MB") == "1,000 MB"


def test_a_whole_number_keeps_every_measured_digit():
    """Three significant figures would make 1115.3 read 1,120: a zero no measurement gave."""
    assert formatting.significant(1115.3) == "1,115"
    assert formatting.quantity(4_321_000_000_000, "ns") == "4,321 s"


def test_shared_unit_reads_small_figures_as_fractions():
    unit = formatting.common_unit([314960, 84550209], "ns")
    assert unit[0] == "ms"
    assert formatting.in_unit(314960, unit) == "0.315 ms"
    assert formatting.in_unit(84550209, unit) == "84.6 ms"


@pytest.mark.parametrize("value, text", [(268.45, "268× slower"), (1.04, "1.04× slower"), (1, "same"),
                                         (0.5, "2× faster"), (None, "—")])
def test_ratio(value, text):
    assert formatting.ratio(value) == text


@pytest.mark.parametrize("value, text, twin", [(320.5078125 / 320.0703125, "1.001× slower", 1.001),
                                               (0.99863, "1.001× faster", 1.001),
                                               (1 + 2e-9, "1.000000002× slower", 1.000000002)])
def test_a_ratio_other_than_1_never_reads_1(value, text, twin):
    """Two memory peaks of one source group, 320.51 and 320.07 MB, rank 2 and 1: the page said "1× slower"."""
    assert formatting.ratio(value) == text
    assert formatting.ratio_fields(value)["ratio"] == twin



@pytest.mark.parametrize("value, text", [(2.5, "2.5× more memory"), (0.4, "2.5× less memory"), (1, "same")])
def test_a_ratio_of_memory_reads_more_or_less_memory(value, text):
    """Peaks of memory rank lower-is-better as times do, but a larger one is not "slower"."""
    assert formatting.ratio(value, "memory") == text


def test_an_agreement_ratio_below_1_reads_in_its_metric():
    assert agreement.worded(5) == agreement.worded(5, "memory") == "5×"
    assert agreement.worded(0.4) == "2.5× slower"
    assert agreement.worded(0.4, "memory") == "2.5× more memory"


def test_short_digest():
    digest = "sha256:b614dce1fec1aaee" + "0" * 48
    assert formatting.short_digest(digest) == "sha256:b614dce1fec1aaee…"
    assert formatting.short_digest("sha256:abc") == "sha256:abc"


def point(x, median, name="a"):
    return {"x_number": x, "x_value": str(x), "median": median, "p20": None, "p80": None, "id": name}


def test_chart_goes_log_only_when_the_range_asks():
    narrow = charts.line_chart({"a": [point(1024, 100), point(2048, 150)]}, x_name="seq", unit="ns", title="t")
    assert (narrow["x_scale"], narrow["y_scale"]) == ("linear", "linear")
    wide = charts.line_chart({"a": [point(256, 1e3), point(8192, 1e6)]}, x_name="seq", unit="ns", title="t")
    assert (wide["x_scale"], wide["y_scale"]) == ("log₂", "log₁₀")
    low, high = wide["series"][0]["markers"]
    assert low["cx"] < high["cx"] and low["cy"] > high["cy"]  # later and higher (SVG y grows down)


def test_chart_lines_are_told_apart_by_colour_and_dash():
    chart = charts.line_chart({"a": [point(1, 1)], "b": [point(1, 2, "b")]}, x_name="x", unit="ns", title="t")
    first, second = chart["series"]
    assert first["color"] != second["color"] and first["dash"] != second["dash"]
    many = charts.line_chart({f"s{index:02d}": [point(1, index + 1, f"s{index}")] for index in range(20)},
                             x_name="x", unit="ns", title="t")  # more lines than colours (a family's ten, say)
    assert len({(line["color"], line["dash"]) for line in many["series"]}) == 20


def test_empty_chart():
    assert charts.line_chart({}, x_name="x", unit="ns", title="t")["empty"] is True
