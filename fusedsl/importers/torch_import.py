"""PyTorch -> fusedsl: `fs.from_torch(module_or_fn, *example_inputs)` and `fs.torch_backend`.

The model is captured with `torch.export` (ATen ops with static shapes, parameters and
buffers lifted to inputs); each ATen op is replayed with the fusedsl op of the same
meaning, located at the user's source line from the node's stack trace.  An op without a
mapping raises UnsupportedOpError naming the ATen op and that line.  Imported only when
used: `import fusedsl` never imports torch.
"""
from __future__ import annotations

import operator
import os
import re

import numpy as np

from ..errors import Loc, UnsupportedOpError, at_user_location, is_internal_file, user_facing, user_frame
from ..frontend import api as fs
from .common import ImportedKernel, as_array, make_function, sanitize

SUPPORTED = ("elementwise ops, sum/mean/amax/amin, softmax, layer_norm, rms_norm, linear/matmul/mm/bmm/addmm, "
             "conv2d, batch_norm (inference), view/reshape/permute/transpose/expand/unsqueeze/squeeze/flatten, "
             "cat, slice/select, embedding")

_TORCH_DTYPES = {"torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
                 "torch.int32": "int32", "torch.int64": "int32", "torch.int8": "int8", "torch.uint8": "uint8",
                 "torch.bool": "bool"}


def _torch():
    try:
        import torch
    except ImportError:   # the optional extra is not installed
        from ..errors import ArgumentError
        raise ArgumentError("fs.from_torch needs PyTorch: pip install 'fusedsl[torch]'", loc=user_frame()) from None
    return torch


# ---- the ATen table --------------------------------------------------------------------------
class Unsupported(Exception):
    """A mapped op with an argument combination fusedsl lacks (the message says which)."""


def _dims_of(x, dims):
    if dims is None:
        return None
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(d % max(x.ndim, 1) for d in dims)


def _reduce(fn):
    def rule(x, dim=None, keepdim=False, *rest, **kw):
        if kw.get("dtype") is not None:
            raise Unsupported("a reduction with dtype= is not supported")
        axes = _dims_of(x, dim)
        if axes == ():
            axes = None
        return fn(x, axis=axes, keepdims=keepdim)
    return rule


def _pow(x, p):
    if not isinstance(p, (int, float)):
        raise Unsupported("pow with a tensor exponent is not supported")
    table = {2: fs.square, 1: lambda v: v, 0.5: fs.sqrt, -1: fs.reciprocal, -0.5: fs.rsqrt}
    if p not in table:
        raise Unsupported(f"pow with exponent {p} is not supported (2, 1, 0.5, -1 and -0.5 are)")
    return table[p](x)


def _gelu(x, approximate="none"):
    if approximate != "tanh":
        raise Unsupported("gelu(approximate='none') (the erf form) is not supported; fusedsl's gelu is the "
                          "tanh approximation: use F.gelu(x, approximate='tanh')")
    return fs.gelu(x)


def _layer_norm(x, shape, weight=None, bias=None, eps=1e-5, *rest):
    if len(shape) != 1:
        raise Unsupported("layer_norm over more than the last axis is not supported")
    return fs.layer_norm(x, weight, bias, eps)


def _native_layer_norm(x, shape, weight, bias, eps):
    return (_layer_norm(x, shape, weight, bias, eps), None, None)


def _rms_norm(x, shape, weight=None, eps=None):
    if len(shape) != 1:
        raise Unsupported("rms_norm over more than the last axis is not supported")
    if eps is None:
        eps = float(np.finfo(x.dtype.np if x.dtype.name != "bfloat16" else np.float32).eps)
    return fs.rms_norm(x, weight, eps)


def _linear(x, w, b=None):
    y = fs.matmul(x, fs.transpose(w))
    return y if b is None else y + b


def _conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        raise Unsupported(f"conv2d padding={padding!r} is not supported; give the padding in pixels")
    if any(d != 1 for d in ([dilation] if isinstance(dilation, int) else dilation)) or groups != 1:
        raise Unsupported("conv2d with dilation or groups is not supported")
    if x.ndim != 4:
        raise Unsupported("only 2-d convolution (NCHW) is supported")
    return fs.conv2d(x, w, b, stride=list(stride) if not isinstance(stride, int) else stride,
                     padding=list(padding) if not isinstance(padding, int) else padding)


