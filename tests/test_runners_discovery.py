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
from runners.types import FamilyDefinition

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
    write_implementation_plugin(plugins_dir / "b_misspelled_family.py", "rms_nrom", "cpu", "mine")
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
        "b_misspelled_family.py": "adds 'mine' to rms_nrom on cpu, which no plugin declares (did you mean rms_norm?)",
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


def test_an_entry_point_naming_a_function_not_its_module_is_broken_saying_so(monkeypatch):
    """It was broken as implementing "no hook of the contract: mark each hook with runners.hookimpl", though the
    function it named was marked."""
    spec = importlib.util.spec_from_file_location("rms_norm_vector_norm_package",
                                                  TEST_PLUGINS / "rms_norm_vector_norm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [FakeEntryPoint(
        module.kernel_implementations, "vector_norm", "rms_norm_vector_norm_package:kernel_implementations")]
        if group == discovery.ENTRY_POINT_GROUP else [])
    [broken] = build_registry(None).broken
    assert (broken.name, broken.origin) == ("vector_norm (rms_norm_vector_norm_package:kernel_implementations)",
                                            "entry point")
    assert broken.error == ("TypeError: rms_norm_vector_norm_package:kernel_implementations is a function, not a "
                            "module: a 'kernelindex' entry point names the module holding the hooks "
                            "(rms_norm_vector_norm_package)")


def test_finding_a_missing_family_or_target_says_what_exists():
    registry = get_registry()
    with pytest.raises(discovery.PluginNotFound, match="no plugin implements the family 'nope'"):
        registry.find("nope", "cpu")
    registry = build_registry(None)
    registry.plugins = tuple(p for p in registry.plugins if not (p.record and p.record.target == "cuda"))
    with pytest.raises(discovery.PluginNotFound, match="targets with a plugin: cpu"):
        registry.find("multi_token_attention", "cuda")


RECORD_IMPORTS = '''
import sys

from runners import hookimpl
from runners.types import AddedImplementation, FamilyDefinition, Implementation, KernelPlugin, TensorSpec

FAMILY = FamilyDefinition(name="probe", title="Probe", parameters=("rows",),
                          derive_tensors=lambda values, dtype: (TensorSpec("x", dtype, (values["rows"],)),))


def prepare(implementation, workload, pass_):
    return None
'''


def write_plugin(path, body):
    """A plugin module: ``body`` after the imports and helpers every such module here needs (``FAMILY``,
    ``prepare``)."""
    path.write_text(RECORD_IMPORTS + body)


def family_plugin(record):
    return f"\n@hookimpl\ndef kernel_plugin():\n    return {record}\n"


def implementation_plugin(records):
    return f"\n@hookimpl\ndef kernel_implementations():\n    return {records}\n"


def assert_only_those_broken(registry, expected):
    """The plugins named in ``expected`` are broken with those errors; the built-ins and a good plugin still load."""
    assert {Path(plugin.name).name: plugin.error for plugin in registry.broken} == expected
    assert registry.find("toy_linear", "cpu").name.endswith("z_toy.py")
    assert registry.find("rms_norm", "cpu").origin == "builtin"
    listed = {plugin["name"] for plugin in registry.listing()["plugins"]}
    assert "runners.environment" in listed and not {name for name in listed if Path(name).name in expected}
    assert set(registry.manager.get_plugins()) == {plugin.module for plugin in registry.plugins}


