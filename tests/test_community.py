"""Notes, reproductions and issue reports posted on a run (app/views/community.py)."""

import io
import re
from datetime import timedelta

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from werkzeug.datastructures import MultiDict

from app.models import Attestation, ComparisonGroup, IssueReport, Run, utcnow

from .pages_support import HTMX, TOKEN, counts, find_run, note, reference_run, with_token

EXPLANATION = "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does."


@pytest.fixture
def poster(small_app):
    """A client whose session holds a known CSRF token."""
    return with_token(small_app.test_client())


def reproduction(**overrides) -> dict:
    form = {"csrf_token": TOKEN, "kind": "reproduction", "median": "88", "unit": "ms", "p20": "87.5", "p80": "88.4",
            "gpu": "NVIDIA H100 80GB HBM3", "software": "torch 2.6.0, triton 3.2.0, CUDA 12.4",
            "link": "https://example.org/logs/fna-h100.txt", "body": "Same script, ten runs."}
    form.update(overrides)
    return {name: value for name, value in form.items() if value is not None}


def field_errors(html: str) -> dict:
    return dict(re.findall(r'class="field-error" id="[a-z]+-([a-z0-9]+)-error">([^<]*)<', html))


# --- notes ---------------------------------------------------------------------------------------

def test_note_posted_with_htmx_comes_back_as_the_updated_section(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=note("Seen **the same** on my H100."), headers=HTMX)
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert html.lstrip().startswith('<div id="attestations-body"')  # a fragment, not a page
    assert "<html" not in html
    assert EXPLANATION in html
    assert "<strong>the same</strong>" in html
    assert "No attestations yet." not in html
    assert "Your note is posted." in html
    assert "HX-Request" in response.headers["Vary"]
    with small_app.app_context():
        stored = Attestation.get()
        assert (stored.run_id, stored.kind, stored.body) == (run.id, "note", "Seen **the same** on my H100.")
        assert stored.median is None and stored.hidden is False


def test_note_without_javascript_redirects_back_to_the_run_page(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=note(author="Ada"))
    assert response.status_code == 303
    assert response.headers["Location"].endswith(f"/runs/{run.id}#attestations-body")
    with small_app.app_context():
        assert Attestation.get().author == "Ada"


def test_section_lists_notes_in_posting_order_and_says_when_there_are_none(small_app, poster):
    run = reference_run(small_app)
    with small_app.test_request_context():
        from flask import render_template

        from app.pages.community import attestation_section
        empty = render_template("partials/_attestations.html", attestation_section=attestation_section(run))
    assert "No attestations yet." in empty and EXPLANATION in empty
    assert 'hx-post="/runs/%s/attestations"' % run.id in empty and 'action="/runs/%s/attestations"' % run.id in empty
    for label in ("note-body", "reproduction-median", "reproduction-unit", "reproduction-gpu",
                  "reproduction-software", "reproduction-link", "reproduction-p20", "reproduction-p80"):
        assert f'<label for="{label}"' in empty and f'id="{label}"' in empty  # every field has a label
    poster.post(f"/runs/{run.id}/attestations", data=note("first"), headers=HTMX)
    html = poster.post(f"/runs/{run.id}/attestations", data=note("second"), headers=HTMX).get_data(as_text=True)
    assert html.index("<p>first</p>") < html.index("<p>second</p>")


@pytest.mark.parametrize("body, message", [
    ("", "Write the note (it is empty)."),
    ("   \r\n  ", "Write the note (it is empty)."),
    ("\u200b", "Write the note (it is empty)."),  # invisible characters alone show nothing
    ("\ufeff \u2060", "Write the note (it is empty)."),
    ("x" * 4001, "Keep the text to 4000 characters."),
    ("null \x00 byte", "Remove the control characters"),
])
def test_invalid_note_is_refused_inline_and_stores_nothing(small_app, poster, body, message):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=note(body), headers=HTMX)
    assert response.status_code == 422
    assert message in field_errors(response.get_data(as_text=True))["body"]
    assert counts(small_app) == (0, 0)


def test_an_invisible_author_name_is_no_name(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data={**note("measured"), "author": "\u200b\u2060"},
                           headers=HTMX)
    assert response.status_code == 200 and "Anonymous" in response.get_data(as_text=True)
    with small_app.app_context():
        assert [a.author for a in Attestation.select()] == [None]


