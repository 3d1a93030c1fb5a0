"""``flask rerun``: the app hosting the harness on a GPU host.

It looks the named runs up in the database (with ``--server``, RUN_IDs on the server's
API, so a GPU host needs no database), turns them into the harness's
``RerunRequest``s, calls ``runners.rerun`` workload by workload, and sends each
workload's results on at once (so a run cut short keeps what it measured): into
this database, appended to an ``--out`` bundle, or posted to a ``--server``. All
three carry the same bundle lines, and all three end in the rerun importer.
"""

import http.client
import itertools
import json
import math
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import click
import peewee
from flask.cli import with_appcontext

from runners.discovery import get_registry
from runners.names import FAMILY_NAME_LENGTH, address_name_problem
from runners.rerun import (METRIC, METRICS, RerunError, RerunRequest as HarnessRequest, capture_environment,
                           check_metrics, check_requests, chosen_implementations, device_for, rerun_workload,
                           sweep_requests)
from runners.timing import PROTOCOL_PRESETS, protocol_document
from runners.types import PASSES, TARGETS, WORKLOAD_DTYPES, RerunResult

from ..importers.rerun_submission import Submission
from ..models import SOURCE_REPORTED, Run
from ..rerun_requests import family_runs, harness_request, harness_requests, workloads_problem
from ..schemas import MAX_EXTERNAL_ID
from .names import checked_name


MAX_BUDGET_SECONDS = 7 * 24 * 3600
"""The longest ``--budget``: a week, more than any rerun is watched for, and within what the clocks that enforce it
take (a child's deadline of twice the budget overflowed the pipe's poll, a traceback, and the interval timer of a
built-in's failed its result with an OverflowError)."""


def progress(message: str) -> None:
    click.echo(message, err=True)


def default_target() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def select_runs(run_ids, external_ids, kernels, passes) -> list[Run]:
    """The runs named on the command line; every source-reported speed run of ``kernels`` (and ``passes``): a
    kernel with none is the caller's to measure afresh (:func:`fresh_requests`)."""
    selected = []
    for run_id in run_ids:
        run = Run.get_or_none(Run.id == run_id)
        if run is None:
            raise click.ClickException(f"no run with id {run_id!r}")
        selected.append(run)
    for external_id in external_ids:
        runs = list(Run.select().where(Run.external_id == external_id))
        if not runs:
            raise click.ClickException(f"no run with external id {external_id!r}")
        speed = [run for run in runs if run.metric == METRIC]  # a source's speed and memory rows share the id
        selected.extend(speed or runs)
    for kernel in kernels:
        selected.extend(family_runs(kernel, passes))
    selected = list(dict.fromkeys(selected))  # a run named twice (by id and external id, say) is measured once
    for run in selected:
        if run.metric != METRIC:
            raise click.ClickException(f"run {run.id} measures {run.metric}; name the {METRIC} run of its workload "
                                       "(a CUDA rerun measures memory beside speed)")
    return selected


def fresh_requests(kernel: str, passes, sweep: dict, dtype: str | None, definitions) -> list[HarnessRequest]:
    """Workloads of a family no published run has (one just dropped in), from ``--param`` alone: every combination
    of the values given, in every pass asked for (all three by default). Each of the family's parameters must be
    given; any other name is an option of the workloads (DyT's ``beta``), and an option not given is the family's
    default. RerunError where the values given disagree in kind."""
    definition = definitions.get(kernel)
    missing = [name for name in definition.parameters if name not in sweep] if definition else []
    if definition is None or missing:
        hint = (f"; to measure it afresh, give each of its parameters: "
                + " ".join(f"--param {name}=..." for name in missing)) if definition else (
            f"; and no plugin here declares the family {kernel!r} (`flask plugins` lists those found; a plugin folder "
            "of your own is found through KERNELINDEX_PLUGINS_DIR)")
        raise click.ClickException(f"no {SOURCE_REPORTED} {METRIC} runs of {kernel}"
                                   + (f" for pass {', '.join(passes)}" if passes else "") + hint)
    parameters = {name: sweep[name] for name in definition.parameters}
    options = {name: values for name, values in sweep.items() if name not in parameters}
    defaults = {name: value for name, value in definition.defaults.items() if name not in parameters}
    first = [HarnessRequest(family=kernel, pass_=pass_, parameters={name: values[0] for name, values in
                                                                    parameters.items()},
                            dtype=dtype or definition.default_dtype or WORKLOAD_DTYPES[0],
                            options={**defaults, **dict(zip(options, chosen))})
             for chosen in itertools.product(*options.values()) for pass_ in passes or PASSES]
    return sweep_requests(first, parameters)


