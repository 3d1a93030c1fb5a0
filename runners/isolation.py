"""Third-party implementations measured in a child process of their own (issue 25).

An implementation whose code is not all KernelIndex's own (its family's plugin, or the
module adding it to the family, comes from the plugins directory or an installed entry
point) is code the harness does not trust. In the process that times the built-in
implementations it could change what they are measured with or against (patch a function
no identity check guards, slow a library call, leave state behind), and interleaved with
them it would share their trials. So each one is measured alone, in a child process
started by the ``spawn`` method: a fresh interpreter that inherits nothing the parent
imported or patched (``fork`` would copy all of it). The child captures the harness's
functions before it imports any plugin code, loads only the family's plugin and the module
that provides the implementation, and runs for it the steps the parent runs for the
built-ins (``runners.rerun.measure``). It answers in JSON, never in pickles (unpickling
would run the child's code in the parent), and the parent checks the answer before
building results from it. A child that crashes, is still running at its deadline
(:data:`DEADLINE`) or answers garbage is stopped and gives a failed result that says so;
the others go on.

As with any use of ``spawn``, a script that reruns (``runners.rerun.rerun_workload``) must
guard its entry point (``if __name__ == "__main__":``): the child imports its main module again.

The child's own integrity checks are those the harness process runs: isolation keeps
third-party code away from the built-ins' measurement, and one third-party implementation
away from another's, not from its own. Some third-party code still runs in the harness
process, before or after the built-ins are measured, never while: each plugin's import at
discovery (one that replaces a guarded function is refused and the function put back;
a change no check guards goes unseen), the environment hooks, and a third-party family's
tensor shapes and ``workload_cost``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import time
from typing import Any, Callable, Mapping, Sequence

from runners.discovery import BUILTIN, LoadedPlugin

HARNESS_PROCESS, CHILD_PROCESS = "harness process", "child process"
"""Where an implementation was measured, as its result's integrity section records it (``isolation``)."""

DEADLINE = {"startSeconds": 120, "budgetFactor": 2}
"""How long a child may run: ``startSeconds`` to start the harness (a fresh interpreter imports torch) before any
plugin code runs, then ``budgetFactor`` times the implementation's time budget for everything else (its own calls
stay within the budget; the harness's own work, building workloads, references and the audit, gets as much again)."""


def protocol_section() -> dict[str, Any]:
    """The protocol document's ``isolation`` section: where each implementation is measured, and the children's
    deadline."""
    return {"harnessProcess": "the built-in implementations (their family's plugin and the module providing them "
                              "both KernelIndex's own), interleaved",
            "childProcess": "each third-party implementation alone, after the built-in ones and never interleaved "
                            "with them, in a child process of its own started by multiprocessing's spawn method, "
                            "which captures the harness's functions before importing the family's plugin and the "
                            "implementation's module, and answers in JSON; one that crashes, answers garbage or runs "
                            "past its deadline is stopped and its result failed",
            "deadline": dict(DEADLINE)}


ANSWER_BYTES = 16 * 2**20
"""The longest message a child may send; a longer one is garbage."""

STOP_SECONDS = 5
"""How long a child asked to terminate gets before it is killed."""


class ChildFailed(Exception):
    """A child process gave no usable answer, or answered that it could measure nothing; the message says how,
    ``violations`` what integrity violations it found (a plugin that tampered with the harness as it was imported)."""

    def __init__(self, message: str, violations: Sequence[str] = ()):
        super().__init__(message)
        self.violations = list(violations)


def third_party(family_plugin: LoadedPlugin, provider: LoadedPlugin) -> bool:
    """Whether measuring an implementation runs code that is not KernelIndex's own: its family's plugin or the
    module that provides it (the family plugin, or a module adding to it) is not built in."""
    return family_plugin.origin != BUILTIN or provider.origin != BUILTIN


