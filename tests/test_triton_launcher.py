"""The launch path of KernelIndex's Triton kernels: every launch is a programmatic dependent launch.

A kernel launched that way may start before the previous kernel in the stream has finished,
so each one must wait for it (``follow_previous_launch``) before it reads anything: on every
path through the kernel, no load, atomic or helper call comes before that wait. The host's
integer helpers agree with Triton's. A cached launch calls the launcher's C function with the
layout it parses, and only where the launcher is one whose layout is known; a bound launch (a per-shape
plan's) goes there straight after its first call, and only with aligned tensors. A lean apply of a family's
autograd function is its ``apply`` with less Python: the same outputs, graph and gradients, dead functorch
wrappers unwrapped, the forward alone where no gradient follows, and ``apply`` itself under a functorch
transform or a forward-mode dual level.
"""

import ast
import inspect
import textwrap

import pytest
import torch
import triton
from torch.autograd import forward_ad

import plugins._triton_launcher as triton_launcher
from plugins._triton_launcher import Launcher, _c_launch, aligned, cdiv, lean_apply, next_power_of_2
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


_READS_NOTHING = {"let_next_launch_start", "range", "min", "max", "float", "int"}  # callable before the wait


def is_wait(statement):
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and ast.unparse(statement.value.func) == "follow_previous_launch")


def may_read(node):
    """Whether ``node`` loads, adds atomically, or calls a helper of the kernel's module (which may load)."""
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        name = ast.unparse(call.func)
        if name == "tl.load" or name.startswith("tl.atomic_"):
            return True
        if isinstance(call.func, ast.Name) and name not in _READS_NOTHING:
            return True
    return False


def waits_before_reading(statements):
    """``(ok, waited)`` after running through ``statements``: ok while nothing may read before a wait,
    following each branch of an ``if`` (a path waited only if both branches did)."""
    waited = False
    for statement in statements:
        if waited:
            return True, True
        if is_wait(statement):
            waited = True
        elif isinstance(statement, ast.If):
            if may_read(statement.test):
                return False, False
            body_ok, body_waited = waits_before_reading(statement.body)
            else_ok, else_waited = waits_before_reading(statement.orelse)
            if not (body_ok and else_ok):
                return False, False
            waited = body_waited and else_waited
        elif may_read(statement):
            return False, False
    return True, waited


def kernel_body(function):
    body = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0].body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1 if has_docstring else 0:]


def test_the_plugins_launch_kernels():
    assert len(list(launched_kernels())) >= 7  # 3 fused neighborhood attention launchers, 4 multi-token attention


@pytest.mark.parametrize("name, function", list(launched_kernels()),
                         ids=lambda value: getattr(value, "__name__", value))
def test_every_launched_kernel_waits_for_the_previous_launch_before_it_reads(name, function):
    body = kernel_body(function)
    ok, _ = waits_before_reading(body)
    assert ok, name
    assert any(is_wait(node) for statement in body for node in ast.walk(statement)), name


def test_the_wait_check_follows_both_branches_of_an_if():
    def parse(source):
        return ast.parse(textwrap.dedent(source)).body

    waits_in_one_branch_reads_in_the_other = parse("""
        if pid < 4:
            follow_previous_launch()
            x = tl.load(p)
        else:
            y = tl.load(q)
        """)
    waits_in_one_branch_stores_in_the_other = parse("""
        if pid < 4:
            follow_previous_launch()
            x = tl.load(p)
        else:
            tl.store(q, tl.zeros((4,), dtype=tl.float32))
        """)
    reads_after_a_branch_that_waited_on_one_path = parse("""
        if pid < 4:
            follow_previous_launch()
        x = _helper(p)
        """)
    assert waits_before_reading(waits_in_one_branch_reads_in_the_other) == (False, False)
    assert waits_before_reading(waits_in_one_branch_stores_in_the_other) == (True, False)
    assert waits_before_reading(reads_after_a_branch_that_waited_on_one_path) == (False, False)


def test_host_integer_helpers_agree_with_tritons():
    for n in range(1, 5000):
        assert next_power_of_2(n) == triton.next_power_of_2(n)
        for divisor in (1, 3, 16, 64, 4096):
            assert cdiv(n, divisor) == triton.cdiv(n, divisor)