def test_note_of_exactly_4000_characters_is_accepted_and_crlf_counts_once(small_app, poster):
    run = reference_run(small_app)
    assert poster.post(f"/runs/{run.id}/attestations", data=note("y" * 4000), headers=HTMX).status_code == 200
    assert poster.post(f"/runs/{run.id}/attestations", data=note("ab\r\n" * 1333), headers=HTMX).status_code == 200
    with small_app.app_context():
        assert sorted(len(a.body) for a in Attestation.select()) == [3998, 4000]  # trailing newline trimmed


def test_note_ignores_reproduction_fields(small_app, poster):
    run = reference_run(small_app)
    poster.post(f"/runs/{run.id}/attestations", data=note(median="1", unit="ms", gpu="X"), headers=HTMX)
    with small_app.app_context():
        stored = Attestation.get()
        assert (stored.median, stored.unit, stored.gpu) == (None, None, None)


# --- reproductions ---------------------------------------------------------------------------

@pytest.mark.parametrize("median, unit, ratio", [
    ("88", "ms", "1.04× the run&#39;s median"),
    ("0.088", "s", "1.04× the run&#39;s median"),
    ("88000", "µs", "1.04× the run&#39;s median"),
    ("42275104.5", "ns", "0.5× the run&#39;s median"),
])
def test_reproduction_is_shown_with_its_ratio_to_the_run_in_any_time_unit(small_app, poster, median, unit, ratio):
    run = reference_run(small_app)  # median 84 550 209 ns
    response = poster.post(f"/runs/{run.id}/attestations",
                           data=reproduction(median=median, unit=unit, p20=None, p80=None), headers=HTMX)
    assert response.status_code == 200, response.get_data(as_text=True)
    html = response.get_data(as_text=True)
    assert ratio in html
    assert "NVIDIA H100 80GB HBM3" in html and "torch 2.6.0, triton 3.2.0, CUDA 12.4" in html
    assert '<a href="https://example.org/logs/fna-h100.txt" rel="nofollow noopener ugc">' in html
    with small_app.app_context():
        stored = Attestation.get()
        assert stored.median == float(median) and stored.unit == {"µs": "us"}.get(unit, unit)


def test_reproduction_stores_and_shows_its_spread(small_app, poster):
    run = reference_run(small_app)
    html = poster.post(f"/runs/{run.id}/attestations", data=reproduction(), headers=HTMX).get_data(as_text=True)
    assert "88 ms" in html and "p20 87.5 ms · p80 88.4 ms" in html
    with small_app.app_context():
        stored = Attestation.get()
        assert (stored.p20, stored.median, stored.p80) == (87.5, 88.0, 88.4)


def test_reproduction_of_a_memory_run_takes_memory_units(small_app, poster):
    run = find_run(small_app, metric="memory")  # 52.5 MB, of 2**20 bytes: a GB is 1024 of them
    ok = poster.post(f"/runs/{run.id}/attestations", data=reproduction(median="0.1025390625", unit="GB", p20=None,
                                                                     p80=None),
                     headers=HTMX)
    assert ok.status_code == 200 and "2× the run&#39;s median" in ok.get_data(as_text=True)
    wrong = poster.post(f"/runs/{run.id}/attestations", data=reproduction(unit="ms"), headers=HTMX)
    assert wrong.status_code == 422
    assert field_errors(wrong.get_data(as_text=True))["unit"] == "This run measures memory; choose MB or GB."
    huge = poster.post(f"/runs/{run.id}/attestations", data=reproduction(median="2e6", unit="GB", p20=None, p80=None),
                       headers=HTMX)
    assert field_errors(huge.get_data(as_text=True))["median"] == "Give a memory from 1 byte to 1 PB."
    assert counts(small_app) == (1, 0)


def test_latency_run_refuses_memory_units(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=reproduction(unit="MB"), headers=HTMX)
    assert response.status_code == 422
    assert "This run measures time" in field_errors(response.get_data(as_text=True))["unit"]


