"""Finding plugins: built-in modules, a plugins directory and installed entry points.

Everything found is registered with one pluggy manager. A plugin that fails to
import or exits while importing (``sys.exit``), replaces a function the harness times
with while importing (``integrity.imported_untampered``), implements no hook, one
that does not exist (a misspelling: the error names the nearest hook) or one taking an
argument its hook does not pass (the error lists those it does), answers
``kernel_plugin`` or ``kernel_implementations`` with anything but the records the
contract asks for (each record checks its fields' types, names and values where it is
made: ``runners.types``), declares a family and target another plugin already holds,
or adds an implementation twice, to a family and target nobody declares or under a name
the family already has there (checked once all are registered, so the order they are
found in does not matter), is recorded as broken with its error and left out; the
others are unaffected.
The registry is built once per plugins directory and kept: the importer asks it
for family definitions on every import, and building it imports torch.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Iterable, Mapping, Sequence

import pluggy

from runners import PROJECT_NAME, hookspecs, integrity
from runners.types import AddedImplementation, FamilyDefinition, Implementation, KernelPlugin, PreparedPass, Workload

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
    "plugins.llama4_rope.cpu",
    "plugins.llama4_rope.cuda",
    "plugins.qwen2vl_mrope.cpu",
    "plugins.qwen2vl_mrope.cuda",
    "plugins.cross_entropy.cpu",
    "plugins.cross_entropy.cuda",
    "plugins.kl_div.cpu",
    "plugins.kl_div.cuda",
    "plugins.jsd.cpu",
    "plugins.jsd.cuda",
    "plugins.tvd.cpu",
    "plugins.tvd.cuda",
    "plugins.fused_linear_cross_entropy.cpu",
    "plugins.fused_linear_cross_entropy.cuda",
    "plugins.fused_linear_jsd.cpu",
    "plugins.fused_linear_jsd.cuda",
    "plugins.distill_jsd_loss.cpu",
    "plugins.distill_jsd_loss.cuda",
    "plugins.distill_cosine_loss.cpu",
    "plugins.distill_cosine_loss.cuda",
    "plugins.fused_linear_orpo_loss.cpu",
    "plugins.fused_linear_orpo_loss.cuda",
    "plugins.fused_linear_cpo_loss.cpu",
    "plugins.fused_linear_cpo_loss.cuda",
    "plugins.fused_linear_simpo_loss.cpu",
    "plugins.fused_linear_simpo_loss.cuda",
    "plugins.fused_moe.cpu",
    "plugins.fused_moe.cuda",
    "plugins.tiled_swiglu.cpu",
    "plugins.tiled_swiglu.cuda",
    "plugins.tiled_geglu.cpu",
    "plugins.tiled_geglu.cuda",
    "plugins.megatron_swiglu.cpu",
    "plugins.megatron_swiglu.cuda",
    "plugins.megatron_rms_norm.cpu",
    "plugins.megatron_rms_norm.cuda",
    "plugins.megatron_cross_entropy.cpu",
    "plugins.megatron_cross_entropy.cuda",
    "plugins.kto_loss.cpu",
    "plugins.kto_loss.cuda",
    "plugins.fused_linear_grpo_loss_token.cpu",
    "plugins.fused_linear_grpo_loss_token.cuda",
    "plugins.fused_linear_grpo_loss_sequence.cpu",
    "plugins.fused_linear_grpo_loss_sequence.cuda",
)
PLUGINS_DIR_VARIABLE = "KERNELINDEX_PLUGINS_DIR"
ENTRY_POINT_GROUP = "kernelindex"

BUILTIN, DIRECTORY, ENTRY_POINT = "builtin", "directory", "entry point"

logger = logging.getLogger(__name__)

FAMILY_HOOKS = ("build_workload", "prepare_pass", "reference_outputs", "workload_cost")
"""The hooks called only on the plugin that declares the family (``kernel_plugin``)."""

RUNNERS_DIRECTORY = Path(__file__).resolve().parent

SLOW_IMPORT_SECONDS = 10.0
"""How long importing one plugin may take before discovery says, on the log, which plugin it is waiting for."""

PLUGIN_FAULTS = (Exception, SystemExit)
"""What plugin code may raise without ending the host: an error, or ``sys.exit`` (the plugin is broken, not the
harness). KeyboardInterrupt is the operator's, and stops the host as ever."""


