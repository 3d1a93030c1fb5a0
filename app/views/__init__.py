"""Blueprints, one per area, and the JSON error handlers every area shares."""

from flask import jsonify, request
from werkzeug.exceptions import HTTPException


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path.endswith(".json") or (
        request.accept_mimetypes.best_match(["text/html", "application/json"]) == "application/json")


def register_blueprints(app):
    from .api import api

    app.register_blueprint(api)

    @app.errorhandler(HTTPException)
    def http_error(error):
        if wants_json():
            return jsonify(error=error.description, status=error.code), error.code
        return error
