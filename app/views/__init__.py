"""Blueprints, one per area, and the JSON error handlers every area shares."""

from flask import jsonify, request
from werkzeug.exceptions import HTTPException


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path.endswith(".json") or (
        request.accept_mimetypes.best_match(["text/html", "application/json"]) == "application/json")


def register_blueprints(app):
    from .api import api

    app.register_blueprint(api)
    from .home import home; app.register_blueprint(home)  # noqa: E702
    from .runs import runs; app.register_blueprint(runs)  # noqa: E702
    from .comparisons import comparisons; app.register_blueprint(comparisons)  # noqa: E702
    from .families import families; app.register_blueprint(families)  # noqa: E702
    from ..openapi import openapi; app.register_blueprint(openapi)  # noqa: E702
    from .community import community; app.register_blueprint(community)  # noqa: E702
    from .maintainers import maintainers; app.register_blueprint(maintainers)  # noqa: E702

    @app.errorhandler(HTTPException)
    def http_error(error):
        if wants_json():
            return jsonify(error=error.description, status=error.code), error.code
        return error