@dataclass(frozen=True)
class PluginSource:
    """Where a plugin comes from, as plain data, so a child process (``runners.isolation``) loads the very module
    discovery did: ``location`` is a built-in's module name, a directory plugin's file or an entry point's value."""

    name: str
    origin: str
    location: str

    def load(self) -> ModuleType:
        if self.origin == BUILTIN:
            return importlib.import_module(self.location)
        if self.origin == DIRECTORY:
            return _import_file(Path(self.location))
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if (entry_point.name, entry_point.value) == (self.name.partition(" (")[0], self.location):
                loaded = entry_point.load()
                if not isinstance(loaded, ModuleType):  # pluggy would find no hook on it and say only that
                    raise TypeError(f"{self.location} is a {type(loaded).__name__}, not a module: a "
                                    f"{ENTRY_POINT_GROUP!r} entry point names the module holding the hooks "
                                    f"({self.location.partition(':')[0]})")
                return loaded
        raise LookupError(f"no {ENTRY_POINT_GROUP!r} entry point {self.name}")


@dataclass(frozen=True)
class LoadedPlugin:
    """A registered plugin: a family plugin has a ``record``, an implementation plugin ``added``
    implementations, a harness plugin (environment hooks only) neither."""

    name: str
    origin: str
    module: Any
    record: KernelPlugin | None
    added: tuple[AddedImplementation, ...] = ()
    location: str = ""

    @property
    def source(self) -> PluginSource:
        return PluginSource(self.name, self.origin, self.location)

    @property
    def kind(self) -> str:
        return "kernel" if self.record else "implementations" if self.added else "harness"

    def as_document(self) -> dict[str, Any]:
        """The plugin as listed; a family plugin's implementations are its own (the listing adds the others)."""
        document = {"name": self.name, "origin": self.origin, "kind": self.kind}
        if self.record:
            document.update(self.record.as_document())
        if self.added:
            document["adds"] = [added.as_document() for added in self.added]
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
        self.added: dict[tuple[str, str], list[tuple[AddedImplementation, LoadedPlugin]]] = {}
        for plugin in self.plugins:
            for added in plugin.added:
                self.added.setdefault((added.family, added.target), []).append((added, plugin))
        definitions: dict[str, FamilyDefinition] = {}
        for plugin in self.kernel_plugins:
            definitions.setdefault(plugin.record.family.name, plugin.record.family)
        self._definitions = MappingProxyType(definitions)

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

    def _added_to(self, plugin: LoadedPlugin) -> list[tuple[AddedImplementation, LoadedPlugin]]:
        return self.added.get((plugin.record.family.name, plugin.record.target), [])

    def implementation_sources(self, plugin: LoadedPlugin) -> list[tuple[Implementation, LoadedPlugin]]:
        """Every implementation of a family plugin's family and target, with the plugin it came from:
        the family plugin's own, then those other modules add, in the order they were found."""
        return ([(implementation, plugin) for implementation in plugin.record.implementations]
                + [(added.implementation, source) for added, source in self._added_to(plugin)])

    def implementations(self, plugin: LoadedPlugin) -> tuple[Implementation, ...]:
        return tuple(implementation for implementation, _ in self.implementation_sources(plugin))

    def implementation(self, plugin: LoadedPlugin, name: str) -> Implementation:
        implementations = self.implementations(plugin)
        for implementation in implementations:
            if implementation.name == name:
                return implementation
        raise KeyError(f"{plugin.record.family.name} on {plugin.record.target} has no implementation {name!r} "
                       f"(it has: {', '.join(i.name for i in implementations) or 'none'})")

    def prepare_pass(self, plugin: LoadedPlugin, implementation: Implementation, workload: Workload,
                     pass_: str) -> PreparedPass | None:
        """The pass of one implementation of ``plugin``'s family: prepared by the module that added it,
        else by the family plugin's own ``prepare_pass``."""
        for added, _ in self._added_to(plugin):
            if added.implementation.name == implementation.name:
                return added.prepare_pass(implementation, workload, pass_)
        return self.call(plugin, "prepare_pass", implementation=implementation, workload=workload, pass_=pass_)

    def listing(self) -> dict[str, list[dict[str, Any]]]:
        """What ``flask plugins`` and the web show: each plugin, a family plugin with every implementation of
        its family and target and where each came from (``plugin``, ``origin``), and the broken ones."""
        documents = []
        for plugin in self.plugins:
            document = plugin.as_document()
            if plugin.record:
                document["implementations"] = [
                    {**implementation.as_document(), "plugin": source.name, "origin": source.origin}
                    for implementation, source in self.implementation_sources(plugin)]
            documents.append(document)
        return {"plugins": documents, "broken": [plugin.as_document() for plugin in self.broken]}

    def family_definitions(self) -> Mapping[str, FamilyDefinition]:
        """Every family a plugin declares, by name: worked out once (pages ask for a definition per row)."""
        return self._definitions


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
    """Every plugin source, in registration order."""
    for module_name in BUILTIN_MODULES:
        yield PluginSource(module_name, BUILTIN, module_name)
    if plugins_dir:
        for path in sorted(Path(plugins_dir).glob("*.py")):
            yield PluginSource(str(path), DIRECTORY, str(path))
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        yield PluginSource(f"{entry_point.name} ({entry_point.value})", ENTRY_POINT, entry_point.value)


