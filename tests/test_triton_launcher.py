"""The launch path of KernelIndex's Triton kernels: every launch is a programmatic dependent launch.

A kernel launched that way may start before the previous kernel in the stream has finished,
so each one must wait for it (``follow_previous_launch``) before it reads anything.
"""

import ast
import inspect
import textwrap

import pytest

from plugins._triton_launcher import Launcher
from plugins.fused_neighborhood_attention import triton_kernels as fused_neighborhood_attention
from plugins.multi_token_attention import triton_kernels as multi_token_attention


def launched_kernels():
    for module in (fused_neighborhood_attention, multi_token_attention):
        for name, value in vars(module).items():
            if isinstance(value, Launcher):
                yield f"{module.__name__}.{name}", python_function(value.kernel)


def python_function(kernel):
    """The Python function under a kernel's autotune, heuristics and jit wrappers."""
    while hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


def first_statement(function):
    body = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0].body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1 if has_docstring else 0]


def test_the_plugins_launch_kernels():
    assert len(list(launched_kernels())) >= 7  # 3 fused neighborhood attention launchers, 4 multi-token attention


@pytest.mark.parametrize("name, function", list(launched_kernels()), ids=lambda value: getattr(value, "__name__", value))
def test_every_launched_kernel_first_waits_for_the_previous_launch(name, function):
    statement = first_statement(function)
    assert isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call), name
    assert ast.unparse(statement.value) == "follow_previous_launch()", name
