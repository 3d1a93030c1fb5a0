"""Blueprints, one per area, and the error pages every area shares."""

from werkzeug.exceptions import HTTPException

from .render import error_response


def register_blueprints(app):
    from ..openapi import openapi
    from .api import api
    from .badges import badges
    from .community import community
    from .comparisons import comparisons
    from .downloads import downloads
    from .families import families
    from .home import home
    from .maintainers import maintainers
    from .policies import policies
    from .reruns import reruns
    from .runs import runs
    from .site import site

    for blueprint in (api, home, runs, comparisons, families, openapi, community, maintainers, site,
                      downloads, policies, badges, reruns):
        app.register_blueprint(blueprint)

    app.register_error_handler(HTTPException, error_response)
