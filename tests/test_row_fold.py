"""Wide folds in row kernels (lower/row.fold_width): a static single-read row kernel folds each row
into up to 1024 float32 lanes and halves them to 64 before the WholeReduce, instead of 64 lanes
in one call per 64 elements (each call costs ~20 cycles besides its elements: a row of 4096 took
64 calls per reduction).  The printed Ascend C agrees with numpy on every chip, the width is the
cost model's choice, and the modelled time drops where rows are long."""
import dataclasses

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.lower.row import FOLD_LANES, fold_width
from fusedsl.tile.kernel_cost import kernel_work

PROGRAMS = {
    "softmax": (lambda x: fs.softmax(x), lambda x: np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "sum": (lambda x: fs.sum(x, axis=-1), lambda x: x.sum(-1)),
    "mean_back": (lambda x: x - fs.mean(x, axis=-1, keepdims=True), lambda x: x - x.mean(-1, keepdims=True)),
    "min_back": (lambda x: x - fs.min(x, axis=-1, keepdims=True), lambda x: x - x.min(-1, keepdims=True)),
}


@pytest.mark.parametrize("target,C,prog,dtype", [
    ("ascend910b", 1000, "softmax", "float32"), ("ascend910b", 4096, "sum", "float32"),
    ("ascend910", 1000, "mean_back", "float32"), ("ascend310p", 700, "softmax", "float16"),
    ("ascend910b", 129, "min_back", "float16"), ("ascend910", 2000, "min_back", "float16"),
])
def test_wide_fold_agrees_with_numpy(target, C, prog, dtype):
    fn, ref = PROGRAMS[prog]
    x = np.random.default_rng(C).uniform(-3, 3, (5, C)).astype(dtype)
    k = fs.fused_kernel(fn).compile(x, target=target)
    (plan,) = k.kernels
    assert plan.lowered.fold_lanes == fold_width(C, [op for op in plan.function.ops if op.name in FOLD_OPS])
    assert (plan.lowered.fold_lanes > FOLD_LANES) == (C >= 256)   # 129: 64 lanes are as cheap
    want = ref(x.astype(np.float64))
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(k.simulate(x).astype(np.float64), want, rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(k(x).astype(np.float64), want, rtol=tol, atol=tol * 4)


FOLD_OPS = ("sum", "mean", "max", "min")


def test_fold_width_is_the_cheapest():
    assert fold_width(64, []) == FOLD_LANES
    assert fold_width(17, []) == FOLD_LANES
    assert 256 <= fold_width(4096, [_Op("sum")]) <= 1024
    assert fold_width(100, [_Op("max")]) in (64, 128)


class _Op:
    def __init__(self, name):
        self.name = name


def test_long_rows_model_faster_than_64_lanes():
    """softmax over [4096, 4096] on 910B: its two reductions per row were 64 calls each."""
    x = np.zeros((4096, 4096), np.float32)
    k = fs.fused_kernel(lambda x: fs.softmax(x)).compile(fs.spec(x.shape), target="ascend910b")
    (plan,) = k.kernels
    narrow = dataclasses.replace(plan.lowered, fold_lanes=FOLD_LANES,
                                 fixed_bytes=plan.lowered.fixed_bytes - (plan.lowered.fold_lanes - FOLD_LANES) * 4)
    wide_t = kernel_work(kernel_ir(plan.lowered), kernel_words(plan.lowered, plan.tiling)).time_us(k.target)
    narrow_t = kernel_work(kernel_ir(narrow), kernel_words(narrow, narrow.tiling({}, k.target))).time_us(k.target)
    assert wide_t < 0.6 * narrow_t, (wide_t, narrow_t)


def test_symbolic_rows_keep_64_lanes():
    k = fs.fused_kernel(lambda x: fs.softmax(x)).compile(fs.spec(("R", "C")), target="ascend910b")
    assert k.kernels[0].lowered.fold_lanes == FOLD_LANES


@pytest.mark.parametrize("target,prog,dtype", [("ascend910b", "softmax", "float32"), ("ascend910", "mean_back", "float32"),
                                               ("ascend310p", "min_back", "float16")])
def test_rows_longer_than_ub_fold_their_chunks_wide(target, prog, dtype):
    """The multi-pass plan (a row bigger than UB, walked in chunks): each chunk folds into the
    wide lanes too (online softmax's running maxima and sums per lane), halved at the finish."""
    fn, ref = PROGRAMS[prog]
    x = np.random.default_rng(7).uniform(-3, 3, (2, 70001)).astype(dtype)
    k = fs.fused_kernel(fn).compile(x, target=target)
    (plan,) = k.kernels
    assert plan.lowered.passes is not None and plan.lowered.fold_lanes > FOLD_LANES
    want = ref(x.astype(np.float64))
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(k.simulate(x).astype(np.float64), want, rtol=tol, atol=tol * 4)