def conforms(value: Any, shape: Any) -> bool:
    """Whether JSON ``value`` has ``shape``: ``int``, ``float`` (finite), ``str``, ``dict``, ``None``, a tuple of
    alternatives, or a one-item list whose item is the shape of every element (``[[float]]``)."""
    if isinstance(shape, tuple):
        return any(conforms(value, alternative) for alternative in shape)
    if isinstance(shape, list):
        return isinstance(value, list) and all(conforms(item, shape[0]) for item in value)
    if shape is None:
        return value is None
    if shape in (int, float) and isinstance(value, bool):
        return False
    if shape is float:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, shape)


def run_in_child(target: Callable[[Any, Mapping[str, Any]], None], job: Mapping[str, Any], budget_seconds: float,
                 progress: Callable[[str], None]) -> Any:
    """``target(Child(...), job)`` in a spawned child process; the value it answered with (plain JSON data).

    The child's progress lines are passed to ``progress`` as they come. Raises :class:`ChildFailed` when the
    child exits without answering, answers garbage or overruns :data:`DEADLINE`; it is stopped in every case.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(target, sender, dict(job)), name="kernelindex-isolated")
    process.start()
    sender.close()  # the child holds the only writing end: its exit is the end of the pipe
    try:
        return _answer(receiver, process, budget_seconds, progress)
    finally:
        receiver.close()
        _stop(process)


def _answer(receiver, process, budget_seconds: float, progress: Callable[[str], None]) -> Any:
    deadline, limit = time.monotonic() + DEADLINE["startSeconds"], f"{DEADLINE['startSeconds']} s to start"
    started = False
    while True:
        if not receiver.poll(max(deadline - time.monotonic(), 0)):
            raise ChildFailed(f"child process: no answer within {limit}; stopped")
        try:
            message = json.loads(receiver.recv_bytes(ANSWER_BYTES))
        except EOFError:
            process.join(STOP_SECONDS)
            raise ChildFailed(f"child process: {_ending(process.exitcode)} before answering") from None
        except (OSError, ValueError) as error:  # longer than ANSWER_BYTES, or not JSON
            raise ChildFailed(f"child process: answered garbage ({type(error).__name__}: {error})") from None
        kind = message.get("kind") if isinstance(message, dict) else None
        if kind == "started" and not started:  # once: a child cannot push its deadline back
            started, seconds = True, DEADLINE["budgetFactor"] * budget_seconds
            deadline, limit = time.monotonic() + seconds, f"{seconds:g} s ({DEADLINE['budgetFactor']} × its budget)"
        elif kind == "progress" and isinstance(message.get("text"), str):
            progress(message["text"][:1000])
        elif kind == "answer" and "value" in message:
            return message["value"]
        elif kind == "failed" and conforms(message.get("error"), str) and conforms(message.get("violations"), [str]):
            raise ChildFailed(message["error"][:2000], message["violations"][:100])
        else:
            raise ChildFailed(f"child process: answered garbage (a message {str(message)[:200]!r})")


def _ending(exit_code: int | None) -> str:
    if exit_code is None:
        return "closed its pipe"
    return f"was killed by signal {-exit_code}" if exit_code < 0 else f"exited with code {exit_code}"


def _stop(process) -> None:
    """End the child, answered or not, before anything else is measured: terminate it, then kill it."""
    if process.is_alive():
        process.terminate()
        process.join(STOP_SECONDS)
    if process.is_alive():
        process.kill()
        process.join()


class Child:
    """The child's side of the pipe: what it tells the parent, one JSON message at a time."""

    def __init__(self, connection):
        self.connection = connection

    def _send(self, kind: str, **fields: Any) -> None:
        self.connection.send_bytes(json.dumps({"kind": kind, **fields}).encode())

    def started(self) -> None:
        """The harness is ready and no plugin code has run yet: the budget's share of the deadline starts."""
        self._send("started")

    def progress(self, text: str) -> None:
        self._send("progress", text=text)

    def answer(self, value: Any) -> None:
        self._send("answer", value=value)

    def failed(self, error: str, violations: Sequence[str] = ()) -> None:
        """Nothing could be measured, and why."""
        self._send("failed", error=error, violations=list(violations))


def _child_main(target: Callable[[Child, Mapping[str, Any]], None], connection, job: Mapping[str, Any]) -> None:
    child = Child(connection)
    try:
        target(child, job)
    finally:
        connection.close()
