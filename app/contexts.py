"""Context builders shared by the HTML pages and their JSON twins.

A view asks for one context here; the page template renders it and the JSON
twin dumps it through a schema. Nothing here builds manifests.
"""

import peewee
from flask import abort, url_for

from . import comparison, datasheet, formatting, search
from .models import Attestation, ComparisonGroup, Family, IssueReport, Manifest, Run, SourceFile

DOCUMENT_KINDS = ("run", "protocol", "environment", "workload", "implementation")


def find_run(run_id: str) -> Run:
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        abort(404, description=f"no run with id {run_id!r}")
    return run


def find_group(key: str) -> ComparisonGroup:
    if not key.startswith("sha256:"):
        key = "sha256:" + key
    group = ComparisonGroup.get_or_none(ComparisonGroup.key == key)
    if group is None:
        abort(404, description=f"no comparison group with key {key!r}")
    return group


def filtered_runs(filters: dict):
    """Runs matching API/page filters (already validated), newest first."""
    query = Run.select(Run, ComparisonGroup.size).join(ComparisonGroup)
    for name, column in (("kernel", Run.kernel), ("implementation", Run.implementation), ("pass_", Run.pass_),
                         ("metric", Run.metric), ("evidence", Run.evidence), ("source", Run.source),
                         ("external_id", Run.external_id)):
        if filters.get(name):
            query = query.where(column == filters[name])
    if filters.get("gpu"):
        query = query.where((Run.gpu == filters["gpu"]) | (Run.gpu_product == filters["gpu"]))
    return query.order_by(Run.observed_at.desc(), Run.id)


def run_item(run: Run) -> dict:
    group_size = getattr(run, "size", None)
    if group_size is None:
        group_size = run.comparison_key.size
    return {**run.__data__, "kernel_id": run.kernel_id, "group_size": group_size,
            "url": url_for("api.run_detail", run_id=run.id, _external=True)}


def manifest_bundle(run: Run) -> dict:
    digests = {"run": run.digest, "protocol": run.protocol_digest, "environment": run.environment_digest,
               "workload": run.workload_digest, "implementation": run.implementation_digest}
    documents = {m.digest: m.document for m in Manifest.select().where(Manifest.digest.in_(list(digests.values())))}
    return {kind: documents[digests[kind]] for kind in DOCUMENT_KINDS}


def comparison_kind(run: Run) -> str:
    return "source-native comparison" if comparison.EVIDENCE_KIND[run.evidence] == comparison.SOURCE_NATIVE \
        else "KernelIndex rerun comparison"


def run_detail(run: Run, include_hidden=False) -> dict:
    group = run.comparison_key
    attestations = run.attestations.order_by(Attestation.created_at)
    if not include_hidden:
        attestations = attestations.where(Attestation.hidden == False)  # noqa: E712
    return {
        "id": run.id,
        "run": run,
        "group": group,
        "manifest": manifest_bundle(run),
        "evidence": run.evidence,
        "status": run.status,
        "comparison": {"key": group.key, "rank": run.rank, "size": group.size, "leader": group.leader,
                       "kind": comparison_kind(run)},
        "superseded_by": run.superseded_by_id,
        "supersedes": [r.id for r in run.supersedes.order_by(Run.observed_at.desc())],
        "rerun_of": run.rerun_of_id,
        "reruns": [r.id for r in run.reruns.order_by(Run.observed_at.desc())],
        "attestations": list(attestations),
        "links": {
            "self": url_for("api.run_detail", run_id=run.id, _external=True),
            "comparison": url_for("api.comparison_detail", key=group.key, _external=True),
        },
    }


def comparison_detail(group: ComparisonGroup) -> dict:
    described = comparison.describe_group(group)
    members = [{
        **member["run"].__data__,
        "rank": member["rank"],
        "ratio": member["ratio"],
        "within_noise_of_leader": member["within_noise_of_leader"],
        "tied_with_leader": member["tied_with_leader"],
        "url": url_for("api.run_detail", run_id=member["run"].id, _external=True),
    } for member in described["members"]]
    return {"key": group.key, "shared": group.shared, "size": group.size, "leader": group.leader,
            "group": group, "members": members, "within_noise": [list(pair) for pair in described["noise_pairs"]]}