def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise Unsupported("transposed convolution is not supported")
    return _conv(x, w, b, stride, padding, dilation, groups)


def _batch_norm(x, weight, bias, mean, var, training=False, momentum=0.1, eps=1e-5, *rest):
    if training:
        raise Unsupported("batch_norm in training mode is not supported; call model.eval() first")
    return fs.batch_norm(x, mean, var, weight, bias, eps)


def _bn_no_training(x, weight, bias, mean, var, momentum, eps):
    return (fs.batch_norm(x, mean, var, weight, bias, eps), None, None)


def _softmax(x, dim, half_to_float=False, *rest, **kw):
    if kw.get("dtype") is not None:
        raise Unsupported("softmax with dtype= is not supported")
    return fs.softmax(x, axis=dim)


def _view(x, shape):
    return fs.reshape(x, tuple(shape))


def _flatten(x, start=0, end=-1):
    start, end = start % max(x.ndim, 1), end % max(x.ndim, 1)
    shape = x.shape[:start] + (-1,) + x.shape[end + 1:]
    return fs.reshape(x, shape)


def _unsqueeze(x, dim):
    dim = dim % (x.ndim + 1)
    return fs.reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


def _squeeze(x, dim=None):
    dims = set(range(x.ndim)) if dim is None else set(_dims_of(x, dim))
    return fs.reshape(x, tuple(d for i, d in enumerate(x.shape) if not (i in dims and d == 1)))


def _transpose(x, a, b):
    perm = list(range(x.ndim))
    a, b = a % x.ndim, b % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return fs.transpose(x, perm)


def _expand(x, shape, *rest, **kw):
    shape = list(shape)
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if shape[lead + i] == -1:
            shape[lead + i] = x.shape[i]
    return fs.broadcast_to(x, tuple(shape))


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    size = x.shape[dim]
    start = 0 if start is None else start
    end = size if end is None or end > size else end
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _select(x, dim, i):
    index = [slice(None)] * x.ndim
    index[dim] = i
    return x[tuple(index)]


def _embedding(weight, indices, padding_idx=-1, *rest):
    return fs.take(weight, fs.cast(indices, "int32") if indices.dtype.name != "int32" else indices, axis=0)


def _to(x, *args, **kw):
    dtype = kw.get("dtype")
    for a in args:
        if str(a).startswith("torch.") and str(a) in _TORCH_DTYPES:
            dtype = a
    if dtype is None:
        return x
    return fs.cast(x, _TORCH_DTYPES[str(dtype)])


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = fs.maximum(x, lo)
    if hi is not None:
        x = fs.minimum(x, hi)
    return x


def _identity(x, *rest, **kw):
    return x


