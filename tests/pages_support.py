"""Helpers shared by the page and posting tests: the small database's runs, posting with a CSRF token,
and HTML read as a person reads it."""

import html
import re

from app.models import Attestation, IssueReport, Run

from .test_manifests import FNA_ID

HTMX = {"HX-Request": "true"}
TOKEN = "test-csrf-token"


def reference_run(app) -> Run:
    """The reference run: fused neighborhood attention, torch, forward, H100 80GB HBM3, 84.6 ms, rank 2."""
    with app.app_context():
        return Run.get(Run.external_id == FNA_ID)


def find_run(app, **fields) -> Run:
    """The run whose fields have these values; callers name fields that only one run has."""
    with app.app_context():
        return Run.get(*[getattr(Run, name) == value for name, value in fields.items()])


def with_token(client, token=TOKEN):
    """``client``, its session now holding ``token`` as its CSRF token."""
    with client.session_transaction() as session:
        session["_csrf_token"] = token
    return client


def token_of(client, path="/maintainers/sign-in") -> str:
    """The CSRF token rendered in the form on ``path``."""
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).get_data(as_text=True)).group(1)


def note(body="Seen the same on my H100.", **overrides) -> dict:
    """The form of a note, carrying ``TOKEN``."""
    return {"csrf_token": TOKEN, "kind": "note", "body": body, **overrides}


def counts(app) -> tuple[int, int]:
    """How many attestations and issue reports are stored."""
    with app.app_context():
        return Attestation.select().count(), IssueReport.select().count()


def text_of(markup: str) -> str:
    """The page's words in document order, one block per line, tags and scripts dropped."""
    markup = re.sub(r"<(script|style|title)\b.*?</\1>", "", markup, flags=re.S)
    markup = re.sub(r"</(p|h1|h2|h3|dd|dt|li|tr|summary|pre|td|th|legend|label|option|a)>", "\n", markup)
    markup = re.sub(r"<[^>]+>", "", markup)
    lines = (line.strip() for line in html.unescape(markup).splitlines())
    return "\n".join(line for line in lines if line)


def in_order(text: str, *needles) -> bool:
    """Whether every needle occurs in ``text``, each after the one before."""
    position = 0
    for needle in needles:
        found = text.find(needle, position)
        if found < 0:
            raise AssertionError(f"{needle!r} not found after position {position}")
        position = found + len(needle)
    return True