# --- Page contexts ------------------------------------------------------------------------------
# The builders below serve the HTML pages and their JSON twins (app/views/*). They add what a
# person reads (figures in a readable unit, ordered rows, links) to the records above; templates
# only place what they are given.


SOURCE_TITLES = {"liger-kernel-bench": "Liger-Kernel benchmarks", "kernelindex": "KernelIndex reruns"}
IMPLEMENTATION_TITLES = {"torch": "PyTorch", "torch_compile": "torch.compile", "huggingface": "Hugging Face"}
EVIDENCE_TITLES = {"source-reported": "Source-reported", "kernelindex-rerun": "KernelIndex rerun",
                   "kernelindex-replicated": "KernelIndex replicated"}
SOURCE_CORRECTNESS = "Marked passed by the source; the correctness policy was not published."
NO_LICENSE = "license not stated"
RUN_DIGEST_HEX = 23
KEY_DIGEST_HEX = 16


def source_title(source: str) -> str:
    return SOURCE_TITLES.get(source, source)


def implementation_title(name: str) -> str:
    return IMPLEMENTATION_TITLES.get(name, name)


def metric_name(run) -> str:
    """``latency`` for timings (stored in ns), else the source's metric (``memory``)."""
    return "latency" if run.unit == "ns" else run.metric


def by_length_then_name(names):
    """Shortest names first, then alphabetical: the order the reference page lists parameters and tensors."""
    return sorted(names, key=lambda name: (len(name), name))


def workload_summary(parameters: dict, dtype) -> str:
    """``seq = 1024 · batch = 2 · … · fp32``."""
    parts = [f"{name} = {formatting.parameter_value(parameters[name])}" for name in by_length_then_name(parameters)]
    if dtype:
        parts.append(dtype)
    return " · ".join(parts)


def split_quantity(value, unit: str) -> dict:
    """``{"value": "84.6", "unit": "ms"}`` for the large figure at the top of a run page."""
    text = formatting.quantity(value, unit)
    number, _, shown_unit = text.partition(" ")
    return {"value": number, "unit": shown_unit, "text": text}


def run_url(run_id: str, **kwargs) -> str:
    return url_for("runs.run_page", run_id=run_id, **kwargs)


def comparison_url(key: str, **kwargs) -> str:
    return url_for("comparisons.comparison_page", key=key.split(":", 1)[-1], **kwargs)


def family_url(name: str, **kwargs) -> str:
    return url_for("families.family_page", name=name, **kwargs)


def rank_line(run: Run, group: ComparisonGroup) -> str:
    """``Rank 2 in its comparison group · source-native comparison · observed 2025-05-27``."""
    if run.rank is not None:
        standing = f"Rank {run.rank} in its comparison group"
    elif run.superseded_by_id:
        standing = "Not ranked: a newer observation of this measurement supersedes it"
    elif run.status != "passed":
        standing = f"Not ranked: the run {run.status}"
    else:
        standing = "Not ranked"
    return f"{standing} · {comparison_kind(run)} · observed {formatting.day(run.observed_at)}"


def spread_line(run: Run, spec: dict) -> str:
    """The source's own figures at full precision (``ms 20 84.55… · ms 50 …``), or a rerun's spread."""
    native = (spec.get("sourceNative") or {}).get("metrics") or {}
    if native:
        return " · ".join(f"{name.replace('_', ' ')} {value}" for name, value in sorted(native.items()))
    rerun = spec.get("rerun") or {}
    parts = [f"p20 {formatting.quantity(run.p20, run.unit)}", f"p80 {formatting.quantity(run.p80, run.unit)}"]
    if rerun.get("trials"):
        parts.append(f"{rerun['trials']} trials × {rerun.get('samplesPerTrial')} samples")
    if rerun.get("cv") is not None:
        parts.append(f"cv {formatting.significant(rerun['cv'] * 100, 2)}%")
    if rerun.get("hostExposedSamples"):
        parts.append(f"{rerun['hostExposedSamples']} samples waited on the host")
    return " · ".join(parts) if run.median is not None else ""


