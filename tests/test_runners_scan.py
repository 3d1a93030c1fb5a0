"""The static scan of plugin source: each known pattern is reported with its line; honest code is not."""

from pathlib import Path

import pytest

from runners import discovery
from runners.scan import scan_module, scan_source

ADVERSARIAL = Path(__file__).resolve().parent / "plugins" / "adversarial"


@pytest.mark.parametrize("source, pattern, text", [
    ("import time\ntime.perf_counter_ns = lambda: 0\n", "patches", "replaces time.perf_counter_ns"),
    ("import torch\ntorch.cuda.Event.elapsed_time = None\n", "patches", "replaces torch.cuda.Event.elapsed_time"),
    ("from runners import timing\ntiming.percentile = min\n", "patches", "replaces runners.timing.percentile"),
    ("import runners.timing as t\nsetattr(t, 'percentile', min)\n", "patches",
     "replaces an attribute of runners.timing"),
    ("import threading\nthreading.Thread(target=print).start()\n", "threads", "starts threading.Thread"),
    ("from concurrent.futures import ThreadPoolExecutor\nThreadPoolExecutor()\n", "threads",
     "starts concurrent.futures.ThreadPoolExecutor"),
    ("import torch\ns = torch.cuda.Stream()\n", "streams", "uses torch.cuda.Stream"),
    ("cache = {}\ndef run(x):\n    return cache[x.data_ptr()]\n", "identity keys", "uses x.data_ptr() as a key"),
    ("cache = {}\ndef run(x):\n    key = (id(x), x._version)\n    if key in cache:\n        return cache[key]\n",
     "identity keys", "uses id(x) as a key"),
    ("def run(x):\n    if x.shape == (64, 32):\n        return 0\n", "published shapes",
     "compares a shape with (64, 32), a published workload's"),
    ("def run(x):\n    if x.shape[-1] == 4096:\n        return 0\n", "published shapes",
     "compares a shape with 4096, a published workload's"),
])
def test_each_pattern_is_found_on_its_line(source, pattern, text):
    warnings = scan_source(source, published_shapes=[(64, 32), (8, 4096)])
    assert any(warning.pattern == pattern and warning.text == text for warning in warnings), warnings
    assert all(warning.line > 1 or pattern == "patches" for warning in warnings)


def test_honest_code_is_not_warned_about():
    source = ("import torch\nimport time\n\ndef launch(x, out):\n    pointer = x.data_ptr()\n"
              "    started = time.perf_counter()\n    block = 128 if x.shape[-1] > 1000 else 64\n"
              "    return torch.matmul(x, x, out=out), pointer, block, started\n")
    assert scan_source(source, published_shapes=[(64, 32)]) == []


def test_the_built_in_plugins_scan_clean():
    registry = discovery.get_registry()
    assert all(scan_module(plugin.module) == [] for plugin in registry.plugins if plugin.origin == discovery.BUILTIN)


def test_the_adversarial_plugins_are_each_warned_about(monkeypatch):
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(ADVERSARIAL))
    plugin = discovery.get_registry().find("integrity_linear", "cpu")
    patterns = {warning.pattern for warning in scan_module(plugin.module, published_shapes=[(64, 32)])}
    assert patterns == {"patches", "threads", "identity keys", "published shapes"}