@pytest.mark.parametrize("field, value, message", [
    ("median", "fast", "Enter the median as a number"),
    ("median", "8,8", "Enter the median as a number"),
    ("median", "1_000", "Enter the median as a number"),
    ("median", "\u0661\u0662", "Enter the median as a number"),  # Arabic-Indic digits, which float() reads as 12
    ("p80", "\uff19\uff10", "Enter p80 as a number"),  # fullwidth digits
    ("median", "nan", "finite number"),
    ("median", "1e400", "finite number"),
    ("median", "0", "The median must be above 0."),
    ("median", "-3", "The median must be above 0."),
    ("median", "1e12", "Give a time from 1 ps to one day."),
    ("median", "5e-324", "Give a time from 1 ps to one day."),
    ("p80", "1e300", "Give a time from 1 ps to one day."),
    ("p20", "0", "Give a time from 1 ps to one day."),  # as 1e-20 is: it passed as "p20 0 ms"
    ("p20", "-0", "Give a time from 1 ps to one day."),
    ("p20", "abc", "Enter p20 as a number"),
    ("p20", "90", "p20 cannot be above the median."),
    ("p80", "80", "p80 cannot be below the median."),
    ("unit", "furlongs", "Choose a unit"),
    ("link", "javascript:alert(1)", "Enter a full http:// or https:// address."),
    ("link", "ftp://example.org/x", "Enter a full http:// or https:// address."),
    ("link", "example.org/logs", "Enter a full http:// or https:// address."),
    ("gpu", "G" * 121, "Keep the GPU name to 120 characters."),
    ("software", "s" * 501, "Keep the versions to 500 characters."),
    ("author", "a" * 81, "Keep the name to 80 characters."),
])
def test_malformed_reproduction_gets_an_inline_message_and_stores_nothing(small_app, poster, field, value, message):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=reproduction(**{field: value}), headers=HTMX)
    assert response.status_code == 422
    html = response.get_data(as_text=True)
    assert message in field_errors(html)[field]
    assert f'aria-describedby="reproduction-{field}-error"' in html
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("missing, message", [
    ("median", "Give the median you measured."),
    ("gpu", "Name the GPU you measured on."),
    ("software", "Give the software versions you ran"),
    ("link", "Link to your script, log or results"),
])
def test_reproduction_needs_median_gpu_software_and_link(small_app, poster, missing, message):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=reproduction(**{missing: ""}), headers=HTMX)
    assert response.status_code == 422
    assert message in field_errors(response.get_data(as_text=True))[missing]
    assert counts(small_app) == (0, 0)


def test_a_reproduction_with_several_problems_hears_of_every_one_in_one_answer(small_app, poster):
    """What each field's own check finds and what needs the whole form (an empty required field, a unit this run
    does not measure in) come back together; a field that failed its own check is not also called empty."""
    run = find_run(small_app, metric="memory")
    response = poster.post(f"/runs/{run.id}/attestations", headers=HTMX,
                           data=reproduction(median="fast", unit="ms", gpu="", link="ftp://x", p20=None, p80=None))
    assert response.status_code == 422
    assert field_errors(response.get_data(as_text=True)) == {
        "median": "Enter the median as a number, e.g. 84.6.",
        "unit": "This run measures memory; choose MB or GB.",
        "gpu": "Name the GPU you measured on.",
        "link": "Enter a full http:// or https:// address.",
    }
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("field", ["author", "gpu", "software", "body"])
@pytest.mark.parametrize("control", ["\u202e", "\u2066", "\u202a"])
def test_text_direction_controls_are_refused_where_readers_post(small_app, poster, field, control):
    """An override turns the text after it around on the page: a GPU or an author could read as another."""
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", headers=HTMX,
                           data=reproduction(**{field: f"H100{control}3MBH"}))
    assert response.status_code == 422
    assert "text-direction controls" in field_errors(response.get_data(as_text=True))[field]
    report = poster.post(f"/runs/{run.id}/issues", headers=HTMX,
                         data={"csrf_token": TOKEN, "reason": "other", "body": f"see{control}evil"})
    assert report.status_code == 422 and "text-direction controls" in report.get_data(as_text=True)
    assert counts(small_app) == (0, 0)


def test_right_to_left_text_needs_no_direction_control_and_is_kept(small_app, poster):
    run = reference_run(small_app)
    text = "\u05e0\u05de\u05d3\u05d3 \u05e2\u05dc H100 \u2014 \u0642\u064a\u0633 \u0645\u0637\u0627\u0628\u0642"
    response = poster.post(f"/runs/{run.id}/attestations", data=note(text, author="\u05d3\u05e0\u05d4"), headers=HTMX)
    assert response.status_code == 200
    with small_app.app_context():
        assert (Attestation.get().body, Attestation.get().author) == (text, "\u05d3\u05e0\u05d4")