def test_a_record_field_of_the_wrong_type_breaks_only_its_plugin(plugins_dir):
    write_plugin(plugins_dir / "str_family.py", family_plugin(
        'KernelPlugin(family="strfamily", target="cpu", implementations=(Implementation("x", "tests"),))'))
    write_plugin(plugins_dir / "str_implementation.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", implementation="strimpl", prepare_pass=prepare)]'))
    write_plugin(plugins_dir / "str_implementations.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=("torch",))'))
    write_plugin(plugins_dir / "list_details.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("x", "tests", details=[1]),))'))
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    assert_only_those_broken(get_registry(), {
        "str_family.py": "TypeError: KernelPlugin.family must be FamilyDefinition, not str 'strfamily'",
        "str_implementation.py": "TypeError: AddedImplementation.implementation must be Implementation, "
                                 "not str 'strimpl'",
        "str_implementations.py": "TypeError: KernelPlugin.implementations must be a tuple of Implementation, "
                                  "not tuple ('torch',)",
        "list_details.py": "TypeError: Implementation.details must be Mapping, not list [1]",
    })


def test_details_that_are_no_json_data_break_only_their_plugin(plugins_dir):
    """Every result's bundle line carries them: a set was a TypeError in ``json.dumps`` once the rerun had measured
    everything, a traceback that lost its results."""
    write_plugin(plugins_dir / "set_details.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("x", "tests", '
        'details={"blocks": {1, 2}}),))'))
    write_plugin(plugins_dir / "nan_details.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", prepare_pass=prepare, implementation=Implementation('
        '"mine", "tests", details={"ratio": float("nan")}))]'))
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    json_data = "details must be JSON data (text, finite numbers, booleans, None, lists and mappings of them)"
    assert_only_those_broken(get_registry(), {
        "set_details.py": f"ValueError: x: {json_data}: Object of type set is not JSON serializable",
        "nan_details.py": f"ValueError: mine: {json_data}: Out of range float values are not JSON compliant",
    })


def test_option_values_are_checked_where_the_definition_is_made():
    def probe(**fields):
        return FamilyDefinition(name="probe", title="Probe", parameters=("rows",),
                                derive_tensors=lambda values, dtype: (), **fields)

    with pytest.raises(TypeError, match=r"probe: option_values\['bias'\] must be a tuple of booleans, numbers or "
                                        r"strings, not \[True, False\]"):
        probe(option_values={"bias": [True, False]})
    with pytest.raises(ValueError, match='a default: probe workloads take the option bias as true or false, not "on"'):
        probe(defaults={"bias": "on"}, option_values={"bias": (True, False)})
    definition = probe(defaults={"bias": True}, option_values={"bias": (True, False)})
    assert definition.option_problem({"bias": False, "eps": 1e-6}) is None  # eps takes any value
    assert definition.option_problem({"bias": 0}) == "probe workloads take the option bias as true or false, not 0"


def test_every_switch_a_family_defaults_declares_its_two_values():
    """A boolean default (bias, beta) is a switch a rerun result must give as true or false, never "false" or 1."""
    undeclared = [f"{definition.name}.{name}" for definition in family_definitions().values()
                  for name, default in definition.defaults.items()
                  if isinstance(default, bool) and definition.option_values.get(name) != (True, False)]
    assert not undeclared


def test_a_plugin_that_exits_is_broken_and_the_host_goes_on(plugins_dir):
    (plugins_dir / "exits_at_import.py").write_text('import sys\n\nsys.exit("bye")\n')
    write_plugin(plugins_dir / "exits_in_its_hook.py",
                 '\n@hookimpl\ndef kernel_plugin():\n    raise SystemExit("later")\n')
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    assert_only_those_broken(get_registry(), {
        "exits_at_import.py": f"exited at import: bye ({plugins_dir / 'exits_at_import.py'}, line 3)",
        "exits_in_its_hook.py":
            f"exited when asked for its records: later ({plugins_dir / 'exits_in_its_hook.py'}, line 16)"})


def test_a_plugin_failing_at_import_is_broken_naming_its_line(plugins_dir, monkeypatch):
    """Where in the plugin the error came from, not only what it was: "NameError: name 'torhc' is not defined" sent
    its author to import the module by hand to find the line. A check of KernelIndex's names no line (its message
    says what to fix), nor does a syntax error (its message names its own)."""
    (plugins_dir / "typo.py").write_text("import torch\n\n\nx = torhc.zeros(1)\n")
    (plugins_dir / "missing_module.py").write_text("import not_a_module_anywhere\n")
    (plugins_dir / "syntax.py").write_text("def oops(:\n")
    write_plugin(plugins_dir / "bad_record.py", family_plugin(
        'KernelPlugin(family="strfamily", target="cpu", implementations=(Implementation("x", "tests"),))'))
    package = plugins_dir.parent / "site" / "newcomer_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from newcomer_package.kernels import *\n")
    (package / "kernels.py").write_text("raise RuntimeError('build the extension first: pip install -e .')\n")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [
        EntryPointImporting("newcomer", "newcomer_package")] if group == discovery.ENTRY_POINT_GROUP else [])
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    broken = {Path(plugin.name).name: plugin.error for plugin in get_registry().broken}
    assert broken == {
        "typo.py": f"NameError: name 'torhc' is not defined ({plugins_dir / 'typo.py'}, line 4)",
        "missing_module.py": f"ModuleNotFoundError: No module named 'not_a_module_anywhere' "
                             f"({plugins_dir / 'missing_module.py'}, line 1)",
        "syntax.py": "SyntaxError: invalid syntax (syntax.py, line 1)",
        "bad_record.py": "TypeError: KernelPlugin.family must be FamilyDefinition, not str 'strfamily'",
        "newcomer (newcomer_package)": f"RuntimeError: build the extension first: pip install -e . "
                                       f"({package / 'kernels.py'}, line 1)",
    }


class EntryPointImporting:
    def __init__(self, name, value):
        self.name, self.value = name, value

    def load(self):
        return importlib.import_module(self.value)