class _LauncherOfTriton36:
    """A stand-in for Triton 3.5's and 3.6's ``CudaLauncher``: its call signature, attributes, and a C
    ``launch`` that records what it was given."""

    launch_cooperative_grid, launch_pdl = False, True

    def __init__(self, global_scratch_size=0):
        self.global_scratch_size, self.profile_scratch_size = global_scratch_size, 0
        self.launched = []

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        raise AssertionError("a cached launch goes to the C function, not through this")

    def launch(self, *arguments):
        self.launched.append(arguments)


class _LauncherOfTriton39(_LauncherOfTriton36):
    def __call__(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata, launch_enter_hook,
                 launch_exit_hook, *args):
        raise AssertionError("an unknown layout goes through the runner")


class _CompiledKernel:
    function, packed_metadata = 0xF00, (4, 1, 1024)

    def __init__(self, launcher):
        self.run = launcher
        self.runs = []

    def __getitem__(self, grid):
        return lambda *arguments, stream=None: self.runs.append((grid, stream, arguments))


def test_a_cached_launch_calls_the_c_function_with_the_layout_it_parses():
    compiled = _CompiledKernel(_LauncherOfTriton36())
    launch, bound = _c_launch(compiled, (7, 2, 1))
    launch(7, 2, 1, 0xBEEF, *bound, "tensor", 1024, "constexpr")
    assert compiled.run.launched == [(7, 2, 1, 0xBEEF, 0xF00, False, True, None, None, (4, 1, 1024), None, None, None,
                                      "tensor", 1024, "constexpr")]
    assert compiled.runs == []


@pytest.mark.parametrize("launcher", [_LauncherOfTriton39(), _LauncherOfTriton36(global_scratch_size=256)],
                         ids=["another signature", "needs scratch memory"])
def test_a_launcher_of_unknown_layout_or_needing_scratch_is_launched_through_tritons_runner(launcher):
    compiled = _CompiledKernel(launcher)
    launch, bound = _c_launch(compiled, (7, 2, 1))
    launch(7, 2, 1, 0xBEEF, *bound, "tensor", 1024)
    assert compiled.runs == [((7, 2, 1), 0xBEEF, ("tensor", 1024))]
    assert launcher.launched == []


class _RecordingLauncher(Launcher):
    """A :class:`Launcher` whose ordinary launch records its call and caches a recording C launch, as a compiled
    kernel's would be cached."""

    def __init__(self):
        self.compiled, self.ordinary, self.launched = {}, [], []

    def __call__(self, grid, args, **constants):
        self.ordinary.append((grid, args, constants))
        if triton_launcher._ENABLED:
            key = self._key(torch.cuda.current_device(), args, constants)
            self.compiled[key] = (lambda *arguments: self.launched.append(arguments), ("bound",), (3, 1, 1), ["tail"])


@pytest.fixture
def fast_launch(monkeypatch):
    monkeypatch.setattr(triton_launcher, "_ENABLED", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0xBEEF, raising=False)


def test_a_bound_launch_goes_to_the_compiled_kernel_after_its_first_call(fast_launch):
    launcher = _RecordingLauncher()
    grid = (7,)
    launch = launcher.bind(grid, (1024, 7), BLOCK=64)
    first, second = torch.zeros(4), torch.zeros(4)
    launch(first, second)
    assert launcher.ordinary == [(grid, (first, second, 1024, 7), {"BLOCK": 64})] and launcher.launched == []
    launch(second, first)
    launch(first, first)
    assert len(launcher.ordinary) == 1
    assert launcher.launched == [(3, 1, 1, 0xBEEF, "bound", second, first, 1024, 7, "tail"),
                                 (3, 1, 1, 0xBEEF, "bound", first, first, 1024, 7, "tail")]


def test_a_bound_launch_under_the_interpreter_launches_the_ordinary_way_every_time(monkeypatch):
    monkeypatch.setattr(triton_launcher, "_ENABLED", False)
    launcher = _RecordingLauncher()
    launch = launcher.bind((2, 2), (5,))
    tensor = torch.zeros(2)
    launch(tensor)
    launch(tensor)
    assert launcher.ordinary == [((2, 2), (tensor, 5), {})] * 2 and launcher.launched == []