def test_refused_form_keeps_what_the_reader_typed(small_app, poster):
    run = reference_run(small_app)
    html = poster.post(f"/runs/{run.id}/attestations", data=reproduction(link="not a link", gpu="RTX <b>4090</b>"),
                       headers=HTMX).get_data(as_text=True)
    assert 'value="RTX &lt;b&gt;4090&lt;/b&gt;"' in html
    assert 'value="88"' in html and '<option value="ms" selected>' in html
    assert TOKEN not in re.sub(r'name="csrf_token" value="[^"]*"', "", html)  # the token is only in its field


def test_refused_post_without_javascript_rerenders_the_section_as_a_page(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=reproduction(median="fast"))
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "<html" in html and "Nothing was saved" in html
    assert "Enter the median as a number" in field_errors(html)["median"]
    assert f'href="/runs/{run.id}#attestations-body"' in html
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("path, section", [("attestations", "attestations-body"), ("issues", "report-issue-body")])
def test_a_refused_posts_address_asked_for_as_a_page_is_its_section_on_the_run_page(small_app, poster, path,
                                                                                     section):
    """Reloaded, bookmarked, or the footer's sign-in link followed from the refused post's page: no 405."""
    run = reference_run(small_app)
    refused = poster.post(f"/runs/{run.id}/{path}", data={"csrf_token": TOKEN}).get_data(as_text=True)
    sign_in = re.search(r'href="(/maintainers/sign-in\?next=[^"]+)"', refused).group(1)
    assert sign_in.endswith(f"next=/runs/{run.id}/{path}")
    response = poster.get(f"/runs/{run.id}/{path}")
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/runs/{run.id}#{section}")
    assert poster.get(f"/runs/nosuchrun/{path}").status_code == 404
    assert counts(small_app) == (0, 0)


def refusal_alert(html: str) -> str:
    """The message in the attestation form's alert slot, "" when it is empty."""
    slot = re.search(r'id="attestations-body-alert"[^>]*>(.*?)</div>', html, re.S).group(1)
    return re.sub(r"<[^>]+>", "", slot).strip()


def test_a_stale_token_without_javascript_reshows_the_form_with_the_input_and_why(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=reproduction(csrf_token="stale", gpu="RTX 4090"))
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "security token is missing or out of date" in refusal_alert(html)
    assert 'value="RTX 4090"' in html and 'value="88"' in html and "Same script, ten runs." in html
    assert '<details class="add-attestation" open>\n  <summary>Add a reproduction' in html
    assert f'name="csrf_token" value="{TOKEN}"' in html  # the form carries the session's token: posting again works
    assert f'href="/runs/{run.id}#attestations-body"' in html and "Your note or reproduction was not posted" in html
    assert counts(small_app) == (0, 0)


def test_a_rate_limited_post_without_javascript_keeps_its_status_and_the_input(small_app, poster):
    small_app.config["POSTS_PER_MINUTE"] = 1
    run = reference_run(small_app)
    assert poster.post(f"/runs/{run.id}/attestations", data=note("first")).status_code == 303
    refused = poster.post(f"/runs/{run.id}/attestations", data=note("second, typed with care"))
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    html = refused.get_data(as_text=True)
    assert "at most 1 a minute" in refusal_alert(html) and ">second, typed with care</textarea>" in html
    report = poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, "reason": "other", "body": "kept"})
    assert report.status_code == 429
    assert ">kept</textarea>" in report.get_data(as_text=True)
    assert '<option value="other" selected>' in report.get_data(as_text=True)
    assert counts(small_app) == (1, 0)


@pytest.mark.parametrize("path, form, section", [("attestations", note("typed with care"), "attestations-body"),
                                                  ("issues", {"csrf_token": TOKEN, "reason": "duplicate"},
                                                   "report-issue-body")])