def test_an_interrupt_while_importing_a_plugin_stops_discovery(tmp_path):
    (tmp_path / "interrupted.py").write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        build_registry(str(tmp_path))


def test_names_the_index_cannot_store_or_address_break_their_plugin(plugins_dir):
    write_plugin(plugins_dir / "empty_name.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", implementation=Implementation("", "tests"), '
        'prepare_pass=prepare)]'))
    write_plugin(plugins_dir / "path_name.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", implementation=Implementation("../bad name/<x>", '
        '"tests"), prepare_pass=prepare)]'))
    write_plugin(plugins_dir / "long_name.py", family_plugin(
        f'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("{"x" * 81}", "tests"),))'))
    (plugins_dir / "path_family.py").write_text(
        RECORD_IMPORTS.replace('name="probe"', 'name="../Bad Family <b>"') + family_plugin(
            'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("torch", "tests"),))'))
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    rule = ("printable characters with no / and no white space at either end, neither . nor .. nor ending .json or "
            ".csv: not")
    assert_only_those_broken(get_registry(), {
        "empty_name.py": f"ValueError: an implementation's name is 1 to 80 {rule} ''",
        "path_name.py": f"ValueError: an implementation's name is 1 to 80 {rule} '../bad name/<x>'",
        "long_name.py": f"ValueError: an implementation's name is 1 to 80 {rule} '{'x' * 81}'",
        "path_family.py": f"ValueError: a family's name is 1 to 120 {rule} '../Bad Family <b>'",
    })


def test_the_name_rule_allows_what_the_database_stores():
    from app.models import Family, Run
    from runners.names import FAMILY_NAME_LENGTH, IMPLEMENTATION_NAME_LENGTH

    assert Family.name.max_length == FAMILY_NAME_LENGTH
    assert Run.implementation.max_length == IMPLEMENTATION_NAME_LENGTH


def test_answers_the_contract_does_not_allow_break_their_plugin(plugins_dir):
    write_plugin(plugins_dir / "adds_nothing.py", implementation_plugin("[]"))
    write_plugin(plugins_dir / "declares_nothing.py", "\n@hookimpl\ndef kernel_plugin():\n    return None\n")
    write_plugin(plugins_dir / "no_marker.py", "\ndef kernel_plugin():\n    return None\n")
    write_plugin(plugins_dir / "fp64.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("x", "tests", '
        'dtypes=("fp64",)),))'))
    write_plugin(plugins_dir / "no_implementations.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=())'))
    write_plugin(plugins_dir / "no_prepare_pass.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", implementation=Implementation("x", "tests"), '
        'prepare_pass=None)]'))
    write_plugin(plugins_dir / "two_arguments.py", implementation_plugin(
        '[AddedImplementation(family="rms_norm", target="cpu", implementation=Implementation("x", "tests"), '
        'prepare_pass=lambda implementation, workload: None)]'))
    write_plugin(plugins_dir / "twice.py", "\nADDED = AddedImplementation(family='rms_norm', target='cpu', "
                 "implementation=Implementation('twice', 'tests'), prepare_pass=prepare)\n"
                 + implementation_plugin("[ADDED, ADDED]"))
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    registry = get_registry()
    assert_only_those_broken(registry, {
        "adds_nothing.py": "TypeError: kernel_implementations() returned no records: an implementation plugin adds "
                           "at least one",
        "declares_nothing.py": "TypeError: kernel_plugin() returned NoneType, not a KernelPlugin",
        "no_marker.py": "TypeError: implements no hook of the contract (runners.hookspecs): mark each hook with "
                        "runners.hookimpl",
        "fp64.py": "ValueError: x: dtypes must be among fp32, bf16, fp16, not fp64",
        "no_implementations.py": "ValueError: probe on cpu lists no implementations: a family plugin declares at "
                                 "least one",
        "no_prepare_pass.py": "TypeError: AddedImplementation.prepare_pass must be Callable, not NoneType None",
        "two_arguments.py": "TypeError: AddedImplementation.prepare_pass(implementation, workload) cannot be called "
                            "as prepare_pass(implementation, workload, pass_): too many positional arguments",
        "twice.py": "ValueError: kernel_implementations() lists 'twice' for rms_norm on cpu twice",
    })
    assert {plugin.name: plugin.kind for plugin in registry.plugins if plugin.kind == "harness"} == \
        {"runners.environment": "harness"}


