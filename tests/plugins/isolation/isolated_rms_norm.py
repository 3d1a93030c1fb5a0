"""Implementations added to the built-in ``rms_norm`` on ``cpu`` that show where third-party code runs (issue 25).

A directory plugin is third-party: each of these is measured alone, in a child process of its own.

* ``records_pid`` is honest, and reports as settled details the process it ran in, the name this module was loaded
  under and the plugin modules loaded there;
* ``crashes`` ends its process while it prepares (``os._exit``);
* ``hangs`` blocks the alarm of its time budget and sleeps, so only its parent's deadline can stop it;
* ``answers_garbage`` sends its parent an answer of the wrong shape on the child's own pipe, then exits.
"""

import gc
import json
import multiprocessing.connection
import os
import signal
import sys
import time

import torch

from runners import hookimpl
from runners.types import AddedImplementation, Implementation, PreparedPass

PLUGIN_MODULES = ("plugins.", "kernelindex_plugins_dir.")


def rms_norm(input, weight, eps):
    x = input.float()
    return weight * (x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps)).to(input.dtype)


def honest(workload, pass_, settled_details=None):
    eps = workload.values["eps"]
    return PreparedPass.on_workload(lambda tensors: rms_norm(tensors["input"], tensors["weight"], eps), workload,
                                    pass_, settled_details=settled_details)


def where_it_ran():
    loaded = sorted(name for name in sys.modules if name.startswith(PLUGIN_MODULES))
    return {"pid": os.getpid(), "module": __name__, "pluginModules": loaded}


def prepare_records_pid(implementation, workload, pass_):
    return honest(workload, pass_, settled_details=where_it_ran)


def prepare_crashes(implementation, workload, pass_):
    os._exit(3)


def prepare_hangs(implementation, workload, pass_):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(3600)


def prepare_answers_garbage(implementation, workload, pass_):
    [pipe] = [found for found in gc.get_objects()
              if isinstance(found, multiprocessing.connection.Connection) and not found.closed and found.writable]
    pipe.send_bytes(json.dumps({"kind": "answer", "value": {"samples": "fast"}}).encode())
    os._exit(0)


PREPARED_BY = {"records_pid": prepare_records_pid, "crashes": prepare_crashes, "hangs": prepare_hangs,
               "answers_garbage": prepare_answers_garbage}


@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="rms_norm", target="cpu", prepare_pass=prepare,
                                implementation=Implementation(name, "KernelIndex tests"))
            for name, prepare in PREPARED_BY.items()]
