"""The plugin listing: every plugin found with its static scan's warnings, each family's implementations with
where each came from, and the plugins that failed to load with why.

The scan (``runners.scan``) reads each plugin module's source for the known ways to game a
measurement, with the shapes of the workloads published for its family; its warnings are
shown, never acted on: the rerun harness's runtime checks decide.
"""

from ..models import Run
from .titles import implementation_title

PUBLISHED_WORKLOADS_SCANNED = 500
"""At most this many of a family's distinct published workloads give the scan its shapes."""


def published_shapes(definition) -> set:
    """The tensor shapes of the workloads published for a family (``FamilyDefinition``), as the scan compares."""
    shapes = set()
    workloads = (Run.select(Run.parameters, Run.dtype, Run.options).where(Run.kernel == definition.name)
                 .distinct().limit(PUBLISHED_WORKLOADS_SCANNED))
    for workload in workloads:
        try:
            specs = definition.tensors({**definition.defaults, **workload.parameters, **workload.options},
                                       workload.dtype or "fp32")
        except Exception:  # a published workload this plugin's definition cannot express: nothing to compare
            continue
        shapes.update(tuple(spec.shape) for spec in specs)
    return shapes


def scanned_families(loaded, definitions: dict) -> list:
    """The families whose published shapes a plugin's scan compares with: its own, or those it adds to."""
    if loaded is None:
        return []
    if loaded.record:
        return [loaded.record.family]
    return [definitions[added.family] for added in loaded.added if added.family in definitions]


def plugins_page() -> dict:
    try:
        from runners.discovery import get_registry, plugin_listing
        from runners.scan import scan_module

        listing = plugin_listing()
        modules = {plugin.name: plugin for plugin in get_registry().plugins}
    except Exception as error:  # the web must show the listing's failure, not fail with it
        return {"plugins": [], "broken": [], "error": f"{type(error).__name__}: {error}"}
    definitions = get_registry().family_definitions()
    shapes_of = {}  # family name -> its published shapes: a family's CPU and CUDA plugins (and adders) share them
    for plugin in listing["plugins"]:
        for implementation in plugin.get("implementations") or ():
            implementation["title"] = implementation_title(implementation["name"])
        loaded = modules.get(plugin["name"])  # None only when the listing and the registry disagree
        families = scanned_families(loaded, definitions)
        for family in families:
            if family.name not in shapes_of:
                shapes_of[family.name] = published_shapes(family)
        shapes = set().union(*(shapes_of[family.name] for family in families))
        plugin["scan_warnings"] = [warning.as_document() for warning in scan_module(loaded.module, shapes)] \
            if loaded else []
    return {**listing, "error": None}
