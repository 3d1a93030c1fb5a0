"""Blueprints, one per area, and the error pages every area shares."""

from flask import jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from .render import wants_json


def register_blueprints(app):
    from ..openapi import openapi
    from .api import api
    from .community import community
    from .comparisons import comparisons
    from .families import families
    from .home import home
    from .maintainers import maintainers
    from .runs import runs

    for blueprint in (api, home, runs, comparisons, families, openapi, community, maintainers):
        app.register_blueprint(blueprint)

    @app.errorhandler(HTTPException)
    def http_error(error):
        """A clear message with the 4xx/5xx status: JSON for API and twin requests, a page otherwise."""
        if wants_json() or request.path.startswith("/api/"):
            return jsonify(error=error.description, status=error.code), error.code
        response = error.get_response()
        response.set_data(render_template("error.html", error=error, title=f"{error.code} {error.name}"))
        response.content_type = "text/html; charset=utf-8"
        return response