def test_a_misspelled_hook_or_an_argument_its_hook_does_not_pass_is_named_with_what_to_write(plugins_dir):
    """pluggy's own errors said "unknown hook 'kernel_implementation' in plugin <module ...>", and over three lines
    that ``params`` "can not be found in the hookspec", naming neither the hook meant nor the arguments there are."""
    write_plugin(plugins_dir / "misspelled.py", '\n@hookimpl\ndef kernel_implementation():\n    return []\n')
    write_plugin(plugins_dir / "no_such_hook.py", '\n@hookimpl\ndef my_helper(x):\n    return x\n')
    write_plugin(plugins_dir / "renamed_argument.py", family_plugin(
        'KernelPlugin(family=FAMILY, target="cpu", implementations=(Implementation("x", "tests"),))')
        + "\n@hookimpl\ndef build_workload(params, dtype, options, seed, device):\n    return {}\n")
    write_plugin(plugins_dir / "argument_to_none.py",
                 "\n@hookimpl\ndef kernel_implementations(family, target):\n    return []\n")
    write_plugin(plugins_dir / "some_arguments_any_order.py",
                 "\n@hookimpl\ndef update_environment(target, environment, *args, note=None, **kwargs):\n"
                 "    environment['note'] = note\n")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    hooks = ("build_workload, generate_environment, kernel_implementations, kernel_plugin, prepare_pass, "
             "reference_outputs, update_environment, workload_cost")
    assert_only_those_broken(get_registry(), {
        "misspelled.py": "TypeError: kernel_implementation is marked with hookimpl but is no hook of the contract "
                         "(runners.hookspecs): did you mean kernel_implementations?",
        "no_such_hook.py": "TypeError: my_helper is marked with hookimpl but is no hook of the contract "
                           f"(runners.hookspecs); it has {hooks}",
        "renamed_argument.py": "TypeError: build_workload takes params, which its hook does not pass: it passes "
                               "parameters, dtype, options, seed, device by name (take any of them, in any order)",
        "argument_to_none.py": "TypeError: kernel_implementations takes family, target, which its hook does not "
                               "pass: it passes no arguments",
    })


def test_a_hook_named_by_specname_or_marked_optional_is_taken_as_pluggy_takes_it(plugins_dir):
    """pluggy's hookimpl(specname=...) implements a hook under another function name, and optionalhook=True marks one a
    later contract may have: check_pending took both, and the check that replaced it broke their modules as marking
    "no hook of the contract"."""
    write_plugin(plugins_dir / "specname.py", "\n@hookimpl(specname='update_environment')\n"
                 "def add_note(target, environment):\n    environment['note'] = 'specname'\n")
    write_plugin(plugins_dir / "optional.py", "\n@hookimpl(optionalhook=True)\ndef a_later_hook():\n    return 1\n\n"
                 "@hookimpl\ndef update_environment(environment):\n    environment['later'] = 'optional'\n")
    write_plugin(plugins_dir / "specname_misspelled.py", "\n@hookimpl(specname='update_enviroment')\n"
                 "def add_note(environment):\n    return None\n")
    write_plugin(plugins_dir / "specname_argument.py", "\n@hookimpl(specname='update_environment')\n"
                 "def add_note(env):\n    return None\n")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")

    registry = get_registry()
    assert_only_those_broken(registry, {
        "specname_misspelled.py": "TypeError: add_note (specname update_enviroment) is marked with hookimpl but is no "
                                  "hook of the contract (runners.hookspecs): did you mean update_environment?",
        "specname_argument.py": "TypeError: add_note takes env, which its hook does not pass: it passes environment, "
                                "target, device by name (take any of them, in any order)",
    })
    environment = {}
    registry.manager.hook.update_environment(environment=environment, target="cpu", device="cpu")
    assert (environment["note"], environment["later"]) == ("specname", "optional")


def test_a_plugin_slow_to_import_is_named_while_discovery_waits_for_it(plugins_dir, monkeypatch, caplog):
    """A plugin building an extension at import held every command that lists or measures plugins without a word of
    which one it was waiting for (a hung one, for ever)."""
    (plugins_dir / "slow.py").write_text("import time\n\ntime.sleep(0.5)\n")
    shutil.copy(TEST_PLUGINS / "toy_linear.py", plugins_dir / "z_toy.py")
    monkeypatch.setattr(discovery, "SLOW_IMPORT_SECONDS", 0.2)
    with caplog.at_level("WARNING", logger="runners.discovery"):
        registry = get_registry()
    said = [record.getMessage() for record in caplog.records]  # a built-in importing torch first may be named too
    assert [message for message in said if "slow.py" in message] == [
        f"still importing the plugin {plugins_dir / 'slow.py'} after 0.2 s: every process that lists or measures "
        "plugins imports each one (flask plugins, the web app, flask import, every rerun); do slow work (building an "
        "extension, downloading weights) on first use, in prepare_pass, not at import"]
    assert not [message for message in said if "z_toy.py" in message]
    assert registry.find("toy_linear", "cpu")