def correctness_section(run: Run, spec: dict) -> dict:
    """Status and policy: the source's unpublished one, or the rerun's published, digested policy."""
    checked = spec.get("correctness")
    if not checked:
        return {"published": False, "sentence": SOURCE_CORRECTNESS, "status": run.status}
    details = (run.details or {}).get("correctness") or {}
    policy_digest = checked.get("policyDigest")
    policy = Manifest.get_or_none(Manifest.digest == policy_digest) if policy_digest else None
    policy_spec = policy.document["spec"] if policy else {}
    error, tolerance = details.get("relL2Error", checked.get("relL2Error")), details.get("tolerance",
                                                                                            checked.get("tolerance"))
    passed = details.get("passed", checked.get("passed"))
    if error is not None and tolerance is not None:
        measured = (f"relative L2 error {formatting.significant(error, 3)} against tolerance "
                    f"{formatting.significant(tolerance, 3)}")
    else:
        measured = "no error was measured"
    return {
        "published": True,
        "sentence": ("Passed" if passed else "Failed") + " the KernelIndex correctness policy: " + measured + ".",
        "status": run.status,
        "policy_text": policy_spec.get("text") or details.get("policyText", ""),
        "policy_name": (policy_spec.get("policy") or {}).get("name"),
        "policy_digest": policy_digest,
        "trials": details.get("trials", checked.get("trials")),
        "reason": details.get("reason"),
    }


def named_options(options: dict, external_id: str) -> dict:
    """The options a run's external id names: those its source counts as not the family's default.

    The reference page lists none for ``bias = true`` (FNA's default); a run with ``bias = false``
    shows it. Every option stays in the workload document and the JSON twin.
    """
    parts = external_id.split("/")
    slug = {part.lower() for part in parts[-2].split("-")} if len(parts) >= 2 else set()
    return {name: value for name, value in options.items()
            if f"{name}{formatting.parameter_value(value)}".lower() in slug}


def workload_section(workload: dict, external_id: str) -> dict:
    parameters = workload.get("parameters") or {}
    options = named_options(workload.get("options") or {}, external_id)
    tensors = {tensor["name"]: tensor for tensor in workload.get("tensors") or []}
    return {
        "parameters": [(name, formatting.parameter_value(parameters[name]))
                       for name in by_length_then_name(parameters)],
        "options": [(name, formatting.parameter_value(options[name])) for name in by_length_then_name(options)],
        "dtype": workload.get("dtype"),
        "tensors": [(name, f"{tensors[name]['dtype']} {formatting.shape(tensors[name]['shape'])}")
                    for name in by_length_then_name(tensors)],
        "comparator": (workload.get("definition") or {}).get("comparator", "not_asserted"),
    }


def measurement_rows(run: Run, spec: dict) -> list:
    metric = metric_name(run)
    rows = [(f"{metric} · median", formatting.quantity(run.median, run.unit))] if run.median is not None else []
    for measurement in spec.get("measurements") or []:
        rows.append((f"{measurement['metric']} · {measurement['statistic']}",
                     formatting.quantity(measurement["value"], measurement["unit"])))
    return rows


def flatten(value, prefix="") -> list:
    """Nested settings as ``(name, text)`` rows: ``{"a": {"b": 1}}`` → ``[("a.b", "1")]``."""
    if isinstance(value, dict):
        rows = []
        for name, inner in value.items():
            rows.extend(flatten(inner, f"{prefix}.{name}" if prefix else name))
        return rows
    if isinstance(value, list):
        return [(prefix, ", ".join(formatting.parameter_value(item) for item in value))]
    return [(prefix, formatting.parameter_value(value))]


def protocol_section(protocol: dict) -> dict:
    harness = protocol.get("harness") or {}
    measurement = dict(protocol.get("measurement") or {})
    comparability = protocol.get("comparability") or {}
    rows = flatten(measurement)
    rows.append(("comparabilityFamily", comparability.get("family", "")))
    return {"harness": harness.get("name", ""), "repository": harness.get("repository"), "rows": rows,
            "notes": comparability.get("notes", "")}


def environment_rows(environment: dict) -> list:
    hardware_ = environment.get("hardware") or {}
    gpu = hardware_.get("product") or hardware_.get("name") or "unknown"
    if hardware_.get("architecture"):
        gpu = f"{gpu} ({hardware_['architecture']})"
    rows = [("gpu", gpu)]
    if hardware_.get("formFactor"):
        rows.append(("form factor", hardware_["formFactor"]))
    rows.extend(flatten(environment.get("software") or {}))
    for name in ("host", "target", "cpu"):
        if name in environment:
            rows.extend(flatten(environment[name], name))
    return rows