def _describe(error: BaseException, during: str, source: PluginSource) -> str:
    if isinstance(error, SystemExit):
        return f"exited {during}: {error.code}{_where(error, source)}"
    return f"{type(error).__name__}: {error}{_where(error, source)}"


def _where(error: BaseException, source: PluginSource) -> str:
    """The plugin's own line that ``error`` came through last (``" (/path/plugin.py, line 3)"``), so that its author
    finds what to fix without importing it by hand; nothing for an error that a check of KernelIndex's raised (its
    message says what to fix) or one that came through no line of the plugin's (a syntax error names its own)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames or _within(frames[-1].filename, RUNNERS_DIRECTORY):
        return ""
    own = _source_path(source)
    lines = [frame for frame in frames if own and _within(frame.filename, own)]
    return f" ({lines[-1].filename}, line {lines[-1].lineno})" if lines else ""


def _within(filename: str, path: Path) -> bool:
    return Path(filename).resolve().is_relative_to(path.resolve())


def _source_path(source: PluginSource) -> Path | None:
    """The plugin's file, or the folder of the package its module is in (an entry point's package may spread its
    hooks over several modules); None where it cannot be found."""
    if source.origin == DIRECTORY:
        return Path(source.location)
    try:
        spec = importlib.util.find_spec(source.location.partition(":")[0].partition(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin else None


def build_registry(plugins_dir: str | None) -> PluginRegistry:
    """Discover, register and validate every plugin; never raises for a plugin's fault."""
    broken = []
    if plugins_dir and not Path(plugins_dir).is_dir():
        broken.append(BrokenPlugin(plugins_dir, DIRECTORY, f"{PLUGINS_DIR_VARIABLE} names no directory"))
    return registry_of(_candidates(plugins_dir), broken)


