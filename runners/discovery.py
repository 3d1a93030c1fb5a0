"""Finding plugins: built-in modules, a plugins directory and installed entry points.

Everything found is registered with one pluggy manager. A plugin that fails to
import, replaces a function the harness times with while importing
(``integrity.imported_untampered``), implements a hook that does not exist (a
misspelling, found by ``check_pending``), or declares a family and target another plugin already holds,
is recorded as broken with its error and left out; the others are unaffected.
The registry is built once per plugins directory and kept: the importer asks it
for family definitions on every import, and building it imports torch.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from runners import PROJECT_NAME, hookspecs, integrity
from runners.types import FamilyDefinition, KernelPlugin

BUILTIN_MODULES = (
    "runners.environment",
    "plugins.fused_neighborhood_attention.cpu",
    "plugins.fused_neighborhood_attention.cuda",
    "plugins.multi_token_attention.cpu",
    "plugins.multi_token_attention.cuda",
    "plugins.rms_norm.cpu",
    "plugins.rms_norm.cuda",
    "plugins.layer_norm.cpu",
    "plugins.layer_norm.cuda",
    "plugins.swiglu.cpu",
    "plugins.swiglu.cuda",
    "plugins.geglu.cpu",
    "plugins.geglu.cuda",
    "plugins.softmax.cpu",
    "plugins.softmax.cuda",
    "plugins.sparsemax.cpu",
    "plugins.sparsemax.cuda",
    "plugins.relu_squared.cpu",
    "plugins.relu_squared.cuda",
    "plugins.embedding.cpu",
    "plugins.embedding.cuda",
    "plugins.sparse_multi_token_attention.cpu",
    "plugins.sparse_multi_token_attention.cuda",
    "plugins.rope.cpu",
    "plugins.rope.cuda",
    "plugins.fused_add_rms_norm.cpu",
    "plugins.fused_add_rms_norm.cuda",
    "plugins.group_norm.cpu",
    "plugins.group_norm.cuda",
    "plugins.dyt.cpu",
    "plugins.dyt.cuda",
    "plugins.poly_norm.cpu",
    "plugins.poly_norm.cuda",
)
PLUGINS_DIR_VARIABLE = "KERNELINDEX_PLUGINS_DIR"
ENTRY_POINT_GROUP = "kernelindex"

BUILTIN, DIRECTORY, ENTRY_POINT = "builtin", "directory", "entry point"


@dataclass(frozen=True)
class LoadedPlugin:
    """A registered plugin. ``record`` is None for harness plugins (environment hooks only)."""

    name: str
    origin: str
    module: Any
    record: KernelPlugin | None

    def as_document(self) -> dict[str, Any]:
        document = {"name": self.name, "origin": self.origin, "kind": "kernel" if self.record else "harness"}
        if self.record:
            document.update(self.record.as_document())
        return document


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that was found but could not be used, and why."""

    name: str
    origin: str
    error: str

    def as_document(self) -> dict[str, Any]:
        return {"name": self.name, "origin": self.origin, "error": self.error}


class PluginNotFound(LookupError):
    """No plugin implements the family on the target asked for."""


class PluginRegistry:
    """The plugin manager and what discovery learned about each plugin."""

    def __init__(self, manager: pluggy.PluginManager, plugins: list[LoadedPlugin], broken: list[BrokenPlugin]):
        self.manager = manager
        self.plugins = tuple(plugins)
        self.broken = tuple(broken)

    @property
    def kernel_plugins(self) -> tuple[LoadedPlugin, ...]:
        return tuple(plugin for plugin in self.plugins if plugin.record)

    def find(self, family: str, target: str) -> LoadedPlugin:
        for plugin in self.kernel_plugins:
            if plugin.record.family.name == family and plugin.record.target == target:
                return plugin
        offered = sorted({p.record.target for p in self.kernel_plugins if p.record.family.name == family})
        if offered:
            raise PluginNotFound(f"no plugin runs {family} on {target} (targets with a plugin: {', '.join(offered)})")
        raise PluginNotFound(f"no plugin implements the family {family!r}")

    def call(self, plugin: LoadedPlugin, hook_name: str, **kwargs) -> Any:
        """Call a family hook on ``plugin`` alone: the others may implement the same family elsewhere."""
        others = [module for module in self.manager.get_plugins() if module is not plugin.module]
        return self.manager.subset_hook_caller(hook_name, remove_plugins=others)(**kwargs)

    def family_definitions(self) -> dict[str, FamilyDefinition]:
        definitions: dict[str, FamilyDefinition] = {}
        for plugin in self.kernel_plugins:
            definitions.setdefault(plugin.record.family.name, plugin.record.family)
        return definitions


