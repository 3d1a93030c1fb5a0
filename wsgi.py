"""WSGI entry point: ``flask --app wsgi ...`` and any WSGI server use ``app``."""

from app import create_app

app = create_app()