def test_a_post_the_busy_database_refuses_says_so_above_its_form(small_app, poster, monkeypatch, path, form, section):
    """With HTMX it was put in the page's alert slot, which swaps in no 503: the reader saw nothing happen."""
    import peewee

    from app import locks
    from app.views import community

    def busy(run_id):
        raise peewee.OperationalError("database is locked")

    monkeypatch.setattr(community, "lock_run_posts", busy)
    run = reference_run(small_app)
    page = poster.get(f"/runs/{run.id}").get_data(as_text=True)
    statuses = re.search(rf'<div id="{section}" [^>]*data-swap-statuses="([^"]+)"', page).group(1).split(",")
    response = poster.post(f"/runs/{run.id}/{path}", data=form, headers=HTMX)
    assert response.status_code == 503 and "503" in statuses and response.headers["Retry-After"]
    assert response.headers["HX-Retarget"] == f"#{section}-alert"
    assert locks.DatabaseBusy.description in response.get_data(as_text=True)
    plain = poster.post(f"/runs/{run.id}/{path}", data=form)
    assert plain.status_code == 503 and locks.DatabaseBusy.description in plain.get_data(as_text=True)
    assert counts(small_app) == (0, 0)


def test_a_post_too_large_to_read_without_javascript_says_so_beside_the_form_and_links_back(small_app, poster):
    run = reference_run(small_app)
    limit = small_app.config["MAX_CONTENT_LENGTH"]
    response = poster.post(f"/runs/{run.id}/attestations", data=note("x" * (limit + 1)))
    assert response.status_code == 413
    html = response.get_data(as_text=True)
    assert "The post is too large" in refusal_alert(html) and 'id="note-body"' in html
    assert f'href="/runs/{run.id}#attestations-body"' in html
    assert counts(small_app) == (0, 0)


def test_a_post_sent_in_chunks_past_the_limit_is_413_not_read_cut(small_app, poster):
    """Without a Content-Length, Werkzeug reads a body up to the limit and stops without a word: the form read cut
    there lost its last fields (here the note's body, refused as missing)."""
    run = reference_run(small_app)
    limit = small_app.config["MAX_CONTENT_LENGTH"]
    head = f"csrf_token={TOKEN}&kind=note&padding=".encode()
    for size, status in ((limit - 1, 201), (limit + 1, 413)):
        tail = b"&body=kept+whole"
        body = head + b"x" * (size - len(head) - len(tail)) + tail
        response = poster.post(f"/runs/{run.id}/attestations", input_stream=io.BytesIO(body),
                               content_type="application/x-www-form-urlencoded",
                               headers={"Transfer-Encoding": "chunked", "Accept": "application/json"},
                               environ_overrides={"wsgi.input_terminated": True})  # as gunicorn and flask run set it
        assert response.status_code == status and len(body) == size, response.get_data(as_text=True)[:300]
    assert "The post is too large" in response.get_json()["error"]
    assert counts(small_app) == (1, 0)


@pytest.mark.parametrize("path, form", [
    ("attestations", [("csrf_token", TOKEN), ("kind", "note"), ("body", "first"), ("body", "second")]),
    ("attestations", [("csrf_token", TOKEN), ("kind", "reproduction"), ("kind", "note"), ("body", "which?")]),
    ("issues", [("csrf_token", TOKEN), ("reason", "other"), ("reason", "duplicate"), ("body", "which?")]),
])
def test_a_field_sent_twice_is_refused_and_stores_nothing(small_app, poster, path, form):
    """No page's form sends a field twice; storing the first value would drop the second without a word."""
    run = reference_run(small_app)
    refused = poster.post(f"/runs/{run.id}/{path}", data=MultiDict(form), headers={"Accept": "application/json"})
    assert refused.status_code == 400 and f"sends {form[2][0]} more than once" in refused.json["error"]
    html = poster.post(f"/runs/{run.id}/{path}", data=MultiDict(form), headers=HTMX).get_data(as_text=True)
    assert "more than once" in html
    assert counts(small_app) == (0, 0)


def test_json_clients_get_201_or_422_with_details(small_app, poster):
    run = reference_run(small_app)
    accept = {"Accept": "application/json"}
    created = poster.post(f"/runs/{run.id}/attestations", data=reproduction(), headers=accept)
    assert created.status_code == 201
    assert created.json["kind"] == "reproduction" and created.json["median"] == 88.0
    refused = poster.post(f"/runs/{run.id}/attestations", data=reproduction(median="x"), headers=accept)
    assert refused.status_code == 422 and "median" in refused.json["details"]


