"""WSGI entry point: ``flask --app wsgi ...`` and any WSGI server use ``app``."""

import click

from app import create_app
from app.security import ConfigurationError

try:
    app = create_app()
except ConfigurationError as refusal:
    if click.get_current_context(silent=True) is None:  # a WSGI server, or Python: the error is theirs to report
        raise
    # Under ``flask``, which makes the app before any command. A command stops on the refusal itself, but
    # ``flask --help`` lists the commands by making the app, prints any error that is not flask's own as a
    # traceback and then its help without KernelIndex's commands, exit 0: stop here, in the reason alone.
    refusal.show()
    raise SystemExit(refusal.exit_code)
