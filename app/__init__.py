"""KernelIndex: a public index of GPU-kernel benchmark results with provenance.

``create_app`` wires configuration (defaults, instance ``config.py``,
``KERNELINDEX_*`` environment variables), the database, the blueprints and the
CLI. It refuses to start without a secret key and a public
URL (or trusted hosts) outside tests: see ``security.check_configuration``. Nothing here
touches a GPU, nor discovers the kernel plugins (that imports torch, seconds that ``flask db
upgrade`` has no use for): ``runners.discovery.get_registry`` does it on first use, once per
process, and ``gunicorn.conf.py`` asks for it before a worker takes requests.
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
    default_database_url = "sqlite:///" + os.path.join(app.instance_path, "kernelindex.sqlite3")
    app.config["DATABASE_URL"] = app.config["DATABASE_URL"] or default_database_url
    if not app.config["QUEUE_URL"]:
        app.config["QUEUE_URL"] = queue.embedded_url(app.config["DATABASE_URL"], default_database_url,
                                                     app.instance_path)
    db.init_app(app)

    from .views import register_blueprints

    init_security(app)
    inputs.init_app(app)
    register_blueprints(app)

    from .cli import register_commands

    register_commands(app)
    return app
