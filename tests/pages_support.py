"""Helpers shared by the page tests: an imported small database and HTML read as a person reads it."""

import html
import re

from app.models import Run

from .conftest import DATA
from .test_manifests import FNA_ID

HTMX = {"HX-Request": "true"}


def import_small(runner, *names):
    for name in names or ("liger_small.csv",):
        result = runner.invoke(args=["import", "liger", str(DATA / name)])
        assert result.exit_code == 0, result.output


def reference_run(app) -> Run:
    with app.app_context():
        return Run.get(Run.external_id == FNA_ID)


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
