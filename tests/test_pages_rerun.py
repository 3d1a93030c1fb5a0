"""Rerun pages: a structured protocol, a tidy implementation identity, the policy at its own URL, raw samples,
and "failed" marked wherever a failed run is listed."""

from app.models import Run
from app.importers.kernelindex_rerun import record_rerun_results
from app.pages.run_sections import execution_lines, telemetry_line

from .factories import rerun_result
from .pages_support import in_order, reference_run, text_of

AUTOTUNED = {"_attention_fwd_kernel": [{"config": {"BLOCK_M": 16, "num_warps": 4}, "key": ["1024", "torch.float32"]}],
             "_attention_bwd_kernel": []}
PROTOCOL = {"name": "kernelindex-standard", "preset": "standard", "timer": "cuda_events", "warmupReps": 5,
            "trials": 5, "samplesPerTrial": 20, "inputSets": 4, "correctnessTrials": 3, "interleaving": "round-robin",
            "l2FlushBytes": 268435456,
            "launchQueue": {"method": "device-side delay", "delayFactor": 2, "minDelayNs": 50000,
                            "maxDelayNs": 10000000},
            "notes": "Timed: one call.", "primaryStatistic": "median", "comparabilityFamily": "kernelindex_rerun"}


def record(app, status="passed"):
    result = rerun_result(reference_run(app), status=status)
    result["implementation"]["details"] = {"tf32": True, "autotuned": AUTOTUNED}
    result["protocol"] = PROTOCOL
    with app.app_context():
        return Run.get_by_id(record_rerun_results([result], families={}).created[0])


def test_protocol_reads_as_warm_up_trials_flush_and_launch_queue_with_notes_once(small_app, client):
    rerun = record(small_app)
    text = text_of(client.get(f"/runs/{rerun.id}").get_data(as_text=True))
    assert in_order(text, "Protocol", "timer", "cuda_events", "preset", "standard (kernelindex-standard)",
                    "warm-up", "5 calls before timing", "trials", "5 trials × 20 samples, round-robin",
                    "L2 flush", "256 MiB written before each call",
                    "launch queue", "device-side delay; 2× the call's time, 50 µs – 10 ms")
    assert "parameters." not in text and text.count("Timed: one call.") == 1


def test_a_version_2_rerun_shows_its_telemetry_its_checks_and_its_protocol(small_app, client):
    result = rerun_result(reference_run(small_app))
    result["integrity"] = {"inputSeeds": [5, 6, 7, 8], "timedCalls": 40, "auditedCalls": [3, 9, 21, 40, 1, 2, 4, 5],
                           "violations": [], "isolation": "child process"}
    result["telemetry"] = {"available": True, "maxSmClockMHz": 1980, "trialsOutsideProtocol": [2], "samples": [
        {"trial": 1, "smClockMHz": 1980, "memoryClockMHz": 3201, "temperatureC": 44, "powerW": 305.5,
         "throttleReasons": []},
        {"trial": 2, "smClockMHz": 1410, "memoryClockMHz": 3201, "temperatureC": 51, "powerW": 330.25,
         "throttleReasons": ["software power cap"]}]}
    with small_app.app_context():
        rerun = Run.get_by_id(record_rerun_results([result], families={}).created[0])
    text = text_of(client.get(f"/runs/{rerun.id}").get_data(as_text=True))
    assert in_order(text, "GPU telemetry over 2 trials: SM 1,410–1,980 MHz (max 1,980 MHz), memory 3,201 MHz, "
                          "44–51 °C, 306–330 W; throttle: software power cap; trials outside the protocol's "
                          "thresholds: 2",
                    "Integrity: 8 of 40 timed calls audited against the reference, inputs from secret seeds; "
                          "no tampering found; measured alone in a child process of its own (third-party code)",
                    "inputs", "4 sets from secret seeds (each result records its own), every floating input shifted",
                    "audit", "8 timed calls drawn at random (fewer where their copies would take more than an equal "
                    "share of 50% of the free GPU memory), checked against the reference",
                    "wall-clock check", "samples within 20% of each batch's wall-clock time + 20 µs per call, in all but 50% of an "
                    "implementation's batches",
                    "isolation", "harness process: the built-in implementations", "child process: each third-party "
                    "implementation alone, after the built-in ones and never interleaved with them",
                    "(deadline: 120 s to start, then 2× the time budget)")


def test_a_cpu_rerun_page_says_what_its_protocol_did_and_leaves_out_what_only_gpus_do(small_app, client):
    """A CPU protocol states no L2 flush, launch queue or GPU telemetry (its fields are null there)."""
    result = rerun_result(reference_run(small_app), preset="smoke", target="cpu")
    with small_app.app_context():
        rerun = Run.get_by_id(record_rerun_results([result], families={}).created[0])
    page = client.get(f"/runs/{rerun.id}")
    assert page.status_code == 200 and client.get(f"/runs/{rerun.id}.json").status_code == 200
    text = text_of(page.get_data(as_text=True))
    assert in_order(text, "Protocol", "preset", "smoke (kernelindex-smoke)", "warm-up", "trials")
    assert "L2 flush" not in text and "launch queue" not in text and "None" not in text


