"""Who vouches for rerun results, and what this server knows: the rules a result meets beyond its shape.

A result posted to ``/api/v1/reruns`` is vouched for by its token: it is recorded as the
token's host, whatever ``environment.host`` says (the claim is replaced, never trusted),
only for the token's GPU kinds, and only when observed while the token was valid: not
before it was issued, not in the future (both within ``RERUN_CLOCK_SKEW_SECONDS``).

A bundle imported with ``flask import kernelindex`` is vouched for by the operator who
imports it: recorded as ``--host`` when given, else as the host each result names (so
the committed bundles keep their host ``vm``). It is not in the future either.

Either way, only families and implementations that a plugin on this server declares are
accepted: a plugin declares its implementations also where their library does not import
(Liger-Kernel, transformers), so this server needs no GPU libraries to accept their results.
And only workloads the family defines: its parameters, options of the values it takes
(``FamilyDefinition.option_values``), tensors it can derive.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from runners.discovery import get_registry
from runners.names import name_problem
from runners.types import FamilyDefinition

from ..models import utcnow
from ..rerun_schemas import MAX_SAFE_INTEGER, gpu_name

HOST_LENGTH = 120  # Run.host


def naive_utc(moment: datetime) -> datetime:
    """An aware time as the naive UTC the database stores."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def host_problem(host: str) -> str | None:
    """Why a host name given on the command line, or named by a result its operator vouches for, cannot be recorded
    (``vm`` with a trailing space or a line break in it is another host that reads the same, whose results could
    count as a replication of ``vm``'s), or None."""
    return name_problem("a host", host, HOST_LENGTH)


@dataclass(frozen=True)
class Submission:
    """Who vouches for a batch of results, and when the server received it."""

    host: str | None = None  # None: each result's own environment.host (a bundle its operator vouches for)
    gpus: tuple[str, ...] = ()  # GPU kinds the token may post for; empty: any
    issued_at: datetime | None = None  # naive UTC; None: no token
    received_at: datetime = field(default_factory=utcnow)

    @classmethod
    def from_token(cls, token) -> "Submission":
        return cls(host=token.host, gpus=tuple(token.gpus or ()), issued_at=token.created_at)

    def vouched(self, result: dict) -> dict:
        """The result as it is recorded: its environment names the vouching host, when there is one."""
        if self.host is None:
            return result
        return {**result, "environment": {**result["environment"], "host": self.host}}

    def problem(self, result: dict, skew: timedelta) -> str | None:
        """Why the vouching host may not record this result, or None."""
        if self.host is None and "host" in result["environment"]:
            problem = host_problem(result["environment"]["host"])
            if problem:
                return f"environment.host: {problem}"
        observed = naive_utc(result["observedAt"])
        if observed > self.received_at + skew:
            return (f"observedAt {observed:%Y-%m-%d %H:%M:%S} UTC is in the future "
                    f"(received {self.received_at:%Y-%m-%d %H:%M:%S} UTC)")
        if self.issued_at and observed < self.issued_at - skew:
            return (f"observedAt {observed:%Y-%m-%d %H:%M:%S} UTC is before the token for host {self.host!r} "
                    f"was issued ({self.issued_at:%Y-%m-%d %H:%M:%S} UTC)")
        return None

    def scope_problem(self, result: dict) -> str | None:
        """Why the token may not post this result at all (a GPU model it does not serve), or None: a refusal of
        the token's rights (403), not of the result (400)."""
        return self.hardware_problem(result["environment"]["hardware"])

    def hardware_problem(self, hardware: dict) -> str | None:
        """Why the token may not post results measured on ``hardware`` (a rerun environment's), or None."""
        if self.gpus and not {gpu_name(hardware), hardware["product"]} & set(self.gpus):
            return f"the token for host {self.host!r} posts results for {', '.join(self.gpus)} only, " \
                   f"not {gpu_name(hardware)}"
        return None


def declared_implementations() -> dict[str, set[str]]:
    """Each family a plugin on this server declares, with the implementations its plugins name or other modules
    add to it (available here or not: results come from hosts that have the libraries)."""
    registry, declared = get_registry(), {}
    for plugin in registry.kernel_plugins:
        declared.setdefault(plugin.record.family.name, set()).update(
            implementation.name for implementation in registry.implementations(plugin))
    return declared


def unknown_problem(result: dict, declared: dict, definitions: dict[str, FamilyDefinition]) -> str | None:
    """Why the server does not know what this result measured (family, implementation, workload), or None."""
    family, implementation = result["family"], result["implementation"]["name"]
    if family not in declared:
        return f"no plugin on this server declares the family {family!r} (declared: {', '.join(sorted(declared))})"
    if implementation not in declared[family]:
        return (f"no plugin on this server declares the implementation {implementation!r} of {family} "
                f"(declared: {', '.join(sorted(declared[family]))})")
    return workload_problem(result["workload"], definitions[family])


MAX_WORKLOAD_ELEMENTS = 2 ** 38
"""The most elements a workload's tensors may hold: at one byte an element, more than the memory of any GPU
(256 GB), so no worker could build it."""


def workload_problem(workload: dict, definition: FamilyDefinition) -> str | None:
    """Why the family cannot derive this workload's tensors, or None."""
    names, expected = set(workload["parameters"]), set(definition.parameters)
    if names != expected:
        return f"{definition.name} workloads have the parameters {sorted(expected)}, not {sorted(names)}"
    problem = definition.option_problem(workload["options"])
    if problem:
        return problem
    try:
        tensors = definition.tensors({**workload["parameters"], **workload["options"]}, workload["dtype"])
    except KeyError as error:
        return f"{definition.name} cannot derive this workload's tensors without the option {error.args[0]!r}"
    except (ArithmeticError, TypeError, ValueError) as error:
        return f"{definition.name} cannot derive this workload's tensors: {error}"
    except Exception as error:  # a plugin's own bug (derive_tensors is third-party code): its results are refused
        return f"{definition.name}'s derive_tensors failed on this workload: {type(error).__name__}: {error}"
    if any(isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SAFE_INTEGER
           for tensor in tensors for size in tensor.shape):
        return f"{definition.name} derives empty or impossible tensors from this workload"
    elements = sum(math.prod(tensor.shape) for tensor in tensors)
    if elements > MAX_WORKLOAD_ELEMENTS:
        return (f"{definition.name} derives {elements:.3g} tensor elements from this workload, more than any GPU "
                f"holds (at most {MAX_WORKLOAD_ELEMENTS:.3g})")
    return None
