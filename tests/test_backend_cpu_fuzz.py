"""Generated elementwise/broadcast graphs: reference == tile interpreter == LLVM.

A graph is drawn as data (shapes, dtype, a list of nodes) and turned into a kernel
function; each node keeps a bound on its magnitude so that generated values stay in
the range where every dtype is meaningful (no overflow to inf in half, int8 results
exact in half), and the bound scales atol: an executor that rounds per op is off by a
few ulps of the largest intermediate, whatever the result.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from test_backend_cpu import _private_cache  # noqa: F401  (the fixture: a temporary kernel cache)
from test_backend_cpu import CONFIGS, check_kernel, rand, vector_kernels

FLOAT_UNARY = ["abs", "neg", "relu", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "square", "exp",
               "log", "sqrt", "rsqrt", "reciprocal"]
INT_UNARY = ["abs", "neg", "relu", "square"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum"]
CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]
SIZES = [1, 2, 3, 5, 8, 16, 17, 31, 64, 65, 130, 257, 1000]
MAX_ELEMENTS = 40_000
DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "uint8"]
LIMIT = {"float32": 1e4, "float16": 1e3, "bfloat16": 1e3, "int32": 1e6, "int8": 100, "uint8": 200}


@dataclass
class Graph:
    dtype: str
    out_shape: tuple
    input_shapes: list
    nodes: list = field(default_factory=list)      # (op, operand indices, constant)
    bounds: list = field(default_factory=list)     # magnitude bound of every value
    shapes: list = field(default_factory=list)     # static shape of every value
    outputs: list = field(default_factory=list)
    runtime_scalar: bool = False
    symbolic: bool = False
    mask_output: bool = False

    @property
    def n_inputs(self) -> int:
        return len(self.input_shapes) + (1 if self.runtime_scalar else 0)


def _np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@st.composite
def graphs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.sampled_from([1, 2, 2, 3, 3]))
    out_shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    while np.prod(out_shape) > MAX_ELEMENTS:     # keep the interpreter fast
        out_shape = out_shape[1:] if out_shape[0] > 1 else out_shape[:1] + out_shape[2:]
    n_in = draw(st.sampled_from([1, 2, 2, 3, 3]))
    shapes = [out_shape]
    for _ in range(n_in - 1):
        # each dim kept or broadcast (1); leading dims may be dropped
        keep = [draw(st.booleans()) for _ in out_shape]
        shape = tuple(d if k else 1 for d, k in zip(out_shape, keep))
        drop = draw(st.integers(0, rank - 1))
        shapes.append(shape[drop:] if all(s == 1 for s in shape[:drop]) else shape)
    shapes = draw(st.permutations(shapes))
    g = Graph(dtype, out_shape, list(shapes))
    g.runtime_scalar = dtype in ("float32", "float16", "int32") and draw(st.booleans())
    g.symbolic = rank >= 2 and out_shape[0] > 1 and draw(st.booleans())
    is_float = dtype in ("float32", "float16", "bfloat16")
    base = 2.0 if is_float else (10.0 if dtype != "int32" else 100.0)
    g.bounds = [base] * len(shapes) + ([2.0] if g.runtime_scalar else [])
    g.shapes = [tuple(s) for s in shapes] + ([()] if g.runtime_scalar else [])
    for _ in range(draw(st.integers(1, 6))):
        values = len(g.bounds)
        kind = draw(st.sampled_from(["unary", "binary", "binary", "const", "where"]))
        a = draw(st.integers(0, values - 1))
        if kind == "unary":
            node = (draw(st.sampled_from(FLOAT_UNARY if is_float else INT_UNARY)), (a,), None)
        elif kind == "binary":
            op = draw(st.sampled_from(BINARY if is_float else INT_BINARY))
            node = (op, (a, draw(st.integers(0, values - 1))), None)
        elif kind == "where":   # where(a OP b, c, d): a comparison, a mask, a select
            # a and b are inputs: comparing computed values could flip at a rounding
            # boundary between executors that legitimately differ by an ulp
            a, b = (draw(st.integers(0, g.n_inputs - 1)) for _ in range(2))
            c, d = (draw(st.integers(0, values - 1)) for _ in range(2))
            node = ("where", (a, b, c, d), draw(st.sampled_from(CMP_OPS)))
        else:
            op = draw(st.sampled_from(["add", "mul", "maximum", "rsub"]))
            c = draw(st.sampled_from([0.5, -1.5, 3.0, 0.1] if is_float else [2, -3, 1]))
            node = (op, (a,), abs(c) if dtype == "uint8" else c)
        _push(g, node)
    if not g.nodes or g.shapes[-1] != out_shape:
        # end on a value of the full shape: the kernel's result
        full = g.shapes.index(out_shape)
        last = len(g.bounds) - 1
        if not _push(g, ("add", (last, full), None)):
            _push(g, ("abs", (full,), None))
    last = len(g.bounds) - 1
    g.outputs = [last]
    full_nodes = [i for i in range(g.n_inputs, last) if g.shapes[i] == out_shape]
    if full_nodes and draw(st.booleans()):
        g.outputs.append(draw(st.sampled_from(full_nodes)))
    g.mask_output = draw(st.booleans())     # also return (full input > 1), a bool tensor
    return g


def _push(g: Graph, node) -> bool:
    """Append the node unless it could overflow the dtype (or wrap uint8, which the NPU
    computes in half, so a wrapped intermediate would differ from numpy)."""
    op, args, _ = node
    bound = _bound(g, node)
    if bound > LIMIT[g.dtype] or (g.dtype == "uint8" and op in ("sub", "neg", "rsub")):
        return False
    g.nodes.append(node)
    g.bounds.append(bound)
    g.shapes.append(np.broadcast_shapes(*[g.shapes[i] for i in args]))
    return True


def _bound(g: Graph, node) -> float:
    op, args, c = node
    b = [g.bounds[i] for i in args]
    if op == "where":
        return max(b[2], b[3])
    if c is not None:
        b.append(abs(c))
    x = b[0]
    rules = {
        "abs": x, "neg": x, "relu": x, "leaky_relu": x, "sigmoid": 1.0, "tanh": 1.0, "gelu": x, "silu": x,
        "square": x * x, "exp": float(np.exp(min(x, 30.0))), "log": float(np.log(x + 1.0)) + 1.0,
        "sqrt": float(np.sqrt(x)), "rsqrt": 1.0, "reciprocal": 1.0,
    }
    if op in rules:
        return rules[op]
    y = b[1]
    return {"add": x + y, "sub": x + y, "rsub": x + y, "mul": x * y, "div": x, "maximum": max(x, y),
            "minimum": max(x, y)}[op]


def _apply(op, xs, c):
    x = xs[0]
    if op == "where":
        a, b, p, q = xs
        cond = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[c]
        return fs.where(cond, p, q)
    if op == "log":
        return fs.log(fs.abs(x) + 1.0)
    if op == "sqrt":
        return fs.sqrt(fs.abs(x))
    if op == "rsqrt":
        return fs.rsqrt(fs.abs(x) + 1.0)
    if op == "reciprocal":
        return fs.reciprocal(fs.abs(x) + 1.0)
    if op == "div":
        return x / (fs.abs(xs[1]) + 1.0)
    if op == "neg":
        return -x
    if op == "leaky_relu":
        return fs.leaky_relu(x, 0.2)
    if op == "rsub":
        return c - x
    if c is not None:
        return {"add": lambda: x + c, "mul": lambda: x * c, "maximum": lambda: fs.maximum(x, c)}[op]()
    if op in ("add", "sub", "mul", "maximum", "minimum"):
        y = xs[1]
        return {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                "maximum": lambda: fs.maximum(x, y), "minimum": lambda: fs.minimum(x, y)}[op]()
    return getattr(fs, op)(x)


def kernel_of(g: Graph):
    def body(*params):
        values = list(params)
        for op, args, c in g.nodes:
            values.append(_apply(op, [values[i] for i in args], c))
        outs = tuple(values[i] for i in g.outputs)
        if g.mask_output:
            outs += (values[g.shapes.index(g.out_shape)] > 1,)
        return outs if len(outs) > 1 else outs[0]

    names = [f"x{i}" for i in range(g.n_inputs)]
    body.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    body.__name__ = "generated"
    return fs.fused_kernel(body)


def _specs_and_args(g: Graph, rng):
    npd = _np_dtype(g.dtype)
    base = 2.0 if g.dtype in ("float32", "float16", "bfloat16") else g.bounds[0]
    lo = 0 if g.dtype == "uint8" else -base
    arrays = [rand(rng, s, npd, lo, base) for s in g.input_shapes]
    specs = list(arrays)
    sizes = {}
    if g.symbolic:
        m = g.out_shape[0]
        rank = len(g.out_shape)
        for i, s in enumerate(g.input_shapes):
            lead = len(s) - rank
            if lead == 0 and s[0] == m:
                specs[i] = fs.spec(("M",) + tuple(s[1:]), g.dtype)
        sizes["M"] = m
    args = list(arrays)
    if g.runtime_scalar:
        specs.append(fs.scalar("s", g.dtype))
        args.append(1.25 if g.dtype != "int32" else 3)
    return specs, args, sizes


@fuzz_settings(0.1)   # 50 graphs (each one llvm_kernel compile); FUSEDSL_FUZZ_EXAMPLES scales them
@given(graphs(), st.integers(0, 2**32 - 1), st.sampled_from(range(len(CONFIGS))),
       st.sampled_from([None, "parallel", "stream"]))
def test_generated_graphs(g, seed, config, launch):
    rng = np.random.default_rng(seed)
    specs, args, sizes = _specs_and_args(g, rng)
    kernel = kernel_of(g)
    if not vector_kernels(kernel, *specs)[1]:
        return       # everything folded away (e.g. -(-x)): nothing runs
    scale = max(1.0, max(g.bounds))
    configs = (CONFIGS[0], CONFIGS[config]) if config else (CONFIGS[0],)
    check_kernel(kernel, specs, args, sizes=sizes, configs=configs, scale=scale, launch=launch)