@pytest.mark.parametrize("kind", ["", "review", "NOTE"])
def test_unknown_kind_is_refused(small_app, poster, kind):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/attestations", data=note(kind=kind), headers=HTMX)
    assert response.status_code == 422
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("kind", [None, "", "review"])
@pytest.mark.parametrize("headers, status", [(HTMX, 422), ({}, 400)])
def test_a_post_without_a_known_kind_says_to_choose_one(small_app, poster, kind, headers, status):
    """A form that sends no kind at all (not only an unknown one) is told what to fix, not just refused."""
    run = reference_run(small_app)
    form = {name: value for name, value in note(kind=kind).items() if value is not None}
    response = poster.post(f"/runs/{run.id}/attestations", data=form, headers=headers)
    assert response.status_code == status
    assert "Choose a note or a reproduction." in response.get_data(as_text=True)
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("path", ["/runs/nosuchrun/attestations", "/runs/nosuchrun/issues"])
def test_posting_on_an_unknown_run_is_404_and_stores_nothing(small_app, poster, path):
    response = poster.post(path, data={**note(), "reason": "other"})
    assert response.status_code == 404
    assert counts(small_app) == (0, 0)


# --- the run is never changed ------------------------------------------------------------------

def snapshot(app) -> dict:
    with app.app_context():
        runs = {r.id: (r.rank, r.evidence, r.status, r.median, r.comparison_key_id, r.superseded_by_id)
                for r in Run.select()}
        groups = {g.key: (g.size, g.leader) for g in ComparisonGroup.select()}
    return {"runs": runs, "groups": groups}


def test_attestations_and_reports_never_change_evidence_or_rank(small_app, poster):
    run = reference_run(small_app)
    assert run.rank == 2 and run.evidence == "source-reported"
    before, api_before = snapshot(small_app), poster.get(f"/api/v1/runs/{run.id}").json
    # A reproduction that would beat #1 by far, one that agrees, a note and an issue report.
    poster.post(f"/runs/{run.id}/attestations", data=reproduction(median="0.001", p20=None, p80=None), headers=HTMX)
    poster.post(f"/runs/{run.id}/attestations", data=reproduction(), headers=HTMX)
    poster.post(f"/runs/{run.id}/attestations", data=note("KernelIndex should rerun this"), headers=HTMX)
    poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, "reason": "wrong-figure"}, headers=HTMX)
    assert counts(small_app) == (3, 1)
    assert snapshot(small_app) == before
    api_after = poster.get(f"/api/v1/runs/{run.id}").json
    assert (api_after["evidence"], api_after["comparison"]) == (api_before["evidence"], api_before["comparison"])
    assert api_after["comparison"]["rank"] == 2
    assert len(api_after["attestations"]) == 3


# --- hidden attestations -----------------------------------------------------------------------

def test_hidden_attestations_leave_the_section_and_the_json_api(small_app, poster):
    run = reference_run(small_app)
    poster.post(f"/runs/{run.id}/attestations", data=note("spam spam spam"), headers=HTMX)
    with small_app.app_context():
        Attestation.update(hidden=True).execute()
    detail = poster.get(f"/api/v1/runs/{run.id}").json
    assert detail["attestations"] == []
    html = poster.post(f"/runs/{run.id}/attestations", data=note("a real note"), headers=HTMX).get_data(as_text=True)
    assert "a real note" in html and "spam spam spam" not in html
    assert [a["body"] for a in poster.get(f"/api/v1/runs/{run.id}").json["attestations"]] == ["a real note"]
    with small_app.app_context():
        assert Attestation.select().count() == 2  # hidden, not deleted


# --- issue reports -------------------------------------------------------------------------------

def test_issue_report_is_stored_and_counted(small_app, poster):
    run = reference_run(small_app)
    first = poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, "reason": "wrong-figure",
                                                       "body": "The p20 equals the median."}, headers=HTMX)
    assert first.status_code == 200
    html = first.get_data(as_text=True)
    assert html.lstrip().startswith('<div id="report-issue-body"')
    assert "1 open report on this run." in html and "Thank you" in html
    second = poster.post(f"/runs/{run.id}/issues", headers=HTMX,
                         data={"csrf_token": TOKEN, "reason": "other", "body": "Odd GPU name"})
    assert "2 open reports on this run." in second.get_data(as_text=True)
    with small_app.app_context():
        assert [(r.reason, r.resolved) for r in IssueReport.select().order_by(IssueReport.id)] == [
            ("wrong-figure", False), ("other", False)]