def registry_of(sources: Iterable[PluginSource], broken: Sequence[BrokenPlugin] = ()) -> PluginRegistry:
    """Register and validate the plugins of ``sources``, in order (all of discovery's, or the few a child process
    needs); ``broken``: what was found unusable before. Never raises for a plugin's fault."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    plugins: list[LoadedPlugin] = []
    broken = list(broken)
    held: dict[tuple[str, str], str] = {}
    for source in sources:
        name, origin = source.name, source.origin
        try:
            with _said_if_slow(name):
                module = integrity.imported_untampered(source.load)
            _check_hook_implementations(manager, module)
            manager.register(module, name=name)
        except PLUGIN_FAULTS as error:  # a plugin's bug must not stop discovery
            broken.append(BrokenPlugin(name, origin, _describe(error, "at import", source)))
            continue
        try:
            implemented = {caller.name for caller in manager.get_hookcallers(module)}
            _check_hooks(implemented)
            record = _record(manager, module) if "kernel_plugin" in implemented else None
            added = _added(manager, module) if "kernel_implementations" in implemented else ()
        except PLUGIN_FAULTS as error:
            manager.unregister(module)
            broken.append(BrokenPlugin(name, origin, _describe(error, "when asked for its records", source)))
            continue
        if record:
            key = (record.family.name, record.target)
            if key in held:
                manager.unregister(module)
                broken.append(BrokenPlugin(name, origin, f"{key[0]} on {key[1]} is already provided by {held[key]}"))
                continue
            held[key] = name
        plugins.append(LoadedPlugin(name, origin, module, record, added, source.location))
    return PluginRegistry(manager, _without_bad_additions(manager, plugins, broken), broken)


def _record(manager: pluggy.PluginManager, module: Any) -> KernelPlugin:
    """The answer of a module that implements ``kernel_plugin``: its one record."""
    others = [plugin for plugin in manager.get_plugins() if plugin is not module]
    record = manager.subset_hook_caller("kernel_plugin", remove_plugins=others)()
    if not isinstance(record, KernelPlugin):
        raise TypeError(f"kernel_plugin() returned {type(record).__name__}, not a KernelPlugin")
    return record


def _added(manager: pluggy.PluginManager, module: Any) -> tuple[AddedImplementation, ...]:
    """The answer of a module that implements ``kernel_implementations``: one record or more, none listed twice."""
    others = [plugin for plugin in manager.get_plugins() if plugin is not module]
    answer = manager.subset_hook_caller("kernel_implementations", remove_plugins=others)()
    if not isinstance(answer, Sequence):
        raise TypeError(f"kernel_implementations() returned {type(answer).__name__}, not a sequence of "
                        "AddedImplementation records")
    wrong = [type(record).__name__ for record in answer if not isinstance(record, AddedImplementation)]
    if wrong:
        raise TypeError(f"kernel_implementations() returned {', '.join(wrong)}, not AddedImplementation records")
    if not answer:
        raise TypeError("kernel_implementations() returned no records: an implementation plugin adds at least one")
    listed = set()
    for added in answer:
        place = (added.family, added.target, added.implementation.name)
        if place in listed:
            raise ValueError(f"kernel_implementations() lists {place[2]!r} for {place[0]} on {place[1]} twice")
        listed.add(place)
    return tuple(answer)


@contextmanager
def _said_if_slow(name: str):
    """Say which plugin discovery waits for once its import has taken ``SLOW_IMPORT_SECONDS``: a plugin that builds
    an extension at import held ``flask plugins``, the web app and every rerun silent for minutes, and a hung one for
    ever, without a word of which."""
    notice = threading.Timer(SLOW_IMPORT_SECONDS, lambda: logger.warning(
        "still importing the plugin %s after %g s: every process that lists or measures plugins imports each one "
        "(flask plugins, the web app, flask import, every rerun); do slow work (building an extension, downloading "
        "weights) on first use, in prepare_pass, not at import", name, SLOW_IMPORT_SECONDS))
    notice.daemon = True
    notice.start()
    try:
        yield
    finally:
        notice.cancel()


def _check_hook_implementations(manager: pluggy.PluginManager, module: Any) -> None:
    """Refuse, before pluggy registers it, a module marking a function that is no hook of the contract or that takes
    an argument its hook does not pass, saying what to write: pluggy's own errors (``check_pending``'s "unknown
    hook", ``register``'s) name neither the hook meant nor the arguments there are."""
    hooks = {hook_name: caller.spec.argnames for hook_name, caller in vars(manager.hook).items() if caller.spec}
    for attribute in dir(module):
        options = manager.parse_hookimpl_opts(module, attribute)
        if options is None:
            continue
        hook = options.get("specname") or attribute  # hookimpl(specname=...): a function named otherwise implements it
        if hook not in hooks:
            if options.get("optionalhook"):  # hookimpl(optionalhook=True): a hook of a later contract, left uncalled
                continue
            named = attribute if hook == attribute else f"{attribute} (specname {hook})"
            nearest = difflib.get_close_matches(hook, hooks, n=1)
            raise TypeError(f"{named} is marked with hookimpl but is no hook of the contract (runners.hookspecs)"
                            + (f": did you mean {nearest[0]}?" if nearest else f"; it has {', '.join(sorted(hooks))}"))
        parameters = inspect.signature(getattr(module, attribute)).parameters.values()
        taken = [parameter.name for parameter in parameters if parameter.default is parameter.empty
                 and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
        unknown = [argument for argument in taken if argument not in hooks[hook]]
        if unknown:
            passed = hooks[hook]
            raise TypeError(f"{attribute} takes {', '.join(unknown)}, which its hook does not pass: "
                            + (f"it passes {', '.join(passed)} by name (take any of them, in any order)" if passed
                               else "it passes no arguments"))


def _check_hooks(implemented: set[str]) -> None:
    """Refuse a module whose hooks would never be called, say one thing two ways, or that implements none."""
    if not implemented:
        raise TypeError("implements no hook of the contract (runners.hookspecs): mark each hook with runners.hookimpl")
    if {"kernel_plugin", "kernel_implementations"} <= implemented:
        raise TypeError("implements kernel_plugin and kernel_implementations: a family plugin lists its own "
                        "implementations in its record; kernel_implementations adds to another plugin's family")
    family_hooks = sorted(implemented & set(FAMILY_HOOKS))
    if family_hooks and "kernel_plugin" not in implemented:
        raise TypeError(f"implements {', '.join(family_hooks)} without kernel_plugin, so it would never be called: "
                        "family hooks are called on the plugin that declares the family (an added "
                        "implementation's record carries its prepare_pass)")


def _without_bad_additions(manager: pluggy.PluginManager, plugins: list[LoadedPlugin],
                           broken: list[BrokenPlugin]) -> list[LoadedPlugin]:
    """The plugins, less those adding an implementation to a family and target nobody declares or under a
    name the family already has there: each of those is unregistered and recorded as broken. Run once every
    plugin is registered, so a module found before the family plugin it adds to is not refused for that."""
    holders = {(p.record.family.name, p.record.target): {i.name: p.name for i in p.record.implementations}
               for p in plugins if p.record}
    kept = []
    for plugin in plugins:
        problem = None
        for added in plugin.added:
            key, name = (added.family, added.target), added.implementation.name
            if key not in holders:
                declared = sorted(target for family, target in holders if family == added.family)
                nearest = difflib.get_close_matches(added.family, {family for family, _ in holders}, n=1)
                problem = (f"adds {name!r} to {added.family} on {added.target}, which no plugin declares"
                           + (f" ({added.family} is declared on {', '.join(declared)})" if declared
                              else f" (did you mean {nearest[0]}?)" if nearest else ""))
            elif name in holders[key]:
                problem = (f"adds {name!r} to {added.family} on {added.target}, which already has it "
                           f"(from {holders[key][name]})")
            if problem:
                break
        if problem:
            manager.unregister(plugin.module)
            broken.append(BrokenPlugin(plugin.name, plugin.origin, problem))
            continue
        for added in plugin.added:
            holders[added.family, added.target][added.implementation.name] = plugin.name
        kept.append(plugin)
    return kept


@functools.lru_cache(maxsize=8)
def _registry_for(plugins_dir: str | None) -> PluginRegistry:
    return build_registry(plugins_dir)


_BUILDING = threading.Lock()


def get_registry() -> PluginRegistry:
    """The registry for the current ``KERNELINDEX_PLUGINS_DIR``, built on first use: once, also when the first
    requests of a threaded server ask for it together (the others wait for it rather than build their own)."""
    with _BUILDING:
        return _registry_for(os.environ.get(PLUGINS_DIR_VARIABLE) or None)


def family_definitions() -> Mapping[str, FamilyDefinition]:
    """Every family some plugin declares, by name. Needs no GPU."""
    return get_registry().family_definitions()


def plugin_listing() -> dict[str, list[dict[str, Any]]]:
    """What ``flask plugins`` and the web show (:meth:`PluginRegistry.listing`)."""
    return get_registry().listing()