def history_rows(runs) -> list:
    return [{"id": r.id, "url": run_url(r.id), "observed": formatting.day(r.observed_at),
             "median": formatting.quantity(r.median, r.unit), "evidence": EVIDENCE_TITLES.get(r.evidence, r.evidence),
             "host": r.host, "status": r.status} for r in runs]


def citation(run: Run, family: Family, published: str, source: str) -> dict:
    """The record cited three ways; the access date is today's."""
    from datetime import date

    permalink = url_for("runs.run_page", run_id=run.id, _external=True)
    accessed = date.today().isoformat()
    title = f"{family.title} · {implementation_title(run.implementation)} · {run.pass_} · {run.gpu}"
    plain = (f"KernelIndex. “{title}” (run {run.id}). {source}, published {published}. {permalink} "
             f"(digest {run.digest}; accessed {accessed}).")
    bibtex = "\n".join([
        f"@misc{{kernelindex_{run.id},",
        f"  title        = {{{title}}},",
        "  author       = {{KernelIndex}},",
        f"  year         = {{{published[:4]}}},",
        f"  howpublished = {{\\url{{{permalink}}}}},",
        f"  note         = {{Run {run.id}, {source}, digest {run.digest}, accessed {accessed}}},",
        "}",
    ])
    import json

    year, month, day_ = (int(part) for part in published.split("-")) if published else (0, 0, 0)
    csl = json.dumps({
        "id": f"kernelindex-{run.id}", "type": "dataset", "title": title,
        "author": [{"literal": "KernelIndex"}], "publisher": "KernelIndex", "source": source,
        "URL": permalink, "note": f"digest {run.digest}",
        "issued": {"date-parts": [[year, month, day_]]},
        "accessed": {"date-parts": [[int(part) for part in accessed.split("-")]]},
    }, indent=2, ensure_ascii=False)
    return {"permalink": permalink, "digest": run.digest, "accessed": accessed, "plain": plain, "bibtex": bibtex,
            "csl_json": csl}


def open_issue_count(run: Run) -> int:
    return run.issue_reports.where(IssueReport.resolved == False).count()  # noqa: E712


def run_page(run: Run) -> dict:
    """Everything the run page shows, in the order it shows it (see the reference run page)."""
    detail = run_detail(run)
    group, manifest = detail["group"], detail["manifest"]
    spec = manifest["run"]["spec"]
    implementation = manifest["implementation"]["spec"]
    family = Family.get_by_id(run.kernel_id)
    source_file = SourceFile.get_or_none(SourceFile.id == run.source_file_id) if run.source_file_id else None
    published = formatting.day(source_file.imported_at if source_file else run.created_at)
    source = source_title(run.source)
    leader_url = None
    if run.rank is not None and run.rank > 1 and group.leader:
        leader_url = comparison_url(group.key, _anchor=f"run-{group.leader}")
    superseded_by = Run.get_or_none(Run.id == run.superseded_by_id) if run.superseded_by_id else None
    supersedes = list(run.supersedes.order_by(Run.observed_at.desc()))
    reruns = list(run.reruns.order_by(Run.observed_at.desc()))
    rerun_of = Run.get_or_none(Run.id == run.rerun_of_id) if run.rerun_of_id else None
    return {
        "detail": detail,
        "run": run,
        "family": family,
        "family_url": family_url(family.name),
        "title": f"Run {run.id}",
        "headline": f"{family.title} · {implementation_title(run.implementation)} · {run.pass_} · {run.gpu}",
        "evidence_title": EVIDENCE_TITLES.get(run.evidence, run.evidence),
        "primary": {**split_quantity(run.median, run.unit), "statistic": "median"},
        "rank_line": rank_line(run, group),
        "leader_url": leader_url,
        "comparison_url": comparison_url(group.key),
        "spread_line": spread_line(run, spec),
        "identity": {
            "implementation": implementation_title(implementation.get("name", run.implementation)),
            "implementation_name": run.implementation,
            "project": implementation.get("project", ""),
            "revision": implementation.get("revision", "unknown"),
            "implementation_details": flatten(implementation.get("details") or {}),
            "workload": workload_summary(run.parameters, run.dtype),
            "comparison_key": group.key,
            "comparison_key_short": formatting.short_digest(group.key, KEY_DIGEST_HEX),
            "source": source,
            "external_id": run.external_id,
            "digest": run.digest,
            "digest_short": formatting.short_digest(run.digest, RUN_DIGEST_HEX),
        },
        "correctness": correctness_section(run, spec),
        "workload": workload_section(manifest["workload"]["spec"], run.external_id),
        "measurements": measurement_rows(run, spec),
        "throughput": datasheet.achieved(run),
        "protocol": protocol_section(manifest["protocol"]["spec"]),
        "environment": environment_rows(manifest["environment"]["spec"]),
        "artifacts": spec.get("artifacts") or [],
        "superseded_by": history_rows([superseded_by])[0] if superseded_by else None,
        "supersedes": history_rows(supersedes),
        "rerun_of": history_rows([rerun_of])[0] if rerun_of else None,
        "reruns": history_rows(reruns),
        "error": (run.details or {}).get("error"),
        "attestations": detail["attestations"],
        "issue_count": open_issue_count(run),
        "manifest_url": url_for("runs.manifest_page", run_id=run.id),
        "manifest_download_url": url_for("runs.manifest_download", run_id=run.id),
        "json_url": url_for("runs.run_page_json", run_id=run.id),
        "citation": citation(run, family, published, source),
        "footer": {"published": published, "source": source,
                   "license": (source_file.license if source_file and source_file.license else NO_LICENSE)},
    }


