"""Discovery: built-ins, a plugins directory, entry points; broken plugins reported and skipped."""

import importlib.metadata
import importlib.util
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
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


def test_threads_asking_together_share_one_registry_built_once(plugins_dir, monkeypatch):
    built = []

    def slow_build(directory):
        built.append(directory)
        time.sleep(0.2)  # long enough for every thread to ask while the first builds
        return object()

    monkeypatch.setattr(discovery, "build_registry", slow_build)
    with ThreadPoolExecutor(max_workers=4) as pool:
        registries = list(pool.map(lambda _: get_registry(), range(4)))
    assert built == [str(plugins_dir)] and all(registry is registries[0] for registry in registries)


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


def write_implementation_plugin(path, family, target, name):
    """A module adding an implementation ``name`` to ``family`` on ``target`` (its passes are never prepared)."""
    path.write_text(f"""
from runners import hookimpl
from runners.types import AddedImplementation, Implementation

@hookimpl
def kernel_implementations():
    return [AddedImplementation(family={family!r}, target={target!r}, implementation=Implementation({name!r}, "tests"),
                                prepare_pass=lambda implementation, workload, pass_: None)]
""")


def test_an_implementation_plugin_joins_its_family_listed_with_its_origin_and_reruns(plugins_dir):
    shutil.copy(TEST_PLUGINS / "rms_norm_vector_norm.py", plugins_dir)
    example = str(plugins_dir / "rms_norm_vector_norm.py")
    registry = get_registry()
    assert not registry.broken
    family = registry.find("rms_norm", "cpu")
    assert registry.implementations(family)[-1].name == "vector_norm"
    assert "vector_norm" not in [implementation.name
                                 for implementation in registry.implementations(registry.find("rms_norm", "cuda"))]

    listing = plugin_listing()
    [rms_norm_cpu] = [plugin for plugin in listing["plugins"]
                      if (plugin.get("family"), plugin.get("target")) == ("rms_norm", "cpu")]
    origins = {implementation["name"]: (implementation["origin"], implementation["plugin"])
               for implementation in rms_norm_cpu["implementations"]}
    assert origins["vector_norm"] == ("directory", example)
    assert origins["torch"] == ("builtin", "plugins.rms_norm.cpu")
    [module] = [plugin for plugin in listing["plugins"] if plugin["name"] == example]
    assert module["kind"] == "implementations" and module["origin"] == "directory"
    assert module["adds"] == [{"family": "rms_norm", "target": "cpu", "implementation": "vector_norm"}]

    request = RerunRequest("rms_norm", "full", {"tokens": 5, "hidden": 48}, "fp32", {"eps": 1e-6})
    results = rerun_workload(request, target="cpu", implementations=["torch", "vector_norm"],
                             protocol=protocol_document("smoke", "cpu"))
    assert [result.implementation.name for result in results] == ["torch", "vector_norm"]
    assert all(result.status == "passed" for result in results), [result.error for result in results]
    vector_norm = results[1]
    assert vector_norm.correctness["relL2Error"] < 1e-5
    assert vector_norm.as_document()["implementation"]["project"] == "KernelIndex examples"


def test_readme_shows_the_example_implementation_plugin_as_it_is():
    readme = (TEST_PLUGINS.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "```python\n" + (TEST_PLUGINS / "rms_norm_vector_norm.py").read_text(encoding="utf-8") + "```" in readme


def test_bad_implementation_plugins_are_reported_whatever_the_order_found(plugins_dir):
    write_implementation_plugin(plugins_dir / "a_lost.py", "no_such_family", "cpu", "lost")
    write_implementation_plugin(plugins_dir / "b_elsewhere.py", "toy_linear", "cuda", "elsewhere")
    write_implementation_plugin(plugins_dir / "c_torch_again.py", "rms_norm", "cpu", "torch")
    write_implementation_plugin(plugins_dir / "d_toy_kernel.py", "toy_linear", "cpu", "toy_kernel")  # before z_toy
    write_implementation_plugin(plugins_dir / "e_toy_kernel_again.py", "toy_linear", "cpu", "toy_kernel")
    (plugins_dir / "both_hooks.py").write_text((TEST_PLUGINS / "toy_linear.py").read_text() + """
@hookimpl
def kernel_implementations():
    return []
""")
    (plugins_dir / "family_hook_only.py").write_text(
        "from runners import hookimpl\n\n@hookimpl\ndef prepare_pass(implementation, workload, pass_):\n"
        "    return None\n")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    registry = get_registry()
    broken = {Path(plugin.name).name: plugin.error for plugin in registry.broken}
    assert broken == {
        "a_lost.py": "adds 'lost' to no_such_family on cpu, which no plugin declares",
        "b_elsewhere.py":
            "adds 'elsewhere' to toy_linear on cuda, which no plugin declares (toy_linear is declared on cpu)",
        "c_torch_again.py": "adds 'torch' to rms_norm on cpu, which already has it (from plugins.rms_norm.cpu)",
        "e_toy_kernel_again.py":
            f"adds 'toy_kernel' to toy_linear on cpu, which already has it (from {plugins_dir / 'd_toy_kernel.py'})",
        "both_hooks.py": "TypeError: implements kernel_plugin and kernel_implementations: a family plugin lists its "
                         "own implementations in its record; kernel_implementations adds to another plugin's family",
        "family_hook_only.py": "TypeError: implements prepare_pass without kernel_plugin, so it would never be "
                               "called: family hooks are called on the plugin that declares the family (an added "
                               "implementation's record carries its prepare_pass)",
    }
    toy = registry.find("toy_linear", "cpu")
    assert toy.name.endswith("z_toy.py")
    assert [implementation.name for implementation in registry.implementations(toy)] == ["torch", "toy_kernel"]
    modules = {plugin.module for plugin in registry.plugins}
    assert set(registry.manager.get_plugins()) == modules  # the broken ones are unregistered


def test_a_plugins_directory_that_does_not_exist_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path / "typo"))
    [broken] = get_registry().broken
    assert broken.name.endswith("typo") and "names no directory" in broken.error
    assert get_registry().find("multi_token_attention", "cpu")


class FakeEntryPoint:
    def __init__(self, module, name="toy", value="toy_linear_package"):
        self.module, self.name, self.value = module, name, value

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


def test_entry_point_implementation_plugins_are_discovered(monkeypatch):
    spec = importlib.util.spec_from_file_location("rms_norm_vector_norm_package",
                                                  TEST_PLUGINS / "rms_norm_vector_norm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [FakeEntryPoint(module, "vector_norm", "rms_norm_vector_norm_package")]
                        if group == discovery.ENTRY_POINT_GROUP else [])
    listing = build_registry(None).listing()
    [rms_norm_cpu] = [plugin for plugin in listing["plugins"]
                      if (plugin.get("family"), plugin.get("target")) == ("rms_norm", "cpu")]
    [added] = [implementation for implementation in rms_norm_cpu["implementations"]
               if implementation["name"] == "vector_norm"]
    assert (added["origin"], added["plugin"]) == ("entry point", "vector_norm (rms_norm_vector_norm_package)")


def test_finding_a_missing_family_or_target_says_what_exists():
    registry = get_registry()
    with pytest.raises(discovery.PluginNotFound, match="no plugin implements the family 'nope'"):
        registry.find("nope", "cpu")
    registry = build_registry(None)
    registry.plugins = tuple(p for p in registry.plugins if not (p.record and p.record.target == "cuda"))
    with pytest.raises(discovery.PluginNotFound, match="targets with a plugin: cpu"):
        registry.find("multi_token_attention", "cuda")
