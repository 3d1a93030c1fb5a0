"""Every kind of page at a small phone's width (360 px) and a desktop's (1280 px): nothing widens the page, the chart's
axis text stays readable, and axe-core (vendored in tests/browser/vendor, for the tests only) finds no serious or
critical accessibility violation."""

from pathlib import Path

import pytest

from app.models import Manifest, Run
from app.pages.policy import POLICY_KIND
from tests.pages_support import reference_run

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parent / "vendor" / "axe-4.14.1.min.js"
WIDTHS = (360, 1280)
CHART_VIEWBOX_WIDTH = 760
MIN_AXIS_TEXT_PX = 11


def page_paths(app) -> dict:
    """One page of each kind: home, search, a source run, a rerun, its manifest and correctness policy, a comparison,
    both reference families, ..."""
    source = reference_run(app)
    with app.app_context():
        rerun = Run.get(Run.source == "kernelindex")
        policy = Manifest.get(Manifest.kind == POLICY_KIND)
    return {
        "home": "/", "search": "/search?q=attention", "run": f"/runs/{source.id}", "rerun": f"/runs/{rerun.id}",
        "manifest": f"/runs/{rerun.id}/manifest", "policy": f"/policies/{policy.digest.removeprefix('sha256:')}",
        "comparison": f"/comparisons/{source.comparison_key_id.removeprefix('sha256:')}",
        "family fna": "/families/fused_neighborhood_attention", "family mta": "/families/multi_token_attention",
        "fastest": "/families/fused_neighborhood_attention?table=fastest", "plugins": "/plugins",
        "evidence": "/about/evidence", "reruns": "/reruns", "sign-in": "/maintainers/sign-in", "not found": "/no-such-page",
    }


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def sized_page(request, chromium):
    context = chromium.new_context(viewport={"width": request.param, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def overflow(page) -> int:
    """How many CSS pixels the document is wider than the viewport."""
    return page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_no_page_is_wider_than_the_screen(with_reruns, sized_page):
    base, app = with_reruns
    wider = {}
    for name, path in page_paths(app).items():
        sized_page.goto(base + path)
        if overflow(sized_page) > 0:
            wider[name] = overflow(sized_page)
    assert wider == {}


def test_chart_axis_text_is_at_least_11_px(with_reruns, sized_page):
    base, _ = with_reruns
    sized_page.goto(base + "/families/fused_neighborhood_attention")
    sizes = sized_page.evaluate("""(viewBoxWidth) => {
        const svg = document.querySelector('#family-chart svg');
        const scale = svg.getBoundingClientRect().width / viewBoxWidth;
        return [...svg.querySelectorAll('.grid text, .axis-label')].map(
            (text) => parseFloat(getComputedStyle(text).fontSize) * scale);
    }""", CHART_VIEWBOX_WIDTH)
    assert sizes and min(sizes) >= MIN_AXIS_TEXT_PX, sizes


def test_raw_samples_axis_text_is_at_least_11_px(with_reruns, sized_page):
    """The rerun page's plot of raw samples drew its 12-unit text at the width of a phone's screen: 4 px tall."""
    base, app = with_reruns
    sized_page.goto(base + page_paths(app)["rerun"])
    sizes = sized_page.evaluate("""() => {
        const svg = document.querySelector('svg.sample-plot');
        const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        return [...svg.querySelectorAll('text')].map((text) => parseFloat(getComputedStyle(text).fontSize) * scale);
    }""")
    assert sizes and min(sizes) >= MIN_AXIS_TEXT_PX, sizes
    assert overflow(sized_page) == 0

def serious_violations(page) -> list:
    page.evaluate(AXE.read_text())
    results = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [f"{violation['id']} ({violation['impact']}): {node['target']}"
            for violation in results["violations"] if violation["impact"] in ("serious", "critical")
            for node in violation["nodes"]]


def test_axe_finds_no_serious_or_critical_violation(with_reruns, sized_page):
    base, app = with_reruns
    found = {}
    for name, path in page_paths(app).items():
        sized_page.goto(base + path)
        violations = serious_violations(sized_page)
        if violations:
            found[name] = violations
    assert found == {}


def test_no_two_landmarks_of_a_kind_share_a_name(with_reruns, sized_page):
    """A screen reader lists landmarks by kind and name: the family table's scroll region was a second "Runs (19)"
    inside the section of that name (home's and the plugins' tables alike), and the header's search and the home and
    search pages' own were two unnamed searches."""
    base, app = with_reruns
    found = {}
    for name, path in page_paths(app).items():
        sized_page.goto(base + path)
        sized_page.evaluate(AXE.read_text())
        results = sized_page.evaluate("() => axe.run(document, {runOnly: ['landmark-unique']})")
        if results["violations"]:
            found[name] = [node["target"] for violation in results["violations"] for node in violation["nodes"]]
    assert found == {}
