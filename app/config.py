"""Configuration defaults; the instance file ``config.py`` and ``KERNELINDEX_*`` variables override them."""

SECRET_KEY = None  # required: KERNELINDEX_SECRET_KEY (``make serve`` keeps one in instance/secret_key)
PUBLIC_URL = None  # e.g. https://kernelindex.example: absolute URLs (API links, permalinks) use it, never Host:
TRUSTED_HOSTS = None  # Host: values served (others get 400); defaults to PUBLIC_URL's host
PROXIES = 0  # reverse proxies in front of the app: trust that many X-Forwarded-For/-Proto hops
DATABASE_URL = None  # None: SQLite file ``kernelindex.sqlite3`` in the instance folder
SQLITE_BUSY_TIMEOUT_SECONDS = 10  # how long a SQLite transaction waits for the write lock
DATABASE_MAX_CONNECTIONS = 20  # PostgreSQL connections pooled per process
DATABASE_STALE_TIMEOUT_SECONDS = 300  # a pooled connection idle longer is closed and replaced
DATABASE_POOL_WAIT_SECONDS = 10  # how long a request waits for a free pooled connection (then 503)
IMPORT_LOCK_WAIT_SECONDS = 600  # how long ``flask import liger`` waits for a running import to finish
API_PAGE_SIZE = 50  # runs per page of /api/v1/runs unless ``per_page`` asks for another size
API_MAX_PAGE_SIZE = 500
FAMILY_PAGE_SIZE = 50  # table rows per family page
SEARCH_PAGE_SIZE = 20
MODERATION_PAGE_SIZE = 50  # attestations per page of the maintainers' list
MAX_CONTENT_LENGTH = 64 * 1024  # bytes of any request body; notes and reproductions are small
POSTS_PER_MINUTE = 10  # per client, for notes, reproductions and issue reports
IMPORT_TIMEOUT_SECONDS = 60  # for importer URLs
SIGN_IN_ATTEMPTS_PER_MINUTE = 5  # per client address, counted in the database (shared by every worker)
SIGN_IN_ATTEMPTS_PER_ACCOUNT = 10  # per username in SIGN_IN_ACCOUNT_WINDOW_SECONDS, from any address
SIGN_IN_ACCOUNT_WINDOW_SECONDS = 15 * 60
RERUN_MAX_CONTENT_LENGTH = 64 * 1024 * 1024  # a rerun batch carries every raw sample
RERUN_CLOCK_SKEW_SECONDS = 300  # how far a rerun's observedAt may lie ahead of the server's clock (or before its token)
