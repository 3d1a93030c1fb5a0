"""A run's record cited three ways: plain text, BibTeX and CSL-JSON."""

import json
import re
from datetime import date

from flask import url_for

from ..models import Run
from .titles import FamilyRef, implementation_title


def csl_json(run: Run, title: str, permalink: str, published: str, accessed: str, source: str) -> str:
    year, month, day = (int(part) for part in published.split("-")) if published else (0, 0, 0)
    return json.dumps({
        "id": f"kernelindex-{run.id}", "type": "dataset", "title": title,
        "author": [{"literal": "KernelIndex"}], "publisher": "KernelIndex", "source": source,
        "URL": permalink, "note": f"digest {run.digest}",
        "issued": {"date-parts": [[year, month, day]]},
        "accessed": {"date-parts": [[int(part) for part in accessed.split("-")]]},
    }, indent=2, ensure_ascii=False)


LATEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "&": r"\&", "#": r"\#",
                  "_": r"\_", "$": r"\$", "^": r"\^{}", "~": r"\~{}"}


def bibtex_text(text: str) -> str:
    """``text`` as LaTeX reads it back: implementation names (``liger_rms_norm``) and GPU names are stored as the
    source wrote them, and a bare ``_``, ``%`` or ``&`` in a BibTeX field stops the document that cites it."""
    return re.sub(r"[\\{}%&#_$^~]", lambda match: LATEX_SPECIALS[match.group()], text)


def citation(run: Run, family: FamilyRef, published: str, source: str) -> dict:
    """The citations of ``run``; the access date is today's."""
    permalink = url_for("runs.run_page", run_id=run.id, _external=True)
    accessed = date.today().isoformat()
    title = f"{family.title} · {implementation_title(run.implementation)} · {run.pass_} · {run.gpu}"
    plain = (f"KernelIndex. “{title}” (run {run.id}). {source}, published {published}. {permalink} "
             f"(digest {run.digest}; accessed {accessed}).")
    bibtex = "\n".join([
        f"@misc{{kernelindex_{run.id},",
        f"  title        = {{{bibtex_text(title)}}},",
        "  author       = {{KernelIndex}},",
        f"  year         = {{{published[:4]}}},",
        f"  howpublished = {{\\url{{{permalink}}}}},",
        f"  note         = {{Run {run.id}, {bibtex_text(source)}, digest {run.digest}, accessed {accessed}}},",
        "}",
    ])
    return {"permalink": permalink, "digest": run.digest, "accessed": accessed, "plain": plain, "bibtex": bibtex,
            "csl_json": csl_json(run, title, permalink, published, accessed, source)}