def test_without_javascript_the_run_page_posted_to_says_once_what_became_of_the_post(small_app, poster):
    """With JavaScript the section answering a post says 'Thank you ...' or 'sent already'; without it the redirect
    landed on the run page saying nothing, and a report, which only maintainers see, left no trace but a count."""
    run = reference_run(small_app)
    for path, data, notice in [("issues", {"csrf_token": TOKEN, "reason": "duplicate"}, "Thank you: the maintainers"),
                               ("issues", {"csrf_token": TOKEN, "reason": "duplicate"}, "Your report is sent already"),
                               ("attestations", note(author="Ada"), "Your note is posted."),
                               ("attestations", note(author="Ada"), "Your note is posted already")]:
        landed = poster.post(f"/runs/{run.id}/{path}", data=data, follow_redirects=True)
        assert landed.status_code == 200 and notice in landed.get_data(as_text=True), notice
    reloaded = poster.get(f"/runs/{run.id}").get_data(as_text=True)
    assert "Your note is posted" not in reloaded and "Your report is sent" not in reloaded
    assert counts(small_app) == (1, 1)


def test_issue_report_without_javascript_redirects_to_the_run_page(small_app, poster):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, "reason": "duplicate"})
    assert response.status_code == 303
    assert response.headers["Location"].endswith(f"/runs/{run.id}#report-issue-body")
    assert counts(small_app) == (0, 1)


@pytest.mark.parametrize("form, field, message", [
    ({}, "reason", "Choose what is wrong."),
    ({"reason": "it is bad"}, "reason", "Choose what is wrong."),
    ({"reason": "other"}, "body", "Describe the problem."),
    ({"reason": "other", "body": "\u200b"}, "body", "Describe the problem."),
    ({"reason": "other", "body": "z" * 4001}, "body", "Keep the description to 4000 characters."),
])
def test_invalid_issue_report_is_refused_inline(small_app, poster, form, field, message):
    run = reference_run(small_app)
    response = poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, **form}, headers=HTMX)
    assert response.status_code == 422
    html = response.get_data(as_text=True)
    assert re.search(rf'id="issue-{field}-error">{re.escape(message)}<', html)
    assert counts(small_app) == (0, 0)
    plain = poster.post(f"/runs/{run.id}/issues", data={"csrf_token": TOKEN, **form})
    assert plain.status_code == 400 and message in plain.get_data(as_text=True)
    assert counts(small_app) == (0, 0)


# --- a post sent twice --------------------------------------------------------------------------

JSON = {"Accept": "application/json"}


def test_a_note_sent_twice_is_stored_once_and_shown_to_the_reader(small_app, poster):
    run = reference_run(small_app)
    first = poster.post(f"/runs/{run.id}/attestations", data=note("Same here.", author="Ada"), headers=HTMX)
    again = poster.post(f"/runs/{run.id}/attestations", data=note("\r\nSame here.  \r\n", author=" Ada "), headers=HTMX)
    assert first.status_code == again.status_code == 200
    with small_app.app_context():
        [stored] = Attestation.select()
    html = again.get_data(as_text=True)
    assert f"Your note is posted already (attestation {stored.id}," in html
    assert "within 60 minutes is stored once" in html and html.count("<p>Same here.</p>") == 1
    plain = poster.post(f"/runs/{run.id}/attestations", data=note("Same here.", author="Ada"))
    assert plain.status_code == 303
    assert plain.headers["Location"].endswith(f"/runs/{run.id}#attestation-{stored.id}")  # the post stored before
    assert counts(small_app) == (1, 0)


def test_a_repeated_post_is_409_for_json_clients_naming_the_post_as_documented(small_app, poster):
    run = reference_run(small_app)
    created = poster.post(f"/runs/{run.id}/attestations", data=reproduction(), headers=JSON)
    repeated = poster.post(f"/runs/{run.id}/attestations", data=reproduction(), headers=JSON)
    assert created.status_code == 201 and repeated.status_code == 409
    body = repeated.get_json()
    assert f"Your reproduction is posted already (attestation {created.json['id']}," in body["error"]
    assert body["existing"] == created.json and body["status"] == 409
    document = poster.get("/api/openapi.json").get_json()
    response = document["paths"]["/runs/{run_id}/attestations"]["post"]["responses"]["409"]
    schema = {**response["content"]["application/json"]["schema"], "components": document["components"]}
    assert list(OAS30Validator(schema, format_checker=oas30_format_checker).iter_errors(body)) == []
    assert counts(small_app) == (1, 0)


