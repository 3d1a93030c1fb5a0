"""Discovery: built-ins, a plugins directory, entry points; broken plugins reported and skipped."""

import importlib.metadata
import importlib.util
import shutil
from pathlib import Path

import pytest

from runners import discovery
from runners.discovery import build_registry, family_definitions, get_registry, plugin_listing
from runners.rerun import RerunRequest, rerun_workload
from runners.timing import protocol_document

TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"
MISSPELLED = '''
from runners import hookimpl

@hookimpl
def buld_workload(parameters, dtype, options, seed, device):
    return {}
'''


@pytest.fixture
def plugins_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    return tmp_path


def test_builtin_plugins_cover_both_families_on_both_targets():
    registry = get_registry()
    found = {(plugin.record.family.name, plugin.record.target) for plugin in registry.kernel_plugins}
    assert found >= {(family, target) for family in ("fused_neighborhood_attention", "multi_token_attention")
                     for target in ("cpu", "cuda")}
    assert all(plugin.origin == "builtin" for plugin in registry.plugins)
    assert not registry.broken


def test_family_definitions_is_cached_and_needs_no_gpu():
    definitions = family_definitions()
    assert set(definitions) >= {"fused_neighborhood_attention", "multi_token_attention"}
    assert definitions["multi_token_attention"].aliases["C_in"] == "heads_in"
    assert get_registry() is get_registry()


def test_cuda_plugins_list_liger_as_unavailable_where_it_does_not_import():
    registry = get_registry()
    liger_imports = importlib.util.find_spec("liger_kernel") is not None
    for family in ("fused_neighborhood_attention", "multi_token_attention"):
        record = registry.find(family, "cuda").record
        assert record.implementation_names[:2] == ("torch", "torch_compile")
        liger = record.implementation("liger")
        assert (liger.unavailable is None) == liger_imports
        if not liger_imports:
            assert liger.unavailable == "liger_kernel does not import: No module named 'liger_kernel'"
            assert liger.revision == "not installed"
            assert liger.as_document()["unavailable"] == liger.unavailable
        assert "kernelindex_triton" in record.implementation_names
        cpu_names = registry.find(family, "cpu").record.implementation_names
        assert "kernelindex_triton" not in cpu_names and "liger" not in cpu_names


def test_available_implementations_have_no_unavailable_key_in_their_documents():
    for plugin in plugin_listing()["plugins"]:
        for implementation in plugin.get("implementations") or ():
            if implementation["name"].startswith("torch"):
                assert "unavailable" not in implementation


def test_every_listed_implementation_states_its_math_modes():
    from runners.types import MATH_MODES

    for plugin in plugin_listing()["plugins"]:
        for implementation in plugin.get("implementations", ()):
            assert implementation["mathModes"] and set(implementation["mathModes"].values()) <= set(MATH_MODES)


def test_a_dropped_in_plugin_is_discovered_listed_and_runs(plugins_dir):
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir)
    listing = plugin_listing()
    toy = next(plugin for plugin in listing["plugins"] if plugin.get("family") == "toy_linear")
    assert toy["origin"] == "directory" and toy["target"] == "cpu"
    assert [implementation["name"] for implementation in toy["implementations"]] == ["torch"]
    assert "toy_linear" in family_definitions()

    request = RerunRequest("toy_linear", "full", {"rows": 8, "features": 4}, "fp32", {"bias": True})
    [result] = rerun_workload(request, target="cpu", protocol=protocol_document("smoke", "cpu"))
    assert result.status == "passed", result.error
    assert result.correctness["relL2Error"] < 1e-5


def test_broken_plugins_are_reported_and_skipped(plugins_dir):
    (plugins_dir / "a_import_error.py").write_text("import not_a_module_anywhere\n")
    (plugins_dir / "b_syntax_error.py").write_text("def oops(:\n")
    (plugins_dir / "c_misspelled.py").write_text(MISSPELLED)
    (plugins_dir / "d_bad_record.py").write_text(
        "from runners import hookimpl\n\n@hookimpl\ndef kernel_plugin():\n    return 'fna'\n")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "e_toy.py")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "f_toy_again.py")

    registry = get_registry()
    broken = {Path(plugin.name).name: plugin for plugin in registry.broken}
    assert set(broken) == {"a_import_error.py", "b_syntax_error.py", "c_misspelled.py", "d_bad_record.py",
                           "f_toy_again.py"}
    assert all(plugin.origin == "directory" for plugin in broken.values())
    assert "ModuleNotFoundError" in broken["a_import_error.py"].error
    assert "SyntaxError" in broken["b_syntax_error.py"].error
    assert "buld_workload" in broken["c_misspelled.py"].error
    assert "not a KernelPlugin" in broken["d_bad_record.py"].error
    assert "already provided by" in broken["f_toy_again.py"].error
    assert registry.find("toy_linear", "cpu").name.endswith("e_toy.py")
    assert registry.find("fused_neighborhood_attention", "cpu").origin == "builtin"


def test_a_plugins_directory_that_does_not_exist_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path / "typo"))
    [broken] = get_registry().broken
    assert broken.name.endswith("typo") and "names no directory" in broken.error
    assert get_registry().find("multi_token_attention", "cpu")


class FakeEntryPoint:
    name = "toy"
    value = "toy_linear_package"

    def __init__(self, module):
        self.module = module

    def load(self):
        return self.module


def test_entry_point_plugins_are_discovered(monkeypatch):
    spec = importlib.util.spec_from_file_location("toy_linear_package", TEST_PLUGINS / "toy_linear.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [FakeEntryPoint(module)] if group == discovery.ENTRY_POINT_GROUP else [])
    registry = build_registry(None)
    plugin = registry.find("toy_linear", "cpu")
    assert plugin.origin == "entry point" and plugin.name == "toy (toy_linear_package)"


def test_finding_a_missing_family_or_target_says_what_exists():
    registry = get_registry()
    with pytest.raises(discovery.PluginNotFound, match="no plugin implements the family 'nope'"):
        registry.find("nope", "cpu")
    registry = build_registry(None)
    registry.plugins = tuple(p for p in registry.plugins if not (p.record and p.record.target == "cuda"))
    with pytest.raises(discovery.PluginNotFound, match="targets with a plugin: cpu"):
        registry.find("multi_token_attention", "cuda")
