"""KernelIndex: a public index of GPU-kernel benchmark results with provenance.

``create_app`` wires configuration (defaults, instance ``config.py``,
``KERNELINDEX_*`` environment variables), the database, the blueprints and the
CLI, and discovers the kernel plugins. It refuses to start without a secret key and a public
URL (or trusted hosts) outside tests: see ``security.check_configuration``. Nothing here
touches a GPU.
"""

import os
from pathlib import Path

from flask import Flask

from . import config as default_config
from . import db
from . import inputs, queue
from .security import check_configuration
from .security import init_app as init_security

ENV_PREFIX = "KERNELINDEX"


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_object(default_config)
    app.config.from_pyfile("config.py", silent=True)
    app.config.from_prefixed_env(ENV_PREFIX)
    if test_config:
        app.config.update(test_config)
    check_configuration(app)
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    if not app.config["DATABASE_URL"]:
        app.config["DATABASE_URL"] = "sqlite:///" + os.path.join(app.instance_path, "kernelindex.sqlite3")
    if not app.config["QUEUE_URL"]:
        app.config["QUEUE_URL"] = "sqlite:///" + os.path.join(app.instance_path, queue.QUEUE_FILE)
    db.init_app(app)

    from .views import register_blueprints

    init_security(app)
    inputs.init_app(app)
    register_blueprints(app)

    from .cli import register_commands

    register_commands(app)
    discover_plugins(app)
    return app


def discover_plugins(app: Flask) -> None:
    """Find the kernel plugins now, so no request pays for it (building the registry imports torch).

    Discovery is cached per process; a failure is logged here and shown on ``/plugins``.
    """
    try:
        from runners.discovery import get_registry

        get_registry()
    except Exception:  # the web must still start; the plugins page reports the failure
        app.logger.exception("plugin discovery failed")