@pytest.mark.parametrize("second", [
    note("Same here.", author="Grace"),  # another author
    note("Same here!", author="Ada"),  # other text
    reproduction(author="Ada"),  # another kind, with figures
])
def test_a_post_that_differs_is_stored(small_app, poster, second):
    run = reference_run(small_app)
    poster.post(f"/runs/{run.id}/attestations", data=note("Same here.", author="Ada"), headers=HTMX)
    assert poster.post(f"/runs/{run.id}/attestations", data=second, headers=JSON).status_code == 201
    assert counts(small_app) == (2, 0)


def test_a_repeat_after_the_window_or_on_another_run_is_a_new_post(small_app, poster):
    run = reference_run(small_app)
    other = find_run(small_app, implementation="liger")
    poster.post(f"/runs/{run.id}/attestations", data=note("Same here."), headers=HTMX)
    assert poster.post(f"/runs/{other.id}/attestations", data=note("Same here."), headers=JSON).status_code == 201
    with small_app.app_context():
        Attestation.update(created_at=utcnow() - timedelta(seconds=3601)).execute()
    assert poster.post(f"/runs/{run.id}/attestations", data=note("Same here."), headers=JSON).status_code == 201
    assert counts(small_app) == (3, 0)


def test_a_hidden_note_sent_again_stays_hidden(small_app, poster):
    run = reference_run(small_app)
    poster.post(f"/runs/{run.id}/attestations", data=note("buy cheap GPUs"), headers=HTMX)
    with small_app.app_context():
        Attestation.update(hidden=True).execute()
    again = poster.post(f"/runs/{run.id}/attestations", data=note("buy cheap GPUs"))
    assert again.headers["Location"].endswith(f"/runs/{run.id}#attestations-body")
    assert "buy cheap GPUs" not in poster.get(f"/runs/{run.id}").get_data(as_text=True)
    assert counts(small_app) == (1, 0)


def test_an_issue_report_sent_twice_is_stored_once_until_it_is_resolved(small_app, poster):
    run = reference_run(small_app)
    report = {"csrf_token": TOKEN, "reason": "wrong-figure", "body": "The p20 equals the median."}
    created = poster.post(f"/runs/{run.id}/issues", data=report, headers=JSON)
    again = poster.post(f"/runs/{run.id}/issues", data=report, headers=HTMX)
    assert again.status_code == 200 and "1 open report on this run." in again.get_data(as_text=True)
    assert f"Your report is sent already (report {created.json['id']}," in again.get_data(as_text=True)
    repeated = poster.post(f"/runs/{run.id}/issues", data=report, headers=JSON)
    assert repeated.status_code == 409 and repeated.get_json()["existing"] == created.json
    assert f"report {created.json['id']}" in repeated.get_json()["error"]
    assert counts(small_app) == (0, 1)
    with small_app.app_context():
        IssueReport.update(resolved=True).execute()
    assert poster.post(f"/runs/{run.id}/issues", data=report, headers=JSON).status_code == 201  # it is not resolved
    assert counts(small_app) == (0, 2)


@pytest.mark.parametrize("path", ["attestations", "issues"])
@pytest.mark.parametrize("content_type, body", [
    ("application/json", b'{"kind": "note", "reason": "other", "body": "Seen the same on my H100."}'),
    ("text/plain", b"kind=note&reason=other&body=Seen+the+same+on+my+H100."),
])
def test_a_post_that_is_not_a_form_is_415_and_stores_nothing(small_app, poster, path, content_type, body):
    """A JSON client posting JSON (or text) was answered 422 "Choose a note or a reproduction": the body's fields read
    as none, as if it had sent an empty form."""
    run = reference_run(small_app)
    refused = poster.post(f"/runs/{run.id}/{path}", data=body, content_type=content_type,
                          headers={"Accept": "application/json", "X-CSRFToken": TOKEN})
    assert refused.status_code == 415 and content_type in refused.json["error"], refused.get_data(as_text=True)[:300]
    document = poster.get("/api/openapi.json").get_json()
    response = document["paths"][f"/runs/{{run_id}}/{path}"]["post"]["responses"]["415"]
    schema = {**response["content"]["application/json"]["schema"], "components": document["components"]}
    assert list(OAS30Validator(schema, format_checker=oas30_format_checker).iter_errors(refused.json)) == []
    assert counts(small_app) == (0, 0)