def _import_file(path: Path) -> ModuleType:
    module_name = f"kernelindex_plugins_dir.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _candidates(plugins_dir: str | None):
    """Yield ``(name, origin, load)`` for every plugin source, in registration order."""
    for module_name in BUILTIN_MODULES:
        yield module_name, BUILTIN, functools.partial(importlib.import_module, module_name)
    if plugins_dir:
        for path in sorted(Path(plugins_dir).glob("*.py")):
            yield str(path), DIRECTORY, functools.partial(_import_file, path)
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        yield f"{entry_point.name} ({entry_point.value})", ENTRY_POINT, entry_point.load


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def build_registry(plugins_dir: str | None) -> PluginRegistry:
    """Discover, register and validate every plugin; never raises for a plugin's fault."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    plugins: list[LoadedPlugin] = []
    broken: list[BrokenPlugin] = []
    held: dict[tuple[str, str], str] = {}
    if plugins_dir and not Path(plugins_dir).is_dir():
        broken.append(BrokenPlugin(plugins_dir, DIRECTORY, f"{PLUGINS_DIR_VARIABLE} names no directory"))
    for name, origin, load in _candidates(plugins_dir):
        try:
            module = integrity.imported_untampered(load)
            manager.register(module, name=name)
        except Exception as error:  # a plugin's bug must not stop discovery
            broken.append(BrokenPlugin(name, origin, _describe(error)))
            continue
        try:
            manager.check_pending()
            record = _record(manager, module)
        except Exception as error:
            manager.unregister(module)
            broken.append(BrokenPlugin(name, origin, _describe(error)))
            continue
        if record:
            key = (record.family.name, record.target)
            if key in held:
                manager.unregister(module)
                broken.append(BrokenPlugin(name, origin, f"{key[0]} on {key[1]} is already provided by {held[key]}"))
                continue
            held[key] = name
        plugins.append(LoadedPlugin(name, origin, module, record))
    return PluginRegistry(manager, plugins, broken)


def _record(manager: pluggy.PluginManager, module: Any) -> KernelPlugin | None:
    others = [plugin for plugin in manager.get_plugins() if plugin is not module]
    record = manager.subset_hook_caller("kernel_plugin", remove_plugins=others)()
    if record is not None and not isinstance(record, KernelPlugin):
        raise TypeError(f"kernel_plugin() returned {type(record).__name__}, not a KernelPlugin")
    return record


@functools.lru_cache(maxsize=8)
def _registry_for(plugins_dir: str | None) -> PluginRegistry:
    return build_registry(plugins_dir)


def get_registry() -> PluginRegistry:
    """The registry for the current ``KERNELINDEX_PLUGINS_DIR``, built on first use."""
    return _registry_for(os.environ.get(PLUGINS_DIR_VARIABLE) or None)


def family_definitions() -> dict[str, FamilyDefinition]:
    """Every family some plugin declares, by name. Needs no GPU."""
    return get_registry().family_definitions()


def plugin_listing() -> dict[str, list[dict[str, Any]]]:
    """What ``flask plugins`` and the web show: usable plugins and broken ones."""
    registry = get_registry()
    return {"plugins": [plugin.as_document() for plugin in registry.plugins],
            "broken": [plugin.as_document() for plugin in registry.broken]}