def checked_server(server: str) -> str:
    """``server`` without its trailing slash; a usage error unless it is an http(s) address."""
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.UsageError(f"--server must be an http:// or https:// address, not {server!r}")
    return server.rstrip("/")


def fetched_requests(server: str, run_ids) -> list:
    """The harness requests of runs the server holds, read from its API: no database here."""
    requests = []
    for run_id in run_ids:
        url = f"{server}/api/v1/runs/{urllib.parse.quote(run_id, safe='')}/rerun-workload"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                document = json.loads(response.read())
            requests.append(harness_request(document))
        except urllib.error.HTTPError as error:
            raise click.ClickException(f"{server}: {refusal(error)}") from error
        except (KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError) as error:  # a proxy's page, another API
            raise click.ClickException(f"could not read run {run_id} from {server}: its answer is no rerun "
                                       "workload (is it a KernelIndex server?)") from error
        except (OSError, http.client.HTTPException, ValueError) as error:  # refused, reset, timed out, not HTTP
            raise click.ClickException(f"could not read run {run_id} from {server}: {unreachable(error)}") from error
    return requests


def refusal(error: urllib.error.HTTPError) -> str:
    """What a server's error answer says: the API's JSON ``error``, else its status (a proxy's HTML page)."""
    try:
        return json.loads(error.read())["error"]
    except (ValueError, TypeError, KeyError):  # not JSON, or not the API's
        return f"HTTP {error.code} {error.reason}"


def unreachable(error: Exception) -> str:
    """What went wrong talking to a server, in a few words."""
    return str(getattr(error, "reason", None) or error) or type(error).__name__