def comparison_page(group: ComparisonGroup) -> dict:
    """Members side by side on one axis, with ratios to #1 and noise overlap, plus related groups."""
    detail = comparison_detail(group)
    members = detail["members"]
    shared = group.shared
    family = Family.get_or_none(Family.name == group.kernel)
    unit_name = members[0]["unit"] if members else "ns"
    shown_unit = formatting.common_unit([m["p80"] if m["p80"] is not None else m["median"] for m in members],
                                        unit_name)
    axis_max = max([m["p80"] or m["median"] or 0 for m in members] or [0]) * 1.05 or 1.0

    def percent(value):
        return round(100 * (value or 0) / axis_max, 2)

    rows = []
    for position, member in enumerate(members):
        low = member["p20"] if member["p20"] is not None else member["median"]
        high = member["p80"] if member["p80"] is not None else member["median"]
        if position == 0:
            standing = "#1"
        elif member["tied_with_leader"]:
            standing = "tied with #1"
        elif member["within_noise_of_leader"]:
            standing = "within noise of #1"
        else:
            standing = formatting.ratio(member["ratio"])
        rows.append({
            "id": member["id"], "url": run_url(member["id"]), "rank": member["rank"],
            "implementation": implementation_title(member["implementation"]),
            "implementation_name": member["implementation"],
            "median": formatting.in_unit(member["median"], shown_unit),
            "spread": (f"{formatting.in_unit(member['p20'], shown_unit)} – "
                       f"{formatting.in_unit(member['p80'], shown_unit)}"),
            "bar": {"left": percent(low), "width": max(percent(high) - percent(low), 0.4),
                    "median": percent(member["median"])},
            "standing": standing,
            "observed": formatting.day(member["observed_at"]),
        })
    first = Run.get_or_none(Run.comparison_key == group.key)
    workload = workload_summary(first.parameters, first.dtype) if first else shared.get("workload", "")
    related = []
    for other in (ComparisonGroup.select().where((ComparisonGroup.workload_key == group.workload_key)
                                                & (ComparisonGroup.key != group.key))
                  .order_by(ComparisonGroup.gpu, ComparisonGroup.evidence_kind)):
        if (other.shared.get("pass"), other.shared.get("metric")) != (shared.get("pass"), shared.get("metric")):
            continue
        related.append({"url": comparison_url(other.key), "gpu": other.gpu, "size": other.size,
                        "evidence": "KernelIndex reruns" if other.evidence_kind == comparison.KERNELINDEX
                        else "source-native", "key_short": formatting.short_digest(other.key, KEY_DIGEST_HEX)})
    return {
        "detail": detail,
        "group": group,
        "title": f"{family.title if family else group.kernel} · {shared.get('pass')} · {group.gpu}",
        "family": family,
        "family_url": family_url(group.kernel),
        "rows": rows,
        "axis": {"unit": shown_unit[0], "max": formatting.in_unit(axis_max, shown_unit)},
        "shared_rows": [
            ("kernel", family.title if family else group.kernel),
            ("workload", workload),
            ("pass", shared.get("pass", "")),
            ("metric", shared.get("metric", "")),
            ("gpu", group.gpu),
            ("protocol family", shared.get("comparabilityFamily", "")),
            ("evidence", "KernelIndex reruns" if group.evidence_kind == comparison.KERNELINDEX else "source-native"),
            ("comparison key", group.key),
        ],
        "related": related,
        "json_url": url_for("comparisons.comparison_page_json", key=group.key.split(":", 1)[-1]),
    }


