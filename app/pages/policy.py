"""A correctness policy at its own URL (``/policies/<digest>``), and the summary run pages show of it.

The policy's full text runs to a few hundred words; every rerun page repeating it buries
the run. A run page shows the summary (the text's first line, the tolerances per dtype,
the trials) and links here, where the digested document is shown whole.
"""

from flask import abort, url_for

from .. import formatting
from ..models import Manifest

POLICY_KIND = "CorrectnessPolicy"
SUMMARIZED = {"name", "version", "tolerances", "trials"}  # shown by the summary above the other settings


def policy_or_404(digest: str) -> Manifest:
    if not digest.startswith("sha256:"):
        digest = "sha256:" + digest
    policy = Manifest.get_or_none((Manifest.digest == digest) & (Manifest.kind == POLICY_KIND))
    if policy is None:
        abort(404, description=f"no correctness policy with digest {digest!r}")
    return policy


def policy_url(digest: str) -> str:
    return url_for("policies.policy_page", digest=digest.split(":", 1)[-1])


def summary(spec: dict) -> dict:
    """The policy's name and version, first line, tolerances and trials."""
    policy = spec.get("policy") or {}
    tolerances = policy.get("tolerances") or {}
    text = (spec.get("text") or "").strip()
    return {
        "name": policy.get("name"),
        "version": policy.get("version"),
        "first_line": text.splitlines()[0] if text else "",
        "tolerances": [(dtype, formatting.significant(value)) for dtype, value in tolerances.items()],
        "trials": policy.get("trials"),
    }


def policy_page(policy: Manifest) -> dict:
    spec = policy.document.get("spec") or {}
    return {"title": f"Correctness policy {formatting.short_digest(policy.digest)}", "digest": policy.digest,
            "summary": summary(spec), "text": spec.get("text", ""), "document": policy.document,
            "rows": [(name, text) for name, text in formatting.flatten(spec.get("policy") or {})
                     if name.split(".")[0] not in SUMMARIZED]}
