"""PyTorch -> fusedsl: `fs.from_torch(module_or_fn, *example_inputs)` and `fs.torch_backend`.

The model is captured with `torch.export` (ATen ops with static shapes, parameters and
buffers lifted to inputs) and functionalized (`run_decompositions({})`: `relu_`, `y += x`
become their out-of-place ops); ops the ATen table (`torch_ops.py`) lacks but torch can
decompose are decomposed by torch's own table, once.  Then each ATen op is replayed with
the fusedsl op of the same meaning, located at the user's source line from the node's
stack trace.  torch.export's metadata asserts are dropped; nodes that depend on no model
input (arange, linspace, a torch.tensor constant) are computed once at import: a one-value
result becomes a broadcast 0-d constant, any other a bound weight.  An op without a mapping
raises UnsupportedOpError naming the ATen op, the model's line and the nearest supported op;
data-dependent control flow, data-dependent result sizes and random ops are refused at the
model's line.  Imported only when used: `import fusedsl` never imports torch.
"""
from __future__ import annotations

import contextlib
import difflib
import inspect
import io
import logging
import os
import re
import sys
import traceback
import types
import warnings

import numpy as np

from ..errors import ArgumentError, Loc, UnsupportedOpError, at_user_location, is_internal_file, user_facing, \
    user_frame
from . import torch_ops, torch_range, torch_window
from .common import ImportedKernel, as_array, guard_magnitude, make_function, sanitize
from .int_range import Span, array_span
from .torch_ops import DATA_DEPENDENT, METADATA_ASSERTS, RANDOM, Missing, Unsupported, base_name

SUPPORTED = ("elementwise ops, sum/mean/amax/amin/var/std, softmax/log_softmax, layer_norm, rms_norm, group_norm, "
             "linear/matmul/mm/bmm/addmm, conv2d, batch_norm (inference), view/reshape/permute/transpose/expand/"
             "repeat/unsqueeze/squeeze/flatten, cat/stack/split/chunk/unbind, slice/select/narrow, embedding, "
             "zeros/ones/full/*_like and constant creation ops")


def _torch():
    try:
        import torch
    except ImportError:   # the optional extra is not installed
        raise ArgumentError("fs.from_torch needs PyTorch: pip install 'fusedsl[torch]'", loc=user_frame()) from None
    return torch


# ---- locations -------------------------------------------------------------------------------
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _is_library_file(file: str) -> bool:
    """A frame of torch or of fusedsl itself, decided by the packages' own directories: a user
    whose project lives under a folder named `fusedsl/` or `torch/` keeps their frames."""
    if is_internal_file(file) or file.startswith("<"):
        return True
    torch_dir = os.path.dirname(os.path.abspath(_torch().__file__))
    return os.path.abspath(file).startswith(torch_dir + os.sep)