def home_page() -> dict:
    vocabulary = search.vocabulary()
    families = {}
    for entry in vocabulary.entries:
        family = families.setdefault(entry.kernel, {"name": entry.kernel, "title": entry.title, "runs": 0,
                                                    "gpus": set(), "implementations": set()})
        family["runs"] += entry.count
        family["gpus"].add(entry.gpu)
        family["implementations"].add(entry.implementation)
    family_rows = [{**f, "gpus": sorted(f["gpus"]), "implementations": sorted(f["implementations"]),
                    "url": family_url(f["name"])} for f in sorted(families.values(), key=lambda f: f["title"].lower())]
    imports = list(SourceFile.select().order_by(SourceFile.imported_at.desc(), SourceFile.id.desc()).limit(5))
    reruns = list(Run.select().where(Run.source == "kernelindex").order_by(Run.created_at.desc()).limit(5))
    sources = {}
    for source_file in SourceFile.select(SourceFile.source, SourceFile.repository, SourceFile.license,
                                         peewee.fn.COUNT(SourceFile.id).alias("files"),
                                         peewee.fn.SUM(SourceFile.runs_created).alias("runs")
                                         ).group_by(SourceFile.source, SourceFile.repository, SourceFile.license):
        sources[source_file.source] = {"source": source_file.source, "title": source_title(source_file.source),
                                       "repository": source_file.repository, "license": source_file.license,
                                       "files": source_file.files, "runs": source_file.runs or 0}
    return {
        "families": family_rows,
        "total_runs": sum(f["runs"] for f in family_rows),
        "imports": [{"location": f.location, "source": source_title(f.source),
                     "imported": formatting.day(f.imported_at), "rows": f.rows_read, "created": f.runs_created,
                     "commit": f.commit} for f in imports],
        "reruns": [{**history_rows([r])[0], "title": f"{r.kernel_id} · {r.implementation} · {r.gpu}"}
                   for r in reruns],
        "sources": list(sources.values()),
    }


# --- Family page ------------------------------------------------------------------------------

FAMILY_CONTROLS = ("pass", "metric", "gpu", "implementation", "sort", "order", "page")
FAMILY_SORTS = {"x": "swept parameter", "median": "median", "implementation": "implementation",
                "observed": "observed"}
FAMILY_PAGE_SIZE = 50
FAMILY_DEFAULTS = {"sort": "x", "order": "asc", "page": 1}  # what an absent control means; links leave these out


class BadFilter(ValueError):
    """A family-page filter that names nothing the family has; the message says what it does have."""


def _prefer(counts: dict, wanted, preferred=None):
    """The requested value, else the preferred one if present, else the most common."""
    if wanted:
        return wanted
    if preferred in counts:
        return preferred
    return max(counts, key=lambda value: (counts[value], value)) if counts else None


def _x_order(row: dict) -> tuple:
    """Numbers on the swept parameter by value, then names (model names) alphabetically."""
    return (0, row["x_number"], "") if row["x_number"] is not None else (1, 0, row["x_value"])


