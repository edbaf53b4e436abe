"""Issue 20 item 6: every op of the vocabulary runs natively on the LLVM backend inside
`kernel(*arrays)` -- no kernel of it falls back to the numpy reference -- and prints Ascend C on
ascend910b and ascend310p, or says at the user's line why it cannot.

The ops are walked from their definitions (fusedsl.ops_table.entries: the registry docs/OPS.md is
generated from), each through the small kernel its definition declares (the docs' example call),
in several dtypes; VARIANTS adds the argument forms the examples do not reach (other axes,
padded / strided / dilated pooling, grouped and transposed convolutions, ...).  Which CPU
executor runs a kernel is CompiledKernel.executor (the same tests `kernel(*arrays)` dispatches by).

KNOWN_REFERENCE lists the (op, dtype) pairs that still run a kernel on the reference because of a
gap in the compiler core, not in the op's definition; the test asserts the set exactly, so it
fails when one is fixed (drop it from the list then) as well as when a new one appears.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fusedsl as fs
from conftest import FUZZ_EXAMPLES
from fusedsl.errors import FusedslError
from fusedsl.ops_table import entries
from fusedsl.reference import run_module

PROBE_FILE = "<ops probe>"
# float32, and the narrow dtypes where the fallbacks were (more with FUSEDSL_FUZZ_EXAMPLES > 500)
DTYPES = ("float32", "bfloat16", "int8") if FUZZ_EXAMPLES <= 500 else (
    "float32", "float16", "bfloat16", "int32", "int8", "bool")
# Ops whose kernels still run on the numpy reference, per dtype (none: a kernel whose only result
# is a broadcast constant of a narrow dtype, bfloat16 / int8 / bool, was refused by the vector kind
# until lower/vector.py _bind_outputs filled the compute dtype and cast it once).
KNOWN_REFERENCE: dict[str, set] = {}

OPS = [e for e in entries()]


def _probe(text: str, arity: int):
    """The kernel body of an example call, compiled under PROBE_FILE (the 'user's file'): a
    function of x (, y, z) (, idx) -- fused_kernel reads its parameters."""
    with_idx = "idx" in text
    params = ", ".join(list("xyz"[:arity]) + (["idx"] if with_idx else []))
    env = {"fs": fs, "np": np}
    exec(compile(f"def probe({params}):\n    return {text}\n", PROBE_FILE, "exec"), env)  # noqa: S102
    return env["probe"], with_idx


def _np_dtype(dtype: str):
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def _arrays(shape, dtype, arity, with_idx, rng):
    xs = [(rng.standard_normal(shape) * 3).astype(_np_dtype(dtype)) for _ in range(arity)]
    return xs + ([np.array([0, 2, 1], np.int32)] if with_idx else [])


def _executors_of(fn, specs, arrays):
    """{executor: kernel names} of fn compiled for specs, after one call on arrays; None when
    the op does not take these dtypes (a FusedslError at trace time)."""
    try:
        c = fs.fused_kernel(fn).compile(*specs)
    except FusedslError:
        return None
    c(*arrays)
    found: dict[str, list[str]] = {}
    for plan in c.kernels:
        found.setdefault(c.executor(plan), []).append(plan.name)
    return found


@pytest.mark.parametrize("entry", OPS, ids=[e[1] for e in OPS])
def test_every_documented_op_runs_natively_on_the_llvm_backend(entry):
    _, name, _, (arity, text), *_ = entry
    body, with_idx = _probe(text, arity)
    rng = np.random.default_rng(0)
    ran, on_reference = [], set()
    for dtype in DTYPES:
        specs = [fs.spec((3, 40), dtype)] * arity + ([fs.spec((3,), "int32")] if with_idx else [])
        found = _executors_of(body, specs, _arrays((3, 40), dtype, arity, with_idx, rng))
        if found is None:
            continue
        ran.append(dtype)
        if "reference" in found:
            on_reference.add(dtype)
    assert ran, f"{name}: its example compiles for none of {DTYPES}"
    assert on_reference == (KNOWN_REFERENCE.get(name, set()) & set(ran)), (
        f"{name}: kernels of {sorted(on_reference)} run on the numpy reference")


# argument forms the examples do not reach: (call on x of shape (4, 5, 6), dtypes)
VARIANTS = [
    "fs.sum(x, axis=(0, 2))", "fs.max(x, axis=(0, 2))", "fs.min(x, axis=1)",
    "fs.argmax(x, axis=0)", "fs.argmin(x, axis=1, keepdims=True)",
    "fs.var(x, axis=(0, 2))", "fs.std(x, axis=0, ddof=1)", "fs.prod(x, axis=(0, 2))", "fs.prod(x)",
    "fs.cumsum(x, axis=0)", "fs.cumprod(x, axis=1)",
    "fs.sort(x, axis=0)", "fs.argsort(x, axis=1)", "fs.topk(x, 2, dim=1)[1]", "fs.topk(x, 3, largest=False)[0]",
    "fs.any(x > 0, axis=(0, 2))", "fs.all(x > 0, axis=0)", "fs.count_nonzero(x, axis=(0, 2))",
    "fs.logsumexp(x, axis=(0, 2))", "fs.log_softmax(x, axis=0)",
    "fs.vector_norm(x, 1, axis=(0, 2))", "fs.vector_norm(x, np.inf, axis=0)", "fs.vector_norm(x, 0)",
    "fs.vector_norm(x, 3, axis=1)",
    "fs.max_pool2d(fs.reshape(x, (1, 4, 5, 6)), 3, 2, 1)",
    "fs.max_pool2d(fs.reshape(x, (1, 4, 5, 6)), 2, 1, 1, 2, True)",
    "fs.avg_pool2d(fs.reshape(x, (1, 4, 5, 6)), 3, 2, 1)",
    "fs.avg_pool2d(fs.reshape(x, (1, 4, 5, 6)), 3, 2, 1, True, False)",
    "fs.avg_pool1d(x, 3, 2, 1)", "fs.max_pool1d(x, 2, 3, 1, 2, True)",
    "fs.adaptive_avg_pool2d(fs.reshape(x, (1, 4, 5, 6)), 1)",
    "fs.conv1d(x[:, :4], x[:2, :2, :3], groups=2, dilation=2, padding=1)",
    "fs.conv_transpose2d(fs.reshape(x, (1, 4, 5, 6)), fs.reshape(x[:, :2, :2], (4, 1, 2, 2)), stride=2, "
    "padding=1, groups=2)",
    "fs.conv_transpose1d(x[:, :4], x[:, :2, :3], stride=3, output_padding=1)",
    "fs.group_norm(fs.reshape(x, (1, 4, 5, 6)), 2)", "fs.instance_norm(fs.reshape(x, (1, 4, 5, 6)))",
    "fs.flip(x, (0, 2))", "fs.tril(x[0])", "fs.triu(x, 1)",
    "fs.index_select(x, 1, fs.minimum(fs.abs(x[0, :3, 0]).astype(np.int32), 3))",
    "fs.gather(x, 0, fs.minimum(fs.abs(x[:2]).astype(np.int32), 3))",
    "fs.take_along_axis(x, fs.minimum(fs.abs(x[:, :2]).astype(np.int32), 3), 1)",
    "fs.scatter(x, 0, fs.minimum(fs.abs(x[:2]).astype(np.int32), 3), x[2:4])",
    "fs.scatter_add(x, 2, fs.minimum(fs.abs(x).astype(np.int32), 3), x)",
    "fs.scatter_reduce(x, 1, fs.minimum(fs.abs(x[:, :3]).astype(np.int32), 3), x, 'amin', include_self=False)",
    "fs.index_put(x, (None, fs.minimum(fs.abs(x[0, :3, 0]).astype(np.int32), 3)), x[:, :3], True)",
    "fs.one_hot(fs.minimum(fs.abs(x[0]).astype(np.int32), 3), 4)",
    "fs.stack([x, x], 1)", "fs.unbind(x, 1)[2]", "fs.split(x, [2, 3], 1)[1]", "fs.repeat(x, (2, 1, 1))",
    "fs.permute(x, (2, 0, 1))", "fs.clip(x, x[0], x[1])", "fs.div(x, x[0] + 3.0, rounding_mode='floor')",
    "fs.pow_tensor(x, x[0])", "fs.cross_entropy(x[0], fs.minimum(fs.abs(x[0, :, 0]).astype(np.int32), 3))",
    "fs.nll_loss(fs.log_softmax(x[0], 1), fs.minimum(fs.abs(x[0, :, 0]).astype(np.int32), 3), reduction='none')",
]


@pytest.mark.parametrize("text", VARIANTS)
def test_argument_variants_run_natively_on_the_llvm_backend(text):
    body, _ = _probe(text, 1)
    x = _arrays((4, 5, 6), "float32", 1, False, np.random.default_rng(1))
    found = _executors_of(body, [fs.spec((4, 5, 6), "float32")], x)
    assert found is not None, f"{text} does not compile"
    assert "reference" not in found, f"{text}: kernels {found['reference']} run on the numpy reference"


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_every_documented_op_prints_or_says_where_it_cannot(target):
    """Per op, its float32 example (or its first dtype that traces) prints Ascend C for the target,
    or the error names the probe's line -- never an error from inside fusedsl without a location."""
    printed, refused = 0, []
    for _, name, _, (arity, text), *_ in OPS:
        body, with_idx = _probe(text, arity)
        for dtype in ("float32", "int32", "bool"):
            specs = [fs.spec((3, 40), dtype)] * arity + ([fs.spec((3,), "int32")] if with_idx else [])
            try:
                c = fs.fused_kernel(body, target=target).compile(*specs)
            except FusedslError:
                continue
            try:
                assert c.source, name
                printed += 1
            except FusedslError as exc:
                assert exc.loc is not None and exc.loc.file == PROBE_FILE, (
                    f"{name} on {target}: {type(exc).__name__} without the user's line: {exc}")
                refused.append(name)
            break
        else:
            pytest.fail(f"{name}: its example compiles for no dtype")
    # the vocabulary prints on both chips; what does not is said at the line (docs/OPS.md lists it)
    assert printed >= len(OPS) - 5, (printed, refused)


def test_narrow_constant_outputs_run_natively_and_print():
    """full_like of bfloat16, int8, bool and uint8: each kernel fills its compute dtype and casts
    once (lower/vector.py _bind_outputs), so it runs on LLVM and prints, exactly (one build)."""
    cases = (("bfloat16", 3), ("int8", -7), ("bool", 1), ("uint8", 200))
    xs = [np.zeros((5, 33), _np_dtype(d)) for d, _ in cases]
    k = fs.fused_kernel(lambda a, b, c, d: tuple(fs.full_like(v, value) for v, (_, value) in zip((a, b, c, d), cases)),
                        target="ascend910b").compile(*xs)
    assert {k.executor(p) for p in k.kernels} == {"vector"} and all(p.printable for p in k.kernels)
    wants = [np.full(x.shape, value, x.dtype) for x, (_, value) in zip(xs, cases)]
    for got, sim, want in zip(k(*xs), k.simulate(*xs), wants):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(sim, want)


# the cube ops of integer operands (int_product.py's exact products; they were on the reference)
INT_CUBE = ["x @ fs.transpose(y)", "fs.reshape(x, (3, 4, 10)) @ fs.reshape(y, (3, 10, 4))",
            "fs.relu(x[:, :8] @ fs.reshape(y, (8, 15)) + y[0, :15])",
            "fs.conv2d(fs.reshape(x, (1, 3, 5, 8)), fs.reshape(y[:, :12], (3, 3, 2, 2)), stride=(1, 2), padding=1)"]


@pytest.mark.parametrize("text", INT_CUBE)
def test_integer_cube_ops_run_natively_and_agree_with_numpy(text):
    body, _ = _probe(text, 2)
    rng = np.random.default_rng(2)
    for dtype in ("int8", "uint8", "int32"):
        xs = [rng.integers(-128, 128, (3, 40)).astype(dtype) for _ in range(2)]
        found = _executors_of(body, [fs.spec((3, 40), dtype)] * 2, xs)
        assert found is not None and "reference" not in found, (dtype, found)
        ck = fs.fused_kernel(body).compile(*xs)
        np.testing.assert_array_equal(ck(*xs), run_module(ck.graph, xs)[0], err_msg=dtype)   # the oracle