def node_loc(node) -> Loc | None:
    """The user's source line of an exported node: the innermost stack-trace frame outside
    torch (and fusedsl)."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not trace:
        return None
    best = None
    for file, line in _FRAME.findall(trace):
        if _is_library_file(file):
            continue
        best = Loc(file, int(line))
    return best


def _traceback_loc(exc: BaseException) -> Loc | None:
    """The innermost frame of an exception's traceback in the user's code (the model line that
    made torch.export fail)."""
    best = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if not _is_library_file(frame.filename):
            best = Loc(frame.filename, frame.lineno)
    return best


def _op_name(target) -> str:
    name = getattr(target, "__name__", None) or str(target)
    text = str(target)
    return text if text.startswith("aten.") else f"aten.{name}"


# ---- capture ---------------------------------------------------------------------------------
def _export(module, example, loc: Loc | None):
    """torch.export of the module, functionalized; torch's failures become located
    UnsupportedOpErrors (torch's own log lines and graph dumps of a failed export are dropped)."""
    torch = _torch()
    captured = io.StringIO()
    shapes_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = shapes_log.level
    shapes_log.setLevel(logging.ERROR)   # "Unable to find user code ..." before a data-dependent failure
    try:
        with contextlib.redirect_stderr(captured), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            ep = torch.export.export(module, example)
            ep = ep.run_decompositions({})
    except Exception as exc:   # noqa: BLE001 (every capture failure is reported in fusedsl's terms)
        where = _traceback_loc(exc) or loc or user_frame()
        text = str(exc)
        if "data-dependent" in text or type(exc).__name__ in ("GuardOnDataDependentSymNode",
                                                               "PendingUnbackedSymbolNotFound"):
            raise UnsupportedOpError(
                "this line needs a tensor's value in Python (data-dependent control flow: `if`, `while`, "
                "`bool()`, `.item()` on a tensor); a fused kernel is one static graph",
                loc=where, hint="compute both branches and select with torch.where, or move the decision "
                                "out of the model") from None
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise UnsupportedOpError(f"torch.export cannot capture the model: {type(exc).__name__}: {first[:300]}",
                                 loc=where, hint="fs.from_torch imports what torch.export captures; "
                                                 "see the torch.export documentation") from None
    finally:
        shapes_log.setLevel(level)
    sys.stderr.write(captured.getvalue())   # a successful export's warnings still reach the user
    return ep


def _decompose_unsupported(ep, table):
    """Let torch decompose the ops the ATen table lacks (hardswish, logsumexp, cross_entropy, ...),
    so only what neither has remains.  Runs at most three rounds (a decomposition can emit
    further composite ops)."""
    torch = _torch()
    decomps = torch.export.default_decompositions()
    for _ in range(3):
        wanted = {}
        for node in ep.graph.nodes:
            if node.op == "call_function" and node.target not in table and node.target in decomps \
                    and base_name(node.target) not in METADATA_ASSERTS | RANDOM | DATA_DEPENDENT:
                wanted[node.target] = decomps[node.target]
        if not wanted:
            return ep
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = ep.run_decompositions(wanted)
    return ep


def _table() -> dict:
    """ATen op -> rule: the op table and the window ops (pooling, convolution variants)."""
    torch = _torch()
    return {**torch_ops.aten_table(torch), **torch_window.window_table(torch.ops.aten)}


def _supported_names(table) -> list[str]:
    return sorted({base_name(t) for t in table if str(t).startswith("aten.")})


# ---- import-time folding ---------------------------------------------------------------------
def _fold_constants(graph):
    """The values of call nodes that depend on no placeholder (arange, linspace, eye,
    torch.tensor constants, ops on them), computed once with torch."""
    torch = _torch()
    values: dict = {}

    def arg(a):
        if hasattr(a, "op") and hasattr(a, "name"):
            return values[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(arg(x) for x in a)
        return a

    def deps(a):
        if hasattr(a, "op") and hasattr(a, "name"):
            yield a
        elif isinstance(a, (list, tuple)):
            for x in a:
                yield from deps(x)
        elif isinstance(a, dict):
            for x in a.values():
                yield from deps(x)

    for node in graph.nodes:
        if node.op != "call_function" or base_name(node.target) in METADATA_ASSERTS | RANDOM | DATA_DEPENDENT:
            continue
        inputs = list(deps(node.args)) + list(deps(node.kwargs))
        if any(d.name not in values for d in inputs):
            continue
        try:
            with torch.no_grad():
                values[node.name] = node.target(*arg(node.args), **arg(dict(node.kwargs)))
        except Exception:   # noqa: BLE001 (not foldable: replayed like any node, errors located there)
            continue
    return values


def _uniform(value):
    """(True, python scalar) when a folded tensor holds one value everywhere."""
    flat = value.reshape(-1)
    if flat.numel() == 0:
        return False, None
    first = flat[0]
    if bool((flat == first).all()) and not bool(first.isnan() if value.is_floating_point() else False):
        return True, first.item()
    return False, None


def _torch_array(value, name, what):
    """A folded tensor (or a weight: `what` says which) as an array in a dtype fusedsl has
    (float64 -> float32)."""
    torch = _torch()
    if value.dtype == torch.float64:
        value = value.float()
    return as_array(value, name, what)


# ---- replay ----------------------------------------------------------------------------------
class GraphReplay:
    """Replays an exported FX graph on fusedsl tensors."""

    def __init__(self, graph, placeholders: list[str], table, folded: dict, computed: set, outputs: list):
        self.graph = graph
        self.placeholders = placeholders
        self.table = table
        self.computed = computed       # nodes computed at import (not replayed)
        self.folded = folded           # those read by the replay -> ("const", value, dtype, shape) or ("param", name)
        self.outputs = outputs         # the output node's user outputs (FX nodes or constants)
        self.guards: set = set()       # casts whose input's max |value| is an extra output (int_range guard)

    def check(self) -> None:
        """Every call is mapped, or UnsupportedOpError at the first one that is not."""
        names = None
        pending = [n for n in self.graph.nodes if n.op == "call_function" and n.name not in self.computed
                   and n.target not in self.table and base_name(n.target) not in METADATA_ASSERTS]
        # a data-dependent or random op is the reason, wherever it is; then the first missing op
        first = [n for n in pending if base_name(n.target) in DATA_DEPENDENT | RANDOM | {"item", "_local_scalar_dense"}]
        for node in first + pending:
            base = base_name(node.target)
            op = _op_name(node.target)
            if base in ("item", "_local_scalar_dense"):
                self._unsupported(node, f"{op}: the model reads a tensor's value into Python (.item(), float(t)); "
                                        "a fused kernel keeps values on the device",
                                  hint="keep it a tensor: x * t instead of x * t.item()")
            if base in DATA_DEPENDENT:
                self._unsupported(node, f"{op}: its result's size depends on the data; fused kernels have static "
                                        "shapes", hint="keep the shape static, e.g. torch.where(mask, x, 0) "
                                                       "instead of x[mask] or masked_select")
            if base in RANDOM:
                self._unsupported(node, f"{op} is a random op; a fused kernel is a pure function of its inputs",
                                  hint="pass the random tensor in as an input (or call model.eval() for dropout)")
            names = names or _supported_names(self.table)
            near = difflib.get_close_matches(base, names, n=1, cutoff=0.6)
            nearest = f"; the nearest supported op is aten.{near[0]}" if near else ""
            self._unsupported(node, f"{op} is not supported by fusedsl's importer{nearest}")

    @staticmethod
    def _unsupported(node, message, hint=None):
        raise UnsupportedOpError(message, loc=node_loc(node) or user_frame(),
                                 hint=hint or f"fusedsl imports: {SUPPORTED}")

    def __call__(self, args):
        env = dict(zip(self.placeholders, args))
        trace = next((a.trace for a in args if hasattr(a, "trace")), None)

        def load(a, node):
            if hasattr(a, "op") and hasattr(a, "name") and hasattr(a, "meta"):
                if a.name not in env:
                    env[a.name] = self._materialize(a, env, trace)
                value = env[a.name]
                if isinstance(value, Missing):
                    self._unsupported(node, f"{_op_name(node.target) if node.op == 'call_function' else 'output'}"
                                            f" uses {value.why}")
                return value
            if isinstance(a, (list, tuple)):
                return type(a)(load(x, node) for x in a)
            return a

        guarded = []
        for node in self.graph.nodes:
            if node.op != "call_function" or node.name in self.computed:
                continue
            if base_name(node.target) in METADATA_ASSERTS:
                continue
            with at_user_location(node_loc(node)):
                rule = self.table[node.target]
                kwargs = load(dict(node.kwargs), node)
                if getattr(rule, "needs_trace", False):
                    kwargs = {**kwargs, "_trace": trace, "_out": self._out_type(node)}
                try:
                    env[node.name] = rule(*load(node.args, node), **kwargs)
                except Unsupported as exc:
                    self._unsupported(node, f"{_op_name(node.target)}: {exc}")
                if node.name in self.guards:
                    guarded.append(guard_magnitude(load(node.args[0], node)))
        output = next(n for n in self.graph.nodes if n.op == "output")
        with at_user_location(None):
            outs = tuple(load(o, output) for o in self.outputs) + tuple(guarded)
        return outs[0] if len(outs) == 1 else outs

    def _materialize(self, node, env, trace):
        """A folded node's value in the replay: a broadcast constant or its bound weight."""
        kind = self.folded.get(node.name)
        if kind is None:
            raise KeyError(node.name)
        if kind[0] == "param":
            return env[kind[1]]
        _, value, dtype_name, shape = kind
        with at_user_location(node_loc(node)):
            if trace is None:
                raise UnsupportedOpError("a model whose outputs depend on no tensor input is not supported",
                                         loc=node_loc(node) or user_frame())
            return torch_ops.filled(trace, shape, value, dtype_name)

    @staticmethod
    def _out_type(node):
        val = node.meta.get("val")
        if val is None:
            raise Unsupported("the export recorded no result type for this node")
        return tuple(int(d) for d in val.shape), torch_ops._fs_dtype(val.dtype)


def _exported_kernel(ep, name: str, options: dict, source: Loc | None,
                     constant_args: dict | None = None) -> ImportedKernel:
    from torch.export.graph_signature import InputKind, OutputKind
    table = _table()
    ep = _decompose_unsupported(ep, table)
    graph = ep.graph
    for spec in ep.graph_signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            node = next((n for n in graph.nodes if n.name == getattr(spec.arg, "name", None)), None)
            what = "its input" if spec.kind == OutputKind.USER_INPUT_MUTATION else "a buffer"
            raise UnsupportedOpError(f"the model writes into {what} {spec.target!r} in place; a fused kernel "
                                     "returns new arrays and leaves its inputs alone",
                                     loc=(node_loc(node) if node is not None else None) or source or user_frame(),
                                     hint="return the new value instead of updating the tensor in place")
    used = {n.name for n in graph.nodes if n.op == "placeholder" and n.users}
    user_names, weight_names, weights = [], [], []
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    range_inputs, position = [], 0   # (name, name, call position, dtype) per user input, for the range check
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            position += 1
            if type(spec.arg).__name__ == "ConstantArgument":   # None or a Python number: baked in
                continue
            user_names.append(spec.arg.name)
            val = placeholders[spec.arg.name].meta.get("val") if spec.arg.name in placeholders else None
            range_inputs.append((spec.arg.name, spec.arg.name, position - 1,
                                 torch_range.torch_dtype_name(getattr(val, "dtype", None))))
        elif spec.arg.name in used:
            value = ep.state_dict.get(spec.target) if spec.target in ep.state_dict else ep.constants[spec.target]
            weight_names.append(spec.arg.name)
            what = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}.get(spec.kind, "constant")
            weights.append(_torch_array(value.detach(), spec.target, what))
    values = _fold_constants(graph)
    folded = {}
    for node in graph.nodes:
        # only the folded values an unfolded node (or the output) reads are materialized
        if node.name not in values or all(u.name in values for u in node.users):
            continue
        value = values[node.name]
        if not hasattr(value, "shape") or not hasattr(value, "dtype") or str(value.dtype) not in \
                torch_ops.TORCH_DTYPES:
            folded[node.name] = ("python", value)
            continue
        one, scalar = _uniform(value)
        if one:
            folded[node.name] = ("const", scalar, torch_ops.TORCH_DTYPES[str(value.dtype)], tuple(value.shape))
        else:
            pname = f"const_{node.name}"
            weight_names.append(pname)
            weights.append(_torch_array(value, node.name, "constant"))
            folded[node.name] = ("param", pname)
    # a non-tensor folded value (a tuple from split of a constant) is read through getitem only
    folded = {k: v for k, v in folded.items() if v[0] != "python"}
    output = next(n for n in graph.nodes if n.op == "output")
    out_args = output.args[0] if isinstance(output.args[0], (list, tuple)) else (output.args[0],)
    user_outs = [a for a, spec in zip(out_args, ep.graph_signature.output_specs)
                 if spec.kind == OutputKind.USER_OUTPUT]
    replay = GraphReplay(graph, user_names + weight_names, table, folded, set(values), user_outs)
    replay.check()
    fn = make_function(name, [sanitize(n) for n in user_names + weight_names], replay)
    kernel = ImportedKernel(fn, options, user_names, weights, source, constant_args=constant_args)
    # the int64 values' bounds: the weights' and folded constants' ranges are known now
    fixed = {n: array_span(w) for n, w in zip(weight_names, weights)}
    for node_name, kind in folded.items():
        if kind[0] == "const":
            fixed[node_name] = Span(int(kind[1]), int(kind[1])) if isinstance(kind[1], (bool, int)) else None
        else:
            fixed[node_name] = fixed.get(kind[1])
    kernel.range_check = torch_range.range_check(graph, range_inputs, fixed, set(values), base_name, node_loc,
                                                 _op_name)
    opaque = kernel.range_check.opaque_casts()
    if opaque:   # casts from floats no rule bounds: checked after each run by their input's magnitude
        kernel.range_check.guard(opaque)
        replay.guards = {step.key for step in opaque}
    return kernel


def _as_forward(fn):
    """A plain function with its code named `forward`: torch.export keeps only the stack frames
    of functions so named, and the nodes of a function model should point at its lines."""
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(fn, types.FunctionType):
        return fn
    renamed = types.FunctionType(code.replace(co_name="forward"), fn.__globals__, fn.__name__,
                                 fn.__defaults__, fn.__closure__)
    renamed.__kwdefaults__ = fn.__kwdefaults__
    return renamed


def _source_of(obj) -> Loc | None:
    target = getattr(obj, "forward", obj)
    try:
        return Loc(inspect.getsourcefile(target), inspect.getsourcelines(target)[1])
    except (TypeError, OSError):
        return None


@user_facing
def from_torch(module_or_fn, *example_inputs, target=None, **options) -> ImportedKernel:
    """Import a torch.nn.Module (or a function of tensors) through torch.export."""
    torch = _torch()
    module = module_or_fn
    if not isinstance(module, torch.nn.Module):
        fn = _as_forward(module_or_fn)

        class _Fn(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)
        module = _Fn()
    example = tuple(torch.as_tensor(x) if isinstance(x, np.ndarray) else x for x in example_inputs)
    # None (an optional input left out) and Python numbers are baked into the export: the kernel
    # takes them in the same positions and checks they are the same
    constant_args = {i: x for i, x in enumerate(example) if not isinstance(x, torch.Tensor)}
    ep = _export(module, example, _source_of(module_or_fn))
    name = type(module_or_fn).__name__ if isinstance(module_or_fn, torch.nn.Module) else \
        getattr(module_or_fn, "__name__", "model")
    if target is not None:
        options["target"] = target
    kernel = _exported_kernel(ep, name, options, _source_of(module_or_fn), constant_args)
    kernel.trace(*example)   # replays every op once: unsupported variants are reported now
    if kernel.range_check.active:
        kernel.range_check(example)   # an int64 value of the example past int32 is reported now
    return kernel
def torch_backend(target=None, **options):
    """A `torch.compile` backend: each captured graph is exported, imported and run by the
    fused kernels on the CPU executors; tensors cross as zero-copy numpy views.  Results have
    eager PyTorch's shapes and dtypes (0-d stays 0-d, int64 stays int64).  A call on tensors
    that require grad runs the graph eagerly, with a warning once: fusedsl kernels have no
    backward."""
    torch = _torch()
    if target is not None:
        options["target"] = target

    def backend(gm, example_inputs):
        multi = _returns_tuple(gm)
        kernels: dict = {}
        warned = []

        def kernel_for(args):
            # Dynamo may hand over symbolic sizes (after a shape change it traces dynamic
            # graphs); fusedsl kernels are specialised to concrete shapes, so each new
            # combination of shapes (and size arguments) is exported and imported once.
            key = tuple((tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else ("v", a) for a in args)
            if key not in kernels:
                ep = _export(gm, tuple(args), None)
                constant_args = {i: a for i, a in enumerate(args) if not isinstance(a, torch.Tensor)}
                kernel = _exported_kernel(ep, "compiled_graph", dict(options), None, constant_args)
                kernels[key] = (kernel, _output_dtypes(ep))
            return kernels[key]

        def needs_grad(args):
            return torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)

        def run(*args):
            if needs_grad(args):
                if not warned:
                    warned.append(True)
                    warnings.warn("fs.torch_backend: inputs require grad and fusedsl kernels have no backward; "
                                  "this graph runs in eager PyTorch (use torch.no_grad() or detach the inputs "
                                  "to run it fused)", RuntimeWarning, stacklevel=2)
                return gm(*args)
            kernel, dtypes = kernel_for(args)
            out = kernel(*args)
            outs = out if isinstance(out, tuple) else (out,)
            results = tuple(_to_torch(o, d) for o, d in zip(outs, dtypes))
            return results if multi else results[0]
        if all(isinstance(a, torch.Tensor) for a in example_inputs) and not needs_grad(example_inputs):
            kernel_for(tuple(example_inputs))   # static shapes: import now, errors surface at compile
        run.kernels = {k: v[0] for k, v in kernels.items()}
        return run
    return backend


def _output_dtypes(ep) -> list:
    """The torch dtype of each user output of an export (from its metadata)."""
    from torch.export.graph_signature import OutputKind
    output = next(n for n in ep.graph.nodes if n.op == "output")
    args = output.args[0] if isinstance(output.args[0], (list, tuple)) else (output.args[0],)
    dtypes = []
    for a, spec in zip(args, ep.graph_signature.output_specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            val = a.meta.get("val") if hasattr(a, "meta") else None
            dtypes.append(getattr(val, "dtype", None))
    return dtypes


def _to_torch(array, dtype):
    """A kernel result as the tensor eager PyTorch returns: same shape (0-d included), its dtype
    (int64 where fusedsl computed int32, bfloat16 from ml_dtypes' bits)."""
    torch = _torch()
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy()
    if array.dtype.name == "bfloat16":
        tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    else:
        tensor = torch.from_numpy(array)
    if dtype is not None and tensor.dtype != dtype:
        tensor = tensor.to(dtype)
    return tensor


def _returns_tuple(gm) -> bool:
    for node in gm.graph.nodes:
        if node.op == "output":
            return isinstance(node.args[0], (list, tuple))
    return False