def parse_sweep(assignments) -> dict[str, list]:
    """``("seq=2048", "seq=4096")`` -> ``{"seq": [2048, 4096]}``; values are read as JSON where they parse."""
    sweep = {}
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        if not sep or not name or not text:
            raise click.UsageError(f"--param takes NAME=VALUE, not {assignment!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        except ValueError as error:  # json reads no integer of more digits than Python converts
            raise click.UsageError(f"--param {name} is an integer of more than {sys.get_int_max_str_digits()} "
                                   "digits") from error
        sweep.setdefault(name, []).append(value)
    return sweep


def post_results(server: str, token: str, results: list[RerunResult]) -> str:
    request = urllib.request.Request(
        server + "/api/v1/reruns", data=json.dumps([result.as_document() for result in results]).encode("utf-8"),
        method="POST", headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        body = error.read().decode("utf-8", "replace")
        raise click.ClickException(f"{server} refused the results ({error.code}): {body[:500]}") from error
    except (OSError, http.client.HTTPException) as error:  # refused, reset, timed out, not HTTP
        raise click.ClickException(f"could not post to {server}: {unreachable(error)}") from error


def token_rights(server: str, token: str) -> Submission | None:
    """What the server lets ``token`` post (``GET /api/v1/rerun-token``), asked before anything is measured: hours
    of GPU time would otherwise end in a bundle of unsent results that only the server's operator can import. A
    token the server refuses stops the rerun here. None where the server cannot be reached now or does not answer
    as KernelIndex does: that is left to the results' own post, which keeps them if it still fails."""
    call = urllib.request.Request(server + "/api/v1/rerun-token", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(call, timeout=60) as response:
            rights = json.loads(response.read())
        return Submission(host=rights["host"], gpus=tuple(rights["gpus"] or ()))
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise click.ClickException(f"{server} refuses the token: {refusal(error)}; nothing was measured") \
                from error
        return None
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError):  # unreachable, or not the API
        return None


def check_writable(path: str) -> None:
    """Open ``path`` for appending now, so that a bundle it cannot take fails before anything is measured; an empty
    ``--out`` (an unset shell variable) is refused, not taken as no ``--out``, which records in this database."""
    if not path:
        raise click.UsageError("--out names a bundle file, not an empty argument")
    try:
        Path(path).open("a", encoding="utf-8").close()
        if not holds_a_bundle(path):
            raise click.UsageError(f"--out {path} holds something other than a bundle (its first line is no JSON "
                                   "object); results are appended to a bundle of their own, or a new file")
    except OSError as error:
        raise click.UsageError(f"--out {path}: {error.strerror or error}") from error


def holds_a_bundle(path: str) -> bool:
    """Whether the file at ``path`` is empty (or no regular file: a pipe) or starts as a bundle does, with a JSON
    object: appended to a database, a CSV or a document, results would be where no importer reads them, and the
    file could no longer be read as what it is."""
    if not Path(path).is_file():
        return True
    with Path(path).open("rb") as existing:
        start = existing.read(4096).lstrip()
    return not start or start.startswith(b"{")


def bundle_text(results: list[RerunResult]) -> str:
    """The bundle lines of ``results``, as ``flask import kernelindex`` reads them."""
    return "".join(result.bundle_line() + "\n" for result in results)


def append_bundle(path: str, results: list[RerunResult]) -> None:
    """Append ``results`` to the bundle at ``path``, on lines of their own: where the file's last line has no line
    break (saved so by an editor, cut short), one is written first, or the first result would join that line. A pipe
    (``--out /dev/stdout``) is written as it is."""
    text = bundle_text(results)
    with Path(path).open("a", encoding="utf-8") as bundle:
        if Path(path).is_file() and not ends_a_line(path):
            text = "\n" + text
        bundle.write(text)


def ends_a_line(path: str) -> bool:
    """Whether the file at ``path`` is empty or ends with a line break."""
    with Path(path).open("rb") as bundle:
        return bundle.seek(0, 2) == 0 or (bundle.seek(-1, 2), bundle.read(1))[1] == b"\n"


def record_locally(results: list[RerunResult]) -> None:
    """Record ``results`` in this database; where it refuses them or cannot take them (busy, read-only, gone), keep
    them in a bundle (:func:`saved_unsent`) before saying why."""
    from ..importers.kernelindex_rerun import RerunRejected, record_rerun_results
    from ..locks import DatabaseBusy

    try:
        summary = record_rerun_results([result.as_document() for result in results])
    except RerunRejected as error:
        raise click.ClickException(f"the database refused the results: {error}" + saved_unsent(results)) from error
    except (DatabaseBusy, peewee.DatabaseError, peewee.InterfaceError):  # the command's error line says why
        progress("the results could not be recorded" + saved_unsent(results))
        raise
    progress(f"recorded: {summary.line()}")


def saved_unsent(results: list[RerunResult]) -> str:
    """Keep results that could not go where they were sent in a bundle of their own (hours of GPU time must not
    be lost to a bad token, a network fault or a full disk), in the current folder or else the temporary one, or
    printed to standard output where neither can be written; the words that say where."""
    name = f"kernelindex-unsent-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.jsonl"
    for folder in (".", tempfile.gettempdir()):
        path = Path(folder) / name
        try:
            append_bundle(str(path), results)
        except OSError:
            continue
        return f" (results saved to {path}; import it with `flask import kernelindex`)"
    click.echo(bundle_text(results), nl=False)
    return (" (no file could be written either: the results are printed above, one bundle line each; save them "
            "and import them with `flask import kernelindex`)")


def send_results(results: list[RerunResult], out: str | None, server: str | None, token: str | None) -> None:
    """Append to ``out``, post to ``server``, or (neither given) record in this database."""
    if out:
        try:
            append_bundle(out, results)
        except OSError as error:  # the disk filled up, the file went away
            raise click.ClickException(f"could not append to --out {out}: {error.strerror or error}"
                                       + saved_unsent(results)) from error
        progress(f"appended {len(results)} result(s) to {out}")
    if server:
        try:
            reply = post_results(server, token, results)
        except click.ClickException as error:
            if not out:
                error.message += saved_unsent(results)
            raise
        progress(f"posted {len(results)} result(s) to {server}: {reply.strip()[:300]}")
    if not out and not server:
        record_locally(results)


def chosen_target(target: str | None) -> str:
    available = default_target()
    if target == "cuda" and available != "cuda":
        raise click.ClickException("--target cuda, but torch sees no CUDA device here")
    return target or available


def chosen_device(target: str, device_index: int | None) -> int:
    """The CUDA device index to run on (0 unless ``--device`` says): one torch sees, and only for the cuda target."""
    if device_index is None:
        return 0
    if target != "cuda":
        raise click.UsageError(f"--device {device_index} picks a CUDA device; this rerun's target is {target}")
    import torch

    count = torch.cuda.device_count()
    if not 0 <= device_index < count:
        raise click.UsageError(f"--device {device_index}: torch sees CUDA devices 0 to {count - 1} here")
    return device_index


@click.command("rerun")
@click.argument("run_ids", nargs=-1, callback=checked_name("a run id", Run.id.max_length))
@click.option("--external-id", "external_ids", multiple=True, help="Select a run by its upstream external id.",
              callback=checked_name("an external id", MAX_EXTERNAL_ID))
@click.option("--kernel", "kernels", multiple=True, help="Select every source-reported speed run of this family.",
              callback=checked_name("a family", FAMILY_NAME_LENGTH, address_name_problem))
@click.option("--pass", "passes", multiple=True, type=click.Choice(PASSES), help="With --kernel: only this pass.")
@click.option("--param", "assignments", multiple=True, metavar="NAME=VALUE",
              help="Re-measure the selected workloads with this parameter changed (repeatable; several values "
                   "of one name make a sweep). Such results reproduce no published run. For a --kernel with no "
                   "published run, give every parameter, and any option its workloads need (e.g. beta=false): "
                   "the workloads are made from them.")
@click.option("--dtype", type=click.Choice(WORKLOAD_DTYPES),
              help="With --kernel and --param, for a family with no published run: the workloads' dtype "
                   "(default: the family's, else fp32).")
@click.option("--implementation", "implementations", multiple=True,
              help="Time only this implementation (repeatable; default: all the plugin has).")
@click.option("--without", "left_out", multiple=True,
              help="Leave this implementation out (repeatable), e.g. torch_compile where compiling costs too long.")
@click.option("--metric", "metrics", multiple=True, type=click.Choice(METRICS),
              help="Measure only this metric (repeatable; default: speed, and on CUDA memory too). A memory-only "
                   "rerun checks correctness and measures peaks without timing anything.")
@click.option("--target", type=click.Choice(TARGETS), help="Hardware target (default: cuda when a GPU is visible).")
@click.option("--device", "device_index", type=int, help="CUDA device index (default: 0).")
@click.option("--protocol", "preset", type=click.Choice(list(PROTOCOL_PRESETS)), default="standard", show_default=True,
              help="Timing protocol preset.")
@click.option("--budget", type=float, help="Seconds each implementation may take, compilation included "
                                           "(default: the protocol's).")
@click.option("--out", type=click.Path(dir_okay=False), help="Append results to this JSON-lines bundle.")
@click.option("--server", help="Post results to this KernelIndex server's /api/v1/reruns; RUN_IDs are looked up "
                               "there (no local database needed).")
@click.option("--token", envvar="KERNELINDEX_RERUN_TOKEN", help="Rerun-host token for --server.")
@with_appcontext
def rerun_command(run_ids, external_ids, kernels, passes, assignments, dtype, implementations, left_out, metrics,
                  target, device_index, preset, budget, out, server, token):
    """Re-measure runs on this host and record KernelIndex reruns.

    Exits 0 once every result is recorded, passed or failed (a failed result, its reason included, is a record
    too: comparators fail correctness checks); non-zero when the rerun cannot start or its results cannot be
    recorded.
    """
    run_ids = tuple(dict.fromkeys(run_ids))  # --server counts and fetches them: each once
    if passes and not kernels:
        raise click.UsageError("--pass selects among --kernel runs; give --kernel too")
    if dtype and not (kernels and assignments):
        raise click.UsageError("--dtype is the dtype of workloads made from --param for a --kernel no run has; "
                               "give --kernel and --param too")
    if not (run_ids or external_ids or kernels):
        raise click.UsageError("name runs to rerun: RUN_ID..., --external-id or --kernel")
    if server and not token:
        raise click.UsageError("--server needs --token (or KERNELINDEX_RERUN_TOKEN)")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise click.UsageError(f"--budget is a number of seconds above 0, not {budget}")
    if budget is not None and budget > MAX_BUDGET_SECONDS:
        raise click.UsageError(f"--budget is at most {MAX_BUDGET_SECONDS} seconds (a week), not {budget:g}")
    rights = None
    if server is not None:  # an empty --server too: it must not mean this database
        server = checked_server(server)
        rights = token_rights(server, token)
    if out is not None:
        check_writable(out)
    target = chosen_target(target)
    device_index = chosen_device(target, device_index)
    metrics = metrics or METRICS
    try:
        check_metrics(metrics, target)
    except RerunError as error:
        raise click.UsageError(str(error)) from error
    runs = select_runs([] if server else run_ids, external_ids, kernels, passes)  # --server: its RUN_IDs
    registry = get_registry()
    sweep = parse_sweep(assignments)
    unpublished = [kernel for kernel in dict.fromkeys(kernels) if not any(run.kernel_id == kernel for run in runs)]
    try:
        fresh = [request for kernel in unpublished
                 for request in fresh_requests(kernel, passes, sweep, dtype, registry.family_definitions())]
    except RerunError as error:
        raise click.UsageError(str(error)) from error
    if dtype and not fresh:
        raise click.UsageError("--dtype is for a --kernel no run has; the published runs have their own dtypes")
    protocol = protocol_document(preset, target, budget)
    try:
        environment = capture_environment(target, device_for(target, device_index), registry)
    except RerunError as error:
        raise click.ClickException(str(error)) from error
    problem = rights.hardware_problem(environment["hardware"]) if rights else None
    if problem:
        raise click.ClickException(f"{server} would refuse the results: {problem}; nothing was measured")
    requests = harness_requests(runs, (environment.get("hardware") or {}).get("product"))
    if server:
        requests += fetched_requests(server, run_ids)
    try:
        requests = sweep_requests(requests, sweep) + fresh
    except RerunError as error:
        raise click.UsageError(str(error)) from error
    problem = workloads_problem(requests if assignments else [], registry.family_definitions())
    if problem:
        raise click.UsageError(problem)
    try:
        check_requests(requests, target, implementations, registry)
        chosen = [[name for name in chosen_implementations(request, target, implementations or None, registry)
                   if name not in left_out] for request in requests]
    except RerunError as error:
        raise click.ClickException(str(error)) from error
    declared = {implementation.name for request in requests
                for implementation in registry.implementations(registry.find(request.family, target))}
    unknown = sorted(set(left_out) - declared)
    if unknown:
        raise click.UsageError(f"--without {', '.join(unknown)}: no selected workload's family has that implementation")
    if not all(chosen):
        raise click.UsageError("--without leaves no implementation to rerun")
    progress(f"{len(requests)} workload(s) from {len(runs) + (len(run_ids) if server else 0)} run(s)"
             + (f" and --param for {', '.join(unpublished)}" if fresh else "") + f", protocol {protocol['name']}, "
             f"on {environment['hardware'].get('product', 'unknown')} ({target})")

    passed = failed = 0
    for number, (request, names) in enumerate(zip(requests, chosen), start=1):
        progress(f"[{number}/{len(requests)}]")
        try:
            results = rerun_workload(request, target=target, device_index=device_index,
                                     implementations=names, protocol=protocol,
                                     environment=environment, registry=registry, progress=progress, metrics=metrics)
        except RerunError as error:
            raise click.ClickException(str(error)) from error
        send_results(results, out, server, token)
        passed += sum(result.passed for result in results)
        failed += sum(not result.passed for result in results)
    progress(f"results: {passed} passed, {failed} failed")
