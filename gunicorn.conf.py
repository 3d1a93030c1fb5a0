"""gunicorn's settings for ``gunicorn wsgi:app`` (read from the working directory by default)."""


def post_worker_init(worker):
    """Discover the kernel plugins before the worker takes requests, so that no request pays for it
    (discovery imports torch); a failure is logged, and ``/plugins`` shows it."""
    try:
        from runners.discovery import get_registry

        get_registry()
    except Exception:  # the worker must still serve; the plugins page reports the failure
        worker.log.exception("plugin discovery failed")
