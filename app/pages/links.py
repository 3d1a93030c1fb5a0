"""URLs of the pages, as the pages link to each other and as the JSON twins name them."""

from flask import url_for

from .family_query import config_of


def run_url(run_id: str, **kwargs) -> str:
    return url_for("runs.run_page", run_id=run_id, **kwargs)


def run_twin_url(run_id: str) -> str:
    """The run page's JSON twin, absolute: what twin listings give as each item's ``url``."""
    return url_for("runs.run_page_json", run_id=run_id, _external=True)


def run_api_url(run_id: str) -> str:
    return url_for("api.run_detail", run_id=run_id, _external=True)


def comparison_url(key: str, **kwargs) -> str:
    return url_for("comparisons.comparison_page", key=key.split(":", 1)[-1], **kwargs)


def family_url(name: str, **kwargs) -> str:
    return url_for("families.family_page", name=name, **kwargs)


def family_url_of_run(run) -> str:
    """The family page as this run sees it: its GPU, pass, metric and configuration preselected, the sweep free."""
    config = config_of(run.kernel_id, {"parameters": run.parameters, "x_name": run.x_name, "options": run.options,
                                       "dtype": run.dtype})
    return family_url(run.kernel_id, **{"pass": run.pass_, "metric": run.metric, "gpu": run.gpu, **dict(config)})