def test_autotuned_configs_are_small_tables_and_empty_values_are_left_out(small_app, client):
    rerun = record(small_app)
    page = client.get(f"/runs/{rerun.id}").get_data(as_text=True)
    assert "{'config'" not in page and "_attention_bwd_kernel" not in page
    assert in_order(text_of(page), "autotuned _attention_fwd_kernel", "BLOCK_M", "num_warps", "autotune key",
                    "16", "4", "1024 · torch.float32")


def test_policy_is_summarised_with_a_link_to_its_full_text_by_digest(small_app, client):
    rerun = record(small_app)
    twin = client.get(f"/runs/{rerun.id}.json").get_json()["correctness"]
    assert twin["policy_url"] == "/policies/" + twin["policy_digest"].removeprefix("sha256:")
    assert "Full text of the policy" in client.get(f"/runs/{rerun.id}").get_data(as_text=True)
    policy = client.get(twin["policy_url"])
    assert policy.status_code == 200 and "KernelIndex correctness policy, version 3" in policy.get_data(as_text=True)
    assert client.get(twin["policy_url"] + ".json").get_json()["kind"] == "CorrectnessPolicy"
    assert client.get("/policies/" + "0" * 64).status_code == 404


def test_raw_samples_are_plotted_per_trial_with_median_and_spread(small_app, client):
    rerun = record(small_app)
    page = client.get(f"/runs/{rerun.id}").get_data(as_text=True)
    assert "Raw samples" in page and page.count("<circle cx=") >= 5 * 4
    assert 'class="spread-band"' in page and "100 samples in 5 trials, in time order" in page
    assert "Raw samples" not in client.get(f"/runs/{reference_run(small_app).id}").get_data(as_text=True)


def test_failed_runs_carry_a_failed_badge_on_their_page_in_history_and_in_search(small_app, client):
    failed = record(small_app, status="failed")
    badge = '<span class="badge failed"'
    assert badge in client.get(f"/runs/{failed.id}").get_data(as_text=True)
    assert badge in client.get(f"/runs/{reference_run(small_app).id}").get_data(as_text=True)  # its reruns list
    assert badge in client.get(f"/search?q={failed.id}").get_data(as_text=True)


def test_spread_reads_in_one_unit_and_the_source_figures_stay_as_recorded(small_app, client):
    text = text_of(client.get(f"/runs/{reference_run(small_app).id}").get_data(as_text=True))
    assert in_order(text, "p20–p80 84.6–84.6 ms", "As the source recorded it:", "ms 20 84.55020904541016")


def test_a_rerun_that_failed_before_timing_vouches_for_no_call(small_app, client):
    """Its integrity record counts no timed call: the page said "0 of 0 timed calls audited ...; no tampering found"."""
    result = rerun_result(reference_run(small_app), status="failed")
    result["integrity"] = {"inputSeeds": [], "timedCalls": 0, "auditedCalls": [], "violations": [],
                           "isolation": "child process"}
    with small_app.app_context():
        rerun = Run.get_by_id(record_rerun_results([result], families={}).created[0])
    text = text_of(client.get(f"/runs/{rerun.id}").get_data(as_text=True))
    assert ("Integrity: no call was timed, so none was audited; measured alone in a child process of its own "
            "(third-party code)") in text, text
    assert "0 of 0" not in text and "no tampering found" not in text


def test_telemetry_without_a_maximum_clock_names_none():
    """The maximum SM clock read '(max 1980 MHz)' beside '1,410–1,980 MHz', and '(max None MHz)' for a result without
    it (the schema lets it out); one trial read '1 trials'."""
    sample = {"trial": 1, "smClockMHz": 1410, "memoryClockMHz": 3201, "temperatureC": 44, "powerW": 305.5}
    assert telemetry_line({"available": True, "samples": [sample]}).startswith(
        "GPU telemetry over 1 trial: SM 1,410 MHz, memory 3,201 MHz, 44 °C")


def test_inputs_at_one_address_read_in_the_singular():
    """The snapshot rerun's page read 'inputs from secret seeds at 1 distinct addresses'."""
    checks = {"timedCalls": 60, "auditedCalls": [1, 2], "violations": [], "distinctAddresses": 1}
    assert execution_lines(Run(details={"integrity": checks}, unit="ns")) == [
        "Integrity: 2 of 60 timed calls audited against the reference, inputs from secret seeds at 1 distinct "
        "address; no tampering found"]