def _config_of(row: dict) -> tuple:
    """What fixes a run's point in the sweep: every parameter but the swept one, the dtype and options."""
    items = [(name, formatting.parameter_value(value)) for name, value in row["parameters"].items()
             if name != row["x_name"]]
    items += [(name, formatting.parameter_value(value)) for name, value in (row["options"] or {}).items()]
    if row["dtype"]:
        items.append(("dtype", row["dtype"]))
    return tuple(sorted(items, key=lambda item: (len(item[0]), item[0])))


def family_page(family: Family, args: dict) -> dict:
    """One GPU, pass and metric of a family: facets, a chart of median against the swept parameter, a table.

    ``args`` are the query arguments; unknown names or values raise BadFilter.
    """
    facets = {}
    for pass_, metric, gpu, count in (Run.select(Run.pass_, Run.metric, Run.gpu, peewee.fn.COUNT(Run.id))
                                      .where((Run.kernel == family.name) & Run.superseded_by.is_null())
                                      .group_by(Run.pass_, Run.metric, Run.gpu).tuples()):
        facets[(pass_, metric, gpu)] = count

    def counts(position, **fixed):
        totals = {}
        for key, count in facets.items():
            if all(key[("pass", "metric", "gpu").index(name)] == value for name, value in fixed.items()):
                totals[key[position]] = totals.get(key[position], 0) + count
        return totals

    for name, position in (("pass", 0), ("metric", 1), ("gpu", 2)):
        value = args.get(name)
        if value and value not in {key[position] for key in facets}:
            raise BadFilter(f"{family.title} has no runs with {name} {value!r}; it has: "
                            + ", ".join(sorted({key[position] for key in facets})))
    pass_ = _prefer(counts(0), args.get("pass"), "forward")
    metric = _prefer(counts(1, **{"pass": pass_}), args.get("metric"), "speed")
    gpu = _prefer(counts(2, **{"pass": pass_, "metric": metric}), args.get("gpu"))

    sort = args.get("sort") or FAMILY_DEFAULTS["sort"]
    if sort not in FAMILY_SORTS:
        raise BadFilter(f"sort must be one of {', '.join(FAMILY_SORTS)}, not {sort!r}")
    order = args.get("order") or FAMILY_DEFAULTS["order"]
    if order not in ("asc", "desc"):
        raise BadFilter(f"order must be asc or desc, not {order!r}")
    try:
        page = int(args.get("page") or FAMILY_DEFAULTS["page"])
    except ValueError:
        raise BadFilter(f"page must be a whole number, not {args.get('page')!r}") from None
    if page < 1:
        raise BadFilter("page must be 1 or more")

    columns = (Run.id, Run.implementation, Run.x_name, Run.x_value, Run.x_number, Run.parameters, Run.dtype,
               Run.options, Run.median, Run.p20, Run.p80, Run.unit, Run.evidence, Run.observed_at, Run.rank,
               Run.status, Run.external_id)
    names = [column.name for column in columns]
    rows = [dict(zip(names, values)) for values in Run.select(*columns).where(
        (Run.kernel == family.name) & (Run.pass_ == pass_) & (Run.metric == metric) & (Run.gpu == gpu)
        & Run.superseded_by.is_null()).tuples()]
    for row in rows:
        row["config"] = _config_of(row)

    implementations = sorted({row["implementation"] for row in rows})
    implementation = args.get("implementation") or ""
    if implementation and implementation not in implementations:
        raise BadFilter(f"{family.title} has no {implementation!r} runs on {gpu} ({pass_}, {metric}); it has: "
                        + ", ".join(implementations))
    parameter_values = {}
    for row in rows:
        for name, value in row["config"]:
            parameter_values.setdefault(name, set()).add(value)
    fixed = {}
    for name, value in args.items():
        if name in FAMILY_CONTROLS or value in ("", None):
            continue
        if name not in parameter_values:
            raise BadFilter(f"unknown filter {name!r}: filters are {', '.join(FAMILY_CONTROLS)} and the fixed "
                            f"parameters {', '.join(by_length_then_name(parameter_values)) or '(none)'}")
        fixed[name] = value

    selected = [row for row in rows if (not implementation or row["implementation"] == implementation)
                and all(dict(row["config"]).get(name) == value for name, value in fixed.items())]

    config_counts = {}
    for row in selected:
        config_counts[row["config"]] = config_counts.get(row["config"], 0) + 1
    chart_config = max(config_counts, key=lambda c: (config_counts[c], c)) if config_counts else ()
    chart_rows = sorted((row for row in selected if row["config"] == chart_config and row["median"] is not None),
                        key=lambda row: (_x_order(row), row["x_value"]))
    unit = rows[0]["unit"] if rows else "ns"
    x_name = rows[0]["x_name"] if rows else ""
    from . import charts

    series = {}
    for row in chart_rows:
        label = implementation_title(row["implementation"])
        if comparison.EVIDENCE_KIND.get(row["evidence"]) == comparison.KERNELINDEX:
            label += " (KernelIndex rerun)"
        series.setdefault(label, []).append(row)
    chart = charts.line_chart(series, x_name=x_name, unit=unit,
                              title=f"{family.title}: median {metric_name_for(unit, metric)} against {x_name}")

    def sort_key(row):
        x = _x_order(row)
        return {"x": (x, row["implementation"]),
                "median": (row["median"] is None, row["median"] or 0),
                "implementation": (row["implementation"], x),
                "observed": (row["observed_at"], row["id"])}[sort]

    ordered = sorted(selected, key=sort_key, reverse=(order == "desc"))
    total = len(ordered)
    pages = max(1, -(-total // FAMILY_PAGE_SIZE))
    if page > pages:
        raise BadFilter(f"page {page} is past the last page ({pages})")
    shown_unit = formatting.common_unit([row["median"] for row in ordered], unit)
    page_rows = ordered[(page - 1) * FAMILY_PAGE_SIZE: page * FAMILY_PAGE_SIZE]

    state = {"pass": pass_, "metric": metric, "gpu": gpu, "implementation": implementation, **fixed,
             "sort": sort, "order": order}

    def link(**changes):
        merged = {**state, **changes}
        return family_url(family.name, **{k: v for k, v in merged.items()
                                          if v not in ("", None) and FAMILY_DEFAULTS.get(k) != v})

    return {
        "family": family,
        "title": f"All results for {family.title}",
        "state": state,
        "selected": {"pass": pass_, "metric": metric, "gpu": gpu, "implementation": implementation,
                     "fixed": fixed},
        "options": {
            "pass": sorted(counts(0)),
            "metric": sorted(counts(1, **{"pass": pass_})),
            "gpu": sorted(counts(2, **{"pass": pass_, "metric": metric}).items()),
            "implementation": implementations,
            "parameters": [(name, sorted(parameter_values[name], key=lambda v: (len(v), v)))
                           for name in by_length_then_name(parameter_values)],
        },
        "x_name": x_name,
        "chart": chart,
        "chart_config": " · ".join(f"{n} = {v}" if n != "dtype" else v for n, v in chart_config),
        "chart_config_chosen": len(config_counts) > 1,
        "chart_rows": chart_rows,
        "rows": [{
            "id": row["id"], "url": run_url(row["id"]), "implementation": implementation_title(row["implementation"]),
            "x": row["x_value"], "config": " · ".join(f"{n} = {v}" if n != "dtype" else v for n, v in row["config"]),
            "median": formatting.in_unit(row["median"], shown_unit),
            "spread": f"{formatting.in_unit(row['p20'], shown_unit)} – {formatting.in_unit(row['p80'], shown_unit)}",
            "rank": row["rank"], "evidence": EVIDENCE_TITLES.get(row["evidence"], row["evidence"]),
            "observed": formatting.day(row["observed_at"]), "raw": row,
        } for row in page_rows],
        "sort_links": {name: link(sort=name, order="desc" if sort == name and order == "asc" else "asc", page=None)
                       for name in FAMILY_SORTS},
        "sort": sort,
        "order": order,
        "page": page,
        "pages": pages,
        "total": total,
        "previous_url": link(page=page - 1) if page > 1 else None,
        "next_url": link(page=page + 1) if page < pages else None,
        "url": link(),
        "json_url": url_for("families.family_page_json", name=family.name,
                            **{k: v for k, v in state.items() if v not in ("", None)}),
    }


def metric_name_for(unit: str, metric: str) -> str:
    return "latency" if unit == "ns" else metric


def find_family(name: str) -> Family:
    family = Family.get_or_none(Family.name == name)
    if family is None:
        abort(404, description=f"no kernel family named {name!r}")
    return family