def test_aligned_copies_only_tensors_that_do_not_start_on_16_bytes():
    storage = torch.arange(40, dtype=torch.float32)
    whole = storage.view(5, 8)
    assert aligned(whole) is whole
    inside = storage[1:33].view(4, 8)  # starts 4 bytes in
    copy = aligned(inside)
    assert copy.data_ptr() % 16 == 0 and torch.equal(copy, inside)
    strided = whole[:, ::2]
    assert aligned(strided).is_contiguous() and torch.equal(aligned(strided), strided)


class _Scale(torch.autograd.Function):
    """``x * factor (+ shift)``, differentiable in ``x``: an autograd function of the families' form."""

    @staticmethod
    def forward(ctx, x, factor, shift):
        ctx.factor = factor
        return x * factor if shift is None else x * factor + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None, None


def test_a_lean_apply_gives_what_apply_gives_and_the_same_gradients():
    lean = lean_apply(_Scale)
    for shift in (None, torch.full((3,), 0.5)):
        x = torch.randn(3, requires_grad=True)
        out = lean(x, 3.0, shift)
        assert type(out.grad_fn) is type(_Scale.apply(x, 3.0, shift).grad_fn)
        out.backward(torch.tensor([1.0, 2.0, 4.0]))
        assert torch.equal(out.detach(), _Scale.apply(x.detach(), 3.0, shift))
        assert torch.equal(x.grad, torch.tensor([3.0, 6.0, 12.0]))


def test_a_lean_apply_runs_the_forward_alone_where_no_gradient_follows(monkeypatch):
    applied, contexts = [], []
    monkeypatch.setattr(_Scale, "apply", classmethod(lambda cls, *args: applied.append(args)))
    forward = _Scale.forward
    monkeypatch.setattr(_Scale, "forward", staticmethod(lambda ctx, *args: contexts.append(ctx) or forward(ctx, *args)))
    lean = lean_apply(_Scale)
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        assert torch.equal(lean(x, 2.0, None), x.detach() * 2)
    plain = lean(x.detach(), 2.0, torch.ones(3))
    assert plain.grad_fn is None and not plain.requires_grad and torch.equal(plain, x.detach() * 2 + 1)
    assert not any(isinstance(ctx, torch.autograd.function.FunctionCtx) for ctx in contexts)  # no graph node made
    assert lean(x, 2.0, None).grad_fn is not None and applied == []  # the C++ apply, not apply's wrapper
    assert isinstance(contexts[-1], torch.autograd.function.FunctionCtx)


def test_a_lean_apply_unwraps_a_dead_functorch_wrapper_as_apply_does():
    escaped = []
    torch.func.grad(lambda t: escaped.append(t) or (t * 2).sum())(torch.ones(3))
    (dead,) = escaped  # tracked by a transform that has ended
    out = lean_apply(_Scale)(dead, 2.0, None)
    assert out.grad_fn is None and torch.equal(out, torch.full((3,), 2.0))


def test_a_lean_apply_under_a_functorch_transform_is_apply_itself():
    def raised(apply):
        with pytest.raises(RuntimeError) as caught:
            torch.func.grad(lambda t: apply(t, 2.0, None).sum())(torch.ones(3))
        return str(caught.value)

    assert "setup_context" in raised(lean_apply(_Scale)) and raised(lean_apply(_Scale)) == raised(_Scale.apply)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch's forward AD
def test_a_lean_apply_under_forward_mode_autodiff_is_apply_itself():
    def raised(apply):
        with forward_ad.dual_level(), pytest.raises(NotImplementedError, match="jvp") as caught:
            apply(forward_ad.make_dual(torch.ones(3), torch.ones(3)), 2.0, None)
        return str(caught.value)

    assert raised(lean_apply(_Scale)) == raised(_Scale.apply)  # no jvp: an error, not a dropped tangent


def test_a_lean_apply_refuses_a_function_with_setup_context():
    class WithSetup(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

    with pytest.raises(TypeError, match="setup_context"):
        lean_apply(WithSetup)
