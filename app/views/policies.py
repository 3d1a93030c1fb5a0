"""Correctness policies, each at its own URL by digest, with a JSON twin (the canonical document)."""

from flask import Blueprint

from ..pages.policy import policy_or_404
from ..pages.policy import policy_page as policy_context
from .render import install, respond

policies = Blueprint("policies", __name__)
policies.record_once(install)


@policies.get("/policies/<digest>")
def policy_page(digest):
    return respond("policies/policy.html", policy_context(policy_or_404(digest)),
                   twin=lambda context: context["document"])


@policies.get("/policies/<digest>.json")
def policy_page_json(digest):
    return policy_page(digest)