def _div(a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise Unsupported(f"div with rounding_mode={rounding_mode!r} is not supported")
    return fs.divide(a, b)


def _aten_table():
    torch = _torch()
    aten = torch.ops.aten
    t = {
        aten.add.Tensor: lambda a, b, alpha=1: a + (b * alpha if alpha != 1 else b),
        aten.add.Scalar: lambda a, b, alpha=1: a + b * alpha,
        aten.sub.Tensor: lambda a, b, alpha=1: a - (b * alpha if alpha != 1 else b),
        aten.sub.Scalar: lambda a, b, alpha=1: a - b * alpha,
        aten.rsub.Scalar: lambda a, b, alpha=1: b - a * alpha,
        aten.mul.Tensor: lambda a, b: a * b, aten.mul.Scalar: lambda a, b: a * b,
        aten.div.Tensor: _div, aten.div.Scalar: _div, aten.div.Tensor_mode: _div,
        aten.neg.default: fs.negative, aten.abs.default: fs.abs, aten.exp.default: fs.exp,
        aten.log.default: fs.log, aten.sqrt.default: fs.sqrt, aten.rsqrt.default: fs.rsqrt,
        aten.reciprocal.default: fs.reciprocal, aten.relu.default: fs.relu,
        aten.sigmoid.default: fs.sigmoid, aten.tanh.default: fs.tanh, aten.silu.default: fs.silu,
        aten.square.default: fs.square, aten.pow.Tensor_Scalar: _pow, aten.gelu.default: _gelu,
        aten.leaky_relu.default: lambda x, slope=0.01: fs.leaky_relu(x, slope),
        aten.maximum.default: fs.maximum, aten.minimum.default: fs.minimum,
        aten.clamp.default: _clamp, aten.clamp_min.default: lambda x, lo: fs.maximum(x, lo),
        aten.clamp_max.default: lambda x, hi: fs.minimum(x, hi),
        aten.where.self: fs.where,
        aten.lt.Tensor: fs.less, aten.lt.Scalar: fs.less, aten.le.Tensor: fs.less_equal,
        aten.le.Scalar: fs.less_equal, aten.gt.Tensor: fs.greater, aten.gt.Scalar: fs.greater,
        aten.ge.Tensor: fs.greater_equal, aten.ge.Scalar: fs.greater_equal,
        aten.eq.Tensor: fs.equal, aten.eq.Scalar: fs.equal, aten.ne.Tensor: fs.not_equal,
        aten.ne.Scalar: fs.not_equal,
        aten._to_copy.default: _to, aten.to.dtype: _to, aten.to.dtype_layout: _to,
        aten.sum.dim_IntList: _reduce(fs.sum), aten.sum.default: lambda x, dtype=None: _reduce(fs.sum)(x),
        aten.mean.dim: _reduce(fs.mean), aten.mean.default: lambda x, dtype=None: _reduce(fs.mean)(x),
        aten.amax.default: _reduce(fs.max), aten.amin.default: _reduce(fs.min),
        aten.softmax.int: _softmax, aten._softmax.default: _softmax,
        aten.layer_norm.default: _layer_norm, aten.native_layer_norm.default: _native_layer_norm,
        aten.rms_norm.default: _rms_norm,
        aten.linear.default: _linear,
        aten.addmm.default: lambda bias, a, b, beta=1, alpha=1: fs.matmul(a, b) * alpha + bias * beta,
        aten.matmul.default: fs.matmul, aten.mm.default: fs.matmul, aten.bmm.default: fs.matmul,
        aten.t.default: lambda x: fs.transpose(x) if x.ndim == 2 else x,
        aten.conv2d.default: _conv, aten.convolution.default: _convolution,
        aten.batch_norm.default: _batch_norm,
        aten._native_batch_norm_legit_no_training.default: _bn_no_training,
        aten.view.default: _view, aten.reshape.default: _view, aten._unsafe_view.default: _view,
        aten.flatten.using_ints: _flatten, aten.unsqueeze.default: _unsqueeze,
        aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.squeeze.default: _squeeze,
        aten.permute.default: lambda x, perm: fs.transpose(x, [p % x.ndim for p in perm]),
        aten.transpose.int: _transpose, aten.expand.default: _expand,
        aten.contiguous.default: _identity, aten.clone.default: _identity, aten.alias.default: _identity,
        aten.detach.default: _identity, aten.dropout.default: lambda x, p=0.5, train=False: x,
        aten.slice.Tensor: _slice, aten.select.int: _select,
        aten.cat.default: lambda xs, dim=0: fs.concatenate(list(xs), axis=dim),
        aten.embedding.default: _embedding,
        aten.scaled_dot_product_attention.default: lambda q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False: fs.attention(q, k, v, attn_mask, scale, is_causal, dropout_p=dropout_p),  # noqa: E501
        operator.getitem: lambda xs, i: xs[i],
    }
    return t


# ---- replay ----------------------------------------------------------------------------------
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _is_library_file(file: str) -> bool:
    """A frame of torch or of fusedsl itself, decided by the packages' own directories: a user
    whose project lives under a folder named `fusedsl/` or `torch/` keeps their frames."""
    if is_internal_file(file):
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


def _op_name(target) -> str:
    name = getattr(target, "__name__", None) or str(target)
    text = str(target)
    return text if text.startswith("aten.") else f"aten.{name}"


class GraphReplay:
    """Replays an exported FX graph on fusedsl tensors."""

    def __init__(self, graph, placeholders: list[str], table):
        self.graph = graph
        self.placeholders = placeholders
        self.table = table

    def check(self) -> None:
        """Every call is mapped, or UnsupportedOpError at the first one that is not."""
        for node in self.graph.nodes:
            if node.op == "call_function" and node.target not in self.table:
                self._unsupported(node, f"{_op_name(node.target)} is not supported by fusedsl's importer")

    @staticmethod
    def _unsupported(node, message):
        raise UnsupportedOpError(message, loc=node_loc(node) or user_frame(),
                                 hint=f"fusedsl imports: {SUPPORTED}")

    def __call__(self, args):
        env = dict(zip(self.placeholders, args))

        def load(a):
            if hasattr(a, "op") and hasattr(a, "name") and hasattr(a, "meta"):
                return env[a.name]
            if isinstance(a, (list, tuple)):
                return type(a)(load(x) for x in a)
            return a

        for node in self.graph.nodes:
            if node.op == "call_function":
                with at_user_location(node_loc(node)):
                    try:
                        env[node.name] = self.table[node.target](*load(node.args), **load(dict(node.kwargs)))
                    except Unsupported as exc:
                        self._unsupported(node, f"{_op_name(node.target)}: {exc}")
            elif node.op == "output":
                outs = load(node.args[0])
                outs = tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)
                return outs[0] if len(outs) == 1 else outs
            elif node.op == "get_attr":
                raise UnsupportedOpError(f"graph attribute {node.target} is not supported", loc=node_loc(node))
        raise AssertionError("exported graph without an output")


