"""A maintainer invalidates a reported run from the issue reports page, then reinstates it, in a real headless
Chromium: both forms post, a refused reason comes back beside its form with what was typed, and the run page shows
every decision and the run's rank again."""

import re

import pytest
from playwright.sync_api import expect

from app.models import IssueReport
from tests.pages_support import reference_run

from .conftest import MAINTAINER_PASSWORD, serving, signed_in_on


@pytest.fixture
def reported_run(small_app, runner):
    """``(base_url, run_id, report_id)``: a live server over a fresh small database, a maintainer alice, and an issue
    report on the reference run."""
    assert runner.invoke(args=["users", "create", "alice", "--password", MAINTAINER_PASSWORD]).exit_code == 0
    run_id = reference_run(small_app).id
    with small_app.app_context():
        report = IssueReport.create(run=run_id, reason="wrong-figure")
    with serving(small_app) as base:
        yield base, run_id, report.id


def test_a_maintainer_invalidates_a_reported_run_and_reinstates_it(reported_run, page):
    base, run_id, report_id = reported_run
    page.goto(f"{base}/runs/{run_id}")
    rank_before = page.locator("p.rank").inner_text()
    signed_in_on(page, base, "/maintainers/")
    report = page.locator(f"#issue-{report_id}")

    report.get_by_label("Why the result cannot be trusted").fill("figures copied\nfrom another GPU")
    report.get_by_role("button", name=f"Invalidate run {run_id}").click()
    page.wait_for_url(f"{base}/maintainers/")
    expect(report.locator(".notice.invalidated")).to_contain_text("figures copied")
    expect(report.get_by_role("button", name=f"Invalidate run {run_id}")).to_have_count(0)

    reason = report.get_by_label("Why the result can be trusted after all")
    reason.fill("\u200b\u2060")  # draws nothing: the browser sends it, the server refuses it
    report.get_by_role("button", name=f"Reinstate run {run_id}").click()
    expect(report.locator(".field-error")).to_have_text("say why the result can be trusted after all")
    expect(reason).to_have_value("\u200b\u2060")
    expect(reason).to_have_attribute("aria-invalid", "true")
    expect(reason).to_be_focused()
    expect(report.locator(".notice.invalidated")).to_be_visible()  # nothing recorded

    reason.fill("the figures were this GPU's after all")
    report.get_by_role("button", name=f"Reinstate run {run_id}").click()
    page.wait_for_url(f"{base}/maintainers/")
    expect(report.locator(".notice.invalidated")).to_have_count(0)
    expect(report.get_by_role("button", name=f"Invalidate run {run_id}")).to_be_visible()

    page.goto(f"{base}/runs/{run_id}")
    expect(page.locator(".notice.invalidated")).to_have_count(0)
    expect(page.locator("p.rank")).to_have_text(rank_before)
    decisions = page.locator("section[aria-labelledby=invalidation-history-h] li")
    expect(decisions).to_have_count(2)
    expect(decisions.nth(0)).to_have_text(re.compile(r"^Invalidated on .+ by alice: figures copied\nfrom another GPU$"))
    expect(decisions.nth(1)).to_have_text(
        re.compile(r"^Reinstated on .+ by alice: the figures were this GPU's after all$"))
