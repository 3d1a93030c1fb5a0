"""The plugin listing: every plugin found, each family's implementations with where each came from, and the
plugins that failed to load with why."""

from .titles import implementation_title


def plugins_page() -> dict:
    try:
        from runners.discovery import plugin_listing

        listing = plugin_listing()
    except Exception as error:  # the web must show the listing's failure, not fail with it
        return {"plugins": [], "broken": [], "error": f"{type(error).__name__}: {error}"}
    for plugin in listing["plugins"]:
        for implementation in plugin.get("implementations") or ():
            implementation["title"] = implementation_title(implementation["name"])
    return {**listing, "error": None}