def _exported_kernel(ep, name: str, options: dict, source: Loc | None) -> ImportedKernel:
    from torch.export.graph_signature import InputKind
    graph = ep.graph
    used = {n.name for n in graph.nodes if n.op == "placeholder" and n.users}
    user_names, weight_names, weights = [], [], []
    for spec in ep.graph_signature.input_specs:
        pname = spec.arg.name
        if spec.kind == InputKind.USER_INPUT:
            user_names.append(pname)
        elif pname in used:
            value = ep.state_dict.get(spec.target) if spec.target in ep.state_dict else ep.constants[spec.target]
            weight_names.append(pname)
            weights.append(as_array(value.detach(), spec.target))
    replay = GraphReplay(graph, user_names + weight_names, _aten_table())
    replay.check()
    fn = make_function(name, [sanitize(n) for n in user_names + weight_names], replay)
    return ImportedKernel(fn, options, user_names, weights, source)


def _source_of(obj) -> Loc | None:
    import inspect
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
        fn = module_or_fn

        class _Fn(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)
        module = _Fn()
    example = tuple(torch.as_tensor(x) if isinstance(x, np.ndarray) else x for x in example_inputs)
    ep = torch.export.export(module, example)
    name = type(module_or_fn).__name__ if isinstance(module_or_fn, torch.nn.Module) else \
        getattr(module_or_fn, "__name__", "model")
    if target is not None:
        options["target"] = target
    kernel = _exported_kernel(ep, name, options, _source_of(module_or_fn))
    kernel.trace(*example)   # replays every op once: unsupported variants are reported now
    return kernel


def torch_backend(target=None, **options):
    """A `torch.compile` backend: each captured graph is exported, imported and run by the
    fused kernels on the CPU executors; tensors cross as zero-copy numpy views."""
    torch = _torch()
    if target is not None:
        options["target"] = target

    def backend(gm, example_inputs):
        multi = _returns_tuple(gm)
        kernels: dict = {}

        def kernel_for(args):
            # Dynamo may hand over symbolic sizes (after a shape change it traces dynamic
            # graphs); fusedsl kernels are specialised to concrete shapes, so each new
            # combination of shapes (and size arguments) is exported and imported once.
            key = tuple((tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else ("v", a) for a in args)
            if key not in kernels:
                ep = torch.export.export(gm, tuple(args))
                kernels[key] = _exported_kernel(ep, "compiled_graph", dict(options), None)
            return kernels[key]

        def run(*args):
            out = kernel_for(args)(*args)
            outs = out if isinstance(out, tuple) else (out,)
            results = tuple(torch.from_numpy(np.ascontiguousarray(o)) for o in outs)
            return results if multi else results[0]
        if all(isinstance(a, torch.Tensor) for a in example_inputs):
            kernel_for(tuple(example_inputs))   # static shapes: import now, errors surface at compile
        run.kernels = kernels
        return run
    return backend


def _returns_tuple(gm) -> bool:
    for node in gm.graph.nodes:
        if node.op == "output":
            return isinstance(node.args[0], (list, tuple))
    return False

