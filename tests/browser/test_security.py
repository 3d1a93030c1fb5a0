"""The Content-Security-Policy in headless Chromium: every main page, its HTMX partials and a form's refusal
run without one violation (no inline script, ``style=`` or ``hx-on`` slipped back into a template)."""

import pytest

from tests.pages_support import reference_run

from .conftest import mark_page, serving

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

PASSWORD = "violet kettle orbit 42"

# Runs before any page script: keeps every violation the browser reports, for the test to read.
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.cspViolations.push(event.violatedDirective + " " + (event.blockedURI || "inline") + " " + event.sourceFile
                            + ":" + event.lineNumber);
});
"""


@pytest.fixture
def server(small_app, runner):
    """A live server over a fresh small database with the maintainer account alice."""
    assert runner.invoke(args=["users", "create", "alice", "--password", PASSWORD]).exit_code == 0
    with serving(small_app) as base:
        yield base, small_app


@pytest.fixture
def watched(page):
    """The page, recording CSP violations from DOM events and from console messages."""
    console = []
    page.on("console", lambda message: console.append(message.text))
    page.add_init_script(RECORD_VIOLATIONS)
    yield page, console


def violations(page, console) -> list[str]:
    return page.evaluate("() => window.cspViolations") + [
        text for text in console if "Content Security Policy" in text or "Refused to" in text]


def test_main_pages_and_their_partials_pass_the_policy(server, watched):
    base, app = server
    page, console = watched
    run = reference_run(app)
    page.goto(f"{base}/runs/{run.id}")
    mark_page(page)
    page.get_by_role("link", name="Show manifest").click()
    expect(page.locator("#manifest pre")).to_contain_text('"kind": "BenchmarkRun"')
    page.locator("summary", has_text="Add a note").click()  # the form is collapsed until asked for
    page.fill("#note-body", "Seen the same on my H100.")
    page.click("button:has-text('Post note')")
    expect(page.locator(".attestation-note")).to_have_count(1)
    page.locator("summary", has_text="Add a reproduction").click()
    page.fill("#reproduction-median", "fast")  # refused (422): the refusal is swapped in by kernelindex.js
    page.select_option("#reproduction-unit", "ms")
    page.fill("#reproduction-gpu", "NVIDIA H100 80GB HBM3")
    page.fill("#reproduction-software", "torch 2.6.0")
    page.fill("#reproduction-link", "https://example.org/log.txt")
    page.click("button:has-text('Post reproduction')")
    expect(page.locator("#reproduction-median-error")).to_be_visible()
    page.select_option("#issue-reason", "wrong-figure")
    page.click("button:has-text('Send report')")
    expect(page.locator(".issue-count")).to_have_text("1 open report on this run.")
    page.get_by_role("link", name="Compare with #1 →").click()
    page.wait_for_load_state()
    expect(page.locator("main h1")).to_be_visible()
    for path in ("/", "/plugins", f"/families/{run.kernel_id}?metric=speed", "/search?q=torch", "/reruns"):
        page.goto(base + path)
        mark_page(page)
    page.goto(f"{base}/families/{run.kernel_id}")
    mark_page(page)
    page.select_option("#f-implementation", index=1)  # an HTMX filter swap
    page.wait_for_load_state("networkidle")
    assert violations(page, console) == []


def test_maintainer_pages_pass_the_policy(server, watched):
    base, app = server
    page, console = watched
    page.goto(f"{base}/maintainers/sign-in")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base}/maintainers/")
    page.goto(f"{base}/maintainers/attestations")
    page.goto(f"{base}/maintainers/?state=resolved")
    assert violations(page, console) == []


def test_an_inline_script_would_be_reported(server, watched):
    """The recorder works: a script the policy forbids is reported and does not run."""
    base, _ = server
    page, console = watched
    page.goto(f"{base}/plugins")
    page.evaluate("""() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';
                             document.body.appendChild(s); }""")
    page.wait_for_function("() => window.cspViolations.length > 0")
    assert page.evaluate("() => window.ran") is None
    assert any("script-src" in violation for violation in violations(page, console))
