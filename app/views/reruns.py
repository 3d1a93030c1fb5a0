"""Rerun requests on the web: the ``/reruns`` list (and its JSON twin), the run page's section of requests
(an HTMX fragment that polls itself while one is queued or running), and the maintainers' forms to ask
for a rerun and to cancel one. CSRF is checked before any view runs (``app.security``); a refused ask or cancel
from the run page keeps its status and shows its message in the section."""

from flask import Blueprint, abort, current_app, g, make_response, redirect, render_template, request, url_for
from marshmallow import ValidationError

from ..inputs import control_character_in, describe
from ..page_schemas import reruns_page_schema
from ..pages.links import run_url
from ..pages.lookup import rerun_request_or_404, run_or_404
from ..pages.pagination import BadPage, page_number
from ..pages.rerun_requests import (CPU_CHOICE, REFUSAL_ALERT, REFUSAL_STATUSES, BadFilter, rerun_choices,
                                   reruns_page as reruns_context, run_requests_section)
from ..rerun_request_schemas import rerun_ask_schema
from ..rerun_requests import QueueUnavailable, RequestRefused, RequestRepeated, ask_for_rerun, cancel as cancel_request
from ..schema_fields import validation_message
from .maintainers import maintainer_required, safe_next
from .render import error_response, install, is_htmx, refusal_fragment, respond

reruns = Blueprint("reruns", __name__)
reruns.record_once(install)

SECTION = "partials/_rerun_requests.html"


@reruns.get("/reruns")
def reruns_page():
    try:
        page = page_number(request.args.get("page"))
        context = reruns_context(request.args.to_dict(), page, current_app.config["API_PAGE_SIZE"])
    except (BadPage, BadFilter) as error:
        abort(400, description=str(error))
    return respond("reruns/reruns.html", context, twin=reruns_page_schema.dump)


@reruns.get("/reruns.json")
def reruns_page_json():
    return reruns_page()


def section_of(run):
    """The run page's rerun section, as the fragment that replaces it."""
    return render_template(SECTION, rerun_section=run_requests_section(run))


@reruns.get("/runs/<run_id>/rerun-requests")
def run_requests(run_id):
    """The run page's section of rerun requests: what its HTMX polling fetches. Anything else is sent to the section
    on the run page (whose JSON twin, asked for by Accept, holds the requests too)."""
    run = run_or_404(run_id)
    if is_htmx():
        response = make_response(section_of(run))
    else:
        response = redirect(run_url(run.id, _anchor="reruns-requested"), code=303)
    response.vary.add("HX-Request")  # one URL, two answers: a cache must not give the fragment to a reader's link
    return response


@reruns.post("/reruns")
@maintainer_required
def ask():
    """A maintainer asks for a rerun on a GPU model (or the CPU): from a run page, every implementation of the
    run's workload or (``only=1``) the run's own; from a comparison page, the group's (``comparison``)."""
    comparison = request.form.get("comparison")
    if not comparison and not request.form.get("run"):
        abort(400, description="name the run (run) or the comparison group (comparison) to rerun")
    run = None if comparison else asked_run(request.form["run"])
    where = request.form.get("where", "")
    served = [choice["value"] for choice in rerun_choices() if choice["value"] != CPU_CHOICE]
    if where != CPU_CHOICE and where not in served:  # the page offers these; the API may queue for any GPU model
        abort(400, description=f"no worker serves the GPU model {where[:120]!r} now; ask on one a worker serves "
                               f"({', '.join(served) or 'none does now'}) or on the CPU")
    ask = {**({"comparison": comparison} if comparison else {"run": run.id}),
           "protocol": request.form.get("protocol") or "standard",
           **({"target": "cpu"} if where == CPU_CHOICE else {"gpu": where}),
           **({"implementations": [run.implementation]} if run and request.form.get("only") == "1" else {})}
    try:
        ask_for_rerun(rerun_ask_schema.load(ask), requested_by=f"maintainer {g.maintainer.username}")
    except ValidationError as error:
        abort(400, description=validation_message(error.messages))
    except RequestRefused as error:
        abort(400, description=str(error))
    except RequestRepeated as error:
        abort(409, description=str(error))
    except QueueUnavailable as error:
        abort(503, description=str(error))
    if run is None:
        return redirect(url_for("reruns.reruns_page"), code=303)
    if is_htmx():
        return section_of(run), 201
    return redirect(run_url(run.id, _anchor="reruns-requested"), code=303)


def asked_run(run_id: str):
    """The run the ask's form names; a 400 for an id holding a control character, as for one in an address
    (``app.inputs``): no run id does, and PostgreSQL refuses a NUL in the query (a 500)."""
    character = control_character_in(run_id)
    if character:
        abort(400, description=f"the run id contains a control character ({describe(character)}); run ids never do")
    return run_or_404(run_id)


@reruns.post("/reruns/<row_id:request_id>/cancel")
@maintainer_required
def cancel(request_id):
    """A maintainer cancels a queued or running request (a running worker stops at its next lease renewal)."""
    rerun_request = rerun_request_or_404(request_id)
    if not cancel_request(rerun_request.id):
        abort(409, description=f"rerun request {rerun_request.id} is over already "
                               f"({rerun_request_or_404(request_id).status}); nothing was cancelled")
    if is_htmx() and rerun_request.run_id:
        return section_of(rerun_request.run)
    return redirect(safe_next(request.form.get("next")) or url_for("reruns.reruns_page"), code=303)


def refusal(error):
    """A refused ask or cancel from the run page's section (HTMX): its message in the section's alert slot, with its
    status; any other request gets the usual error page or JSON."""
    if is_htmx() and request.endpoint in ("reruns.ask", "reruns.cancel"):
        return refusal_fragment(error, f"#{REFUSAL_ALERT}")
    return error_response(error)


for status in REFUSAL_STATUSES:
    reruns.register_error_handler(status, refusal)
