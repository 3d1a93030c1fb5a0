"""The KernelIndex plugin contract: every hook a plugin may implement, and nothing else.

A *kernel plugin* is one module that implements one kernel family on one hardware
target. It marks its functions with ``runners.hookimpl`` and is found by
:mod:`runners.discovery` (built-ins, ``KERNELINDEX_PLUGINS_DIR``, the ``kernelindex``
entry-point group). A minimal plugin::

    from runners import hookimpl
    from runners.types import Implementation, KernelPlugin

    PLUGIN = KernelPlugin(family=MY_FAMILY, target="cpu",
                          implementations=(Implementation("torch", "PyTorch", torch.__version__),))

    @hookimpl
    def kernel_plugin():
        return PLUGIN

    @hookimpl
    def build_workload(parameters, dtype, options, seed, device): ...

    @hookimpl
    def prepare_pass(implementation, workload, pass_): ...

    @hookimpl
    def reference_outputs(workload, pass_): ...

    @hookimpl
    def workload_cost(parameters, dtype, options, pass_): ...

An *implementation plugin* adds implementations to a family that another plugin declares
(a kernel author's own RMSNorm beside the built-in ones), in one module found the same three
ways. It implements one hook, and each record it returns carries the code that runs it::

    from runners import hookimpl
    from runners.types import AddedImplementation, Implementation

    def prepare_my_rms_norm(implementation, workload, pass_): ...  # as prepare_pass below

    @hookimpl
    def kernel_implementations():
        return [AddedImplementation(family="rms_norm", target="cpu", prepare_pass=prepare_my_rms_norm,
                                    implementation=Implementation("my_rms_norm", "My lab", "0.1"))]

Three kinds of hooks live here:

* **Family hooks** (:func:`kernel_plugin`, :func:`build_workload`, :func:`prepare_pass`,
  :func:`reference_outputs`, :func:`workload_cost`) are called on exactly one plugin:
  the one that declared the family and target being rerun. They are ``firstresult``,
  so the plugin's answer is the answer; a kernel plugin implements all five, and a
  module that implements any of the other four without :func:`kernel_plugin` is broken
  (they would never be called).
* **The implementation hook** (:func:`kernel_implementations`) is asked of each module
  once, at discovery; a module implements it or :func:`kernel_plugin`, not both (a
  family plugin lists its own implementations in its record).
* **Harness hooks** (:func:`generate_environment`, :func:`update_environment`) are
  called on every plugin. KernelIndex implements its own defaults as a built-in
  plugin (:mod:`runners.environment`); a plugin overrides or extends them.

A module that implements none of these hooks (its functions not marked with ``hookimpl``) is
broken, as is one that marks a function no hook here is named (a misspelling: the reason names
the nearest hook), one whose hook takes an argument its specification below does not pass (a
hook takes any of them, by name, in any order), and one whose import fails or exits
(``sys.exit``): discovery lists it with the reason and the other plugins are unaffected.

**Records are checked where they are made.** :class:`~runners.types.FamilyDefinition`,
:class:`~runners.types.Implementation`, :class:`~runners.types.KernelPlugin`,
:class:`~runners.types.AddedImplementation` and :class:`~runners.types.WorkloadCost` refuse a
field of another type than the one declared (``TypeError``, naming the field), a family or
implementation name the index could not store or address (1 to 120 characters for a family, 1
to 80 for an implementation, printable, no ``/``, no white space at either end:
:func:`runners.names.address_name_problem`), and a dtype that is not one of
:data:`~runners.types.WORKLOAD_DTYPES` (``ValueError``); a plugin whose hook makes such a record
is broken.

**Fair comparison.** Each :class:`~runners.types.Implementation` declares its *math mode*
on fp32 workloads (``fp32_math_mode``: ``ieee-fp32``, ``tf32`` or ``tf32-partial``; a bf16
or fp16 workload's mode is ``bf16`` or ``fp16``; the vocabulary is
:data:`runners.types.MATH_MODES`). It is resolved from the workload dtype, not at prepare
time, so a listing shows it (``mathModes`` by dtype) and every result records it
(``implementation.mathMode``). Where a comparator can be run in a faster mode (torch's
TF32 flags for fp32 matrix products), offer that configuration as a variant named
``<name>+tf32``, declared ``fp32_math_mode="tf32"`` and ``dtypes=("fp32",)``. A pass
whose precision depends on global settings sets them in its
:attr:`~runners.types.PreparedPass.context`, which the harness enters around each batch
of that pass's calls only, so the settings neither cost time per call nor leak into
another implementation. A pass builds its constants (masks, fill values, index
tensors) in :func:`prepare_pass`, not in every call, unless the upstream code under
test does so on purpose (then say so in the implementation's details): the harness
runs one call with host synchronisations made errors and records any it finds
(``timing.hostSynchronization``).

**Where plugin code runs.** Discovery imports every plugin in the harness process, to list
it, and so does every process that lists or measures plugins (``flask plugins``, the web app,
``flask import``, each rerun): keep the import quick and do slow work (building an extension)
on first use; discovery names on the log a plugin whose import runs past
:data:`~runners.discovery.SLOW_IMPORT_SECONDS`. A rerun measures the built-in
implementations there; an implementation from the plugins directory or an entry point (or of
a family such a plugin declares) is measured alone in a child process started by ``spawn``
(:mod:`runners.isolation`), which imports only its family's plugin and its own module afresh:
the hooks that build, prepare and check it run there, so a plugin must not count on state
another module or the host set up in the harness process.

Names used throughout: ``dtype`` is a short dtype name (``fp32``, ``bf16``, ``fp16``);
``parameters`` holds the family definition's normalized parameter names
(``seq``, ``batch``, ...); ``options`` holds configuration that changes the tensors
but not the sweep (``bias``), with the definition's defaults filled in; ``pass_`` is
one of ``forward``, ``backward``, ``full`` (trailing underscore: ``pass`` is a keyword).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from runners import hookspec

if TYPE_CHECKING:
    import torch

    from runners.types import (AddedImplementation, Implementation, KernelPlugin, PreparedPass, Workload,
                               WorkloadCost)


@hookspec(firstresult=True)
def kernel_plugin() -> KernelPlugin:
    """Declare what this plugin is: one family on one target, and its implementations.

    Fires once, when discovery registers the plugin; the answer is kept and shown by
    ``flask plugins`` and the web. List every implementation the plugin knows, also those
    whose library does not import here: those are declared with ``unavailable`` set to the
    reason (``liger_kernel does not import: No module named 'liger_kernel'``) and revision
    :data:`~runners.types.NOT_INSTALLED`, so that a server without the library still accepts
    results recorded where it runs, and a listing says why it does not run here. An
    implementation that never runs on the target (Liger's Triton kernels on ``cpu``) is left
    out. Each states its math mode, and a variant that runs only some dtypes
    (``liger+tf32``: fp32) says which; a rerun that names no implementations runs the
    available ones that run the workload's dtype, and naming an unavailable one fails
    with its reason before anything runs.

    ``firstresult``: the first answer that is not None is the answer.

    :return: the plugin's :class:`~runners.types.KernelPlugin` record, which lists at least one
        implementation (the others are added by :func:`kernel_implementations`); any other answer,
        None included, makes the plugin broken. A module that does not implement this hook is an
        implementation plugin (:func:`kernel_implementations`) or a harness plugin (environment
        hooks only).
    """


@hookspec(firstresult=True)
def kernel_implementations() -> Sequence[AddedImplementation]:
    """Add implementations to families that other plugins declare.

    Fires once, when discovery registers the module; the answer is kept, and each record
    joins its family and target: ``flask plugins`` and the web list it there with this
    module as its origin, a rerun of the family runs it with the family's own (or alone,
    with ``--implementation``; a third-party module's in a child process of its own,
    :mod:`runners.isolation`), and a server accepts results recorded with it. The family
    plugin builds the workloads, the float64 reference and the cost; a rerun calls the
    record's ``prepare_pass`` for its implementation, with the arguments and duties of
    :func:`prepare_pass`. Discovery checks every record once all plugins are registered, so
    the order in which plugins are found does not matter: a record naming a family and
    target no plugin declares, or an implementation name the family already has there,
    makes this module broken (reported with the reason, none of its records used). The
    module may also implement the harness hooks (:func:`update_environment`, to record its
    library's version).

    ``firstresult``: the first answer that is not None is the answer.

    :return: a sequence of one :class:`~runners.types.AddedImplementation` per implementation
        added, at least one, none listed twice: the family's name, the target, the
        :class:`~runners.types.Implementation` record (its name unique within the family on that
        target; math mode and dtypes as for :func:`kernel_plugin`) and its ``prepare_pass`` (a
        callable taking ``implementation, workload, pass_``, checked where the record is made). An
        empty sequence or any other answer makes the module broken.
    """


@hookspec(firstresult=True)
def build_workload(parameters: Mapping[str, Any], dtype: str, options: Mapping[str, Any],
                   seed: int, device: str) -> Mapping[str, torch.Tensor]:
    """Make one workload's input tensors, deterministically.

    Fires when a rerun rebuilds a workload: once per implementation (each gets its own
    copies, so none can disturb another's inputs), once per input set the protocol
    rotates through and once per correctness trial, each with its own seed. The same
    arguments must give the same values on every call and every host, so draw on the
    CPU from a seeded generator and then move to ``device``.

    ``firstresult``: the first answer that is not None is the answer.

    :param parameters: the workload's parameters, by the definition's normalized names.
    :param dtype: the tensors' dtype, short form.
    :param options: the workload's options, defaults filled in.
    :param seed: the seed of this set of values.
    :param device: a torch device string (``cpu``, ``cuda:0``).

    :return: every tensor the family definition derives for these values (names,
        shapes and dtypes are checked against it) plus ``grad_output``, on every pass: the
        fixed upstream gradient for the backward and full passes, shaped like the forward
        output. Tensors do not require grad; :func:`prepare_pass` decides that. A hook
        that raises, answers anything but a mapping of tensor names to ``torch.Tensor``
        (a list, None, a NumPy array among the values), tensors other than the
        definition's, no ``grad_output`` or tensors on another device than ``device`` stops the rerun
        before anything is timed, with a one-line
        :class:`~runners.rerun.RerunError` naming the hook, the plugin and what it
        returned (``flask rerun`` exits 1 with it; an implementation measured in a child
        process fails with it instead).
    """


@hookspec(firstresult=True)
def prepare_pass(implementation: Implementation, workload: Workload, pass_: str) -> PreparedPass:
    """Get one implementation ready to run one pass of a workload.

    Fires once per implementation and workload, before its warm-up; the harness then
    calls the returned ``setup`` and ``run`` many times while it copies new values into
    ``workload.tensors`` between calls, and before each call moves their storages' memory
    to a new address, so ``run`` must read the tensors each time (share their storage, e.g.
    ``torch.nn.Parameter(tensor)`` or a view, which move with them; never copy them here).
    Construction, compilation and autotuning may happen here or on the first call; all
    of it counts against the implementation's time budget. Build the pass's constants
    here, and set any global state it needs (TF32 flags) in the returned pass's
    ``context`` rather than inside ``run``: the harness enters it around correctness,
    warm-up and each batch of timed calls of this pass only.

    ``firstresult``: the first answer that is not None is the answer.

    :param implementation: one of the records this plugin's :func:`kernel_plugin` listed.
    :param workload: the tensors to compute on, and the values that made them.
    :param pass_: ``forward``, ``backward`` (the backward of a forward made in
        ``setup``, with ``grad_output`` as upstream gradient) or ``full`` (both, timed
        together). :meth:`runners.types.PreparedPass.on_workload` builds all three from a
        forward function of the workload's tensors (:meth:`~runners.types.PreparedPass.autograd`
        from any leaves).

    :return: a :class:`~runners.types.PreparedPass` whose ``run`` returns ``output``
        and/or ``grad_<tensor>`` outputs in the workload's dtype, freshly computed, computed
        in the implementation's declared math mode for the workload's dtype. A hook that
        raises or answers anything else (None, a bare function) fails that implementation's
        result alone, its error saying what the hook answered; the other implementations run.
    """


@hookspec(firstresult=True)
def reference_outputs(workload: Workload, pass_: str) -> Mapping[str, torch.Tensor]:
    """Compute the float64 answer that implementations are checked against.

    Fires once per correctness trial, just before the implementation under test runs
    on the same tensors. Use the family's one reference formulation, upcast to float64
    (``PreparedPass.on_workload(..., float64=True)`` makes the copies and the upstream gradient,
    and its ``run_once()`` returns the outputs). The answer shares the device with the workload
    and every implementation's outputs: where float64 copies and their autograd graph would not
    fit beside them, compute it in slices of independent rows (the built-in multi-token attention
    families run one batch element at a time, their weight gradients summed:
    ``plugins._family.reference_by_batch_element``).

    ``firstresult``: the first answer that is not None is the answer.

    :param workload: the tensors of this trial (in the workload's dtype).
    :param pass_: the pass being checked.

    :return: float64 tensors under the same names :func:`prepare_pass`'s ``run``
        returns; every one of them is compared. A hook that raises, or answers anything
        but a mapping of output names to ``torch.Tensor``, stops the rerun at its first
        correctness trial as :func:`build_workload`'s does: a one-line
        :class:`~runners.rerun.RerunError` naming the hook, the plugin and what it
        returned.
    """


@hookspec(firstresult=True)
def workload_cost(parameters: Mapping[str, Any], dtype: str, options: Mapping[str, Any],
                  pass_: str) -> WorkloadCost:
    """Count the least work one call of a pass must do, so a run can show its distance from the hardware's limits.

    Fires when a rerun builds a workload (in each process that measures it), before anything
    runs; must not allocate tensors or need a device. A hook that fails, or answers anything but
    a :class:`~runners.types.WorkloadCost`, stops that rerun with its reason before anything is
    measured.

    Fires also on the server, once for each rerun result it imports (``POST /api/v1/reruns``,
    ``flask import kernelindex``), on the plugin of the result's target: a result whose cost is
    not this answer is refused (``app.importers.rerun_consistency``). There it runs in the web
    process, without a GPU, on a workload a rerun host sent (its parameters those the family
    names, its tensors, as ``derive_tensors`` gives them, no more elements than
    ``app.importers.rerun_submission.MAX_WORKLOAD_ELEMENTS``), so it must only count, quickly;
    a hook that fails there refuses the result.

    ``firstresult``: the first answer that is not None is the answer.

    :param parameters: the workload's parameters.
    :param dtype: the tensors' dtype, short form (sets bytes per element).
    :param options: the workload's options.
    :param pass_: the pass timed.

    :return: floating-point operations (a multiply-add is 2) of the necessary work, not
        of any particular formulation, and the bytes that must cross device memory
        (each input read once, each output written once): finite counts of at least zero.
    """


@hookspec(firstresult=True)
def generate_environment(target: str, device: str) -> dict[str, Any]:
    """Describe the machine a rerun runs on.

    Fires once per ``flask rerun``, before timing. KernelIndex's own answer
    (:mod:`runners.environment`, ``trylast``) reads the GPU through torch and
    ``nvidia-smi`` and the CPU through ``/proc/cpuinfo``; implement this only to
    replace it wholesale.

    ``firstresult``: the first answer that is not None is the answer.

    :param target: ``cpu`` or ``cuda``.
    :param device: the torch device string timed on.

    :return: ``{"hardware": {...}, "software": {...}, "host": ..., "target": ...,
        "cpu": {...}}``; ``hardware`` has at least ``vendor``, ``product`` and
        ``architecture`` (strings). A hook that raises, or an answer without them,
        stops the rerun (``flask rerun``, each ``flask worker`` consumer) with a
        message naming the hook; so does an :func:`update_environment` that raises, and an
        environment that is no JSON data (a set, a NaN) once both hooks have made it.
    """


@hookspec
def update_environment(environment: dict[str, Any], target: str, device: str) -> None:
    """Add to the environment that :func:`generate_environment` produced.

    Fires right after it, on every plugin. Add what your implementations depend on
    (a library's version, a clock setting) by changing ``environment`` in place.

    :param environment: the document to extend.
    :param target: ``cpu`` or ``cuda``.
    :param device: the torch device string timed on.
    :return: nothing; the return value is ignored.
    """
