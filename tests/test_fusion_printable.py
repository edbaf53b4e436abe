"""Fusion builds only kernels the target can print: no more GM inputs than the chip's VECIN
queue buffers (8 on ascend910b/ascend310p, 4 on ascend910), and no row kernel holding a value
that is neither a row nor one value per row. Every kernel's `printable` is a bool known at
compile time, and `require_ascendc=True` raises at compile time, at the op's line."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

QUEUES = {"ascend910b": 8, "ascend310p": 8, "ascend910": 4}


def _sum_of(n):
    ns = {"fs": fs}
    args = ", ".join(f"x{i}" for i in range(n))
    exec(f"def many({args}):\n    return fs.relu({' + '.join(f'x{i}' for i in range(n))})", ns)
    return ns["many"]


@pytest.mark.parametrize("target,n", [("ascend910b", 9), ("ascend310p", 12), ("ascend910", 5)])
def test_more_inputs_than_queues_split_into_printable_kernels(target, n):
    xs = [np.random.default_rng(i).uniform(-1, 1, (16, 40)).astype(np.float32) for i in range(n)]
    k = fs.fused_kernel(_sum_of(n), target=target).compile(*xs)
    assert len(k.kernels) == 2
    assert all(p.printable for p in k.kernels)
    assert all(len(p.function.params) <= QUEUES[target] for p in k.kernels)
    assert any(p.reason_code == "FS105" for p in k.kernels), [p.reason for p in k.kernels]
    np.testing.assert_allclose(k.simulate(*xs), np.maximum(sum(xs), 0), rtol=1e-5, atol=1e-5)


@fuzz_settings(scale=0.004)
@given(n=st.integers(1, 14), target=st.sampled_from(sorted(QUEUES)))
def test_generated_wide_sums_print_on_every_target(n, target):
    xs = [np.random.default_rng(i).uniform(-1, 1, (3, 33)).astype(np.float32) for i in range(n)]
    k = fs.fused_kernel(_sum_of(n), target=target).compile(*xs)
    assert all(p.printable for p in k.kernels)
    np.testing.assert_allclose(k.simulate(*xs), np.maximum(sum(xs), 0), rtol=1e-5, atol=1e-5)


def test_a_column_sum_feeding_a_row_kernel_prints():
    y = np.random.default_rng(0).uniform(-1, 1, (16, 40)).astype(np.float32)
    k = fs.fused_kernel(lambda y: fs.sum(y + fs.sum(y, 0) * 0.01, -1)).compile(y)
    assert [p.printable for p in k.kernels] == [True] * len(k.kernels)
    want = (y.astype(np.float64) + y.sum(0) * 0.01).sum(-1)
    np.testing.assert_allclose(k.simulate(y), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(k(y), want, rtol=1e-5, atol=1e-4)


def test_printable_is_a_bool_per_kernel():
    x = np.ones((4, 8), np.float32)
    k = fs.fused_kernel(lambda x: fs.relu(x) + 1).compile(x)
    assert [p.printable for p in k.kernels] == [True]
    x9 = np.ones((2,) * 9, np.float32)   # nine axes moved apart: more than the printed transpose decodes
    t = fs.fused_kernel(lambda x: fs.transpose(x, tuple(range(9))[::-1]) * 2.0).compile(x9)
    assert False in [p.printable for p in t.kernels]
    assert all(isinstance(p.printable, bool) for p in t.kernels)


def test_require_ascendc_raises_at_compile_time_at_the_users_line():
    x = np.ones((2,) * 9, np.float32)
    perm = tuple(range(9))[::-1]

    def transposed(x):
        return fs.transpose(x, perm) * 2.0   # nine axes moved apart: this transpose does not print

    with pytest.raises(fs.FusedslError) as info:
        fs.fused_kernel(transposed, require_ascendc=True).compile(x)
    assert "test_fusion_printable.py:" in str(info.value)
    assert "transpose" in str(info.value)
    # without it, compile succeeds and the kernel still runs on the CPU
    k = fs.fused_kernel(transposed).compile(x)
    np.testing.assert_array_equal(k(x), x.transpose(perm) * 2)


def _two_products(x, y):
    return fs.prod(x, axis=-1), fs.prod(y, axis=-1)


@pytest.mark.parametrize("target", sorted(QUEUES))
def test_view_loads_count_against_the_queue_limit(target):
    """Two int8 products over rows: each pairwise level reads the previous level's result
    through two slices, and folding one level's kernel into the next moves the slices onto
    its input (four loads of one tensor).  Fusion counts the merged kernel's view loads, one
    VECIN queue each, so on ascend910 (4 queues) the levels stay apart (FS105) instead of
    one kernel of 8 loads the printer refuses; every kernel prints and simulates like numpy."""
    rng = np.random.default_rng(3)
    x, y = (rng.integers(-128, 128, (8, 64)).astype(np.int8) for _ in range(2))
    k = fs.fused_kernel(_two_products).compile(x, y, target=target)
    assert all(p.printable for p in k.kernels), [p.reason for p in k.kernels]
    k.check_ascendc()
    for got, want in zip(k.simulate(x, y), (np.prod(x, -1, dtype=np.int8), np.prod(y, -1, dtype=np.int8))):
        np.testing.assert_array_equal(got, want)
    reasons = [p.reason for p in k.kernels if p.reason_code == "FS105"]
    if QUEUES[target] == 4:
        assert reasons and all("view loads, one VECIN queue each; ascend910 allows 4" in r for r in reasons), reasons
    else:
        assert not reasons, reasons


@fuzz_settings(scale=0.02)
@given(n=st.integers(1, 7), depth=st.integers(1, 3), target=st.sampled_from(sorted(QUEUES)))
def test_generated_slice_trees_print_on_every_target(n, depth, target):
    """n slices of a computed value, summed, `depth` times over: every level reads the one
    before through n views, and folding levels together multiplies the loads.  Every kernel
    fusion builds prints and simulates like numpy (before view loads counted against the queue
    limit: n=3, depth=3 on ascend310p built a kernel the printer refused)."""
    width = 8 * n ** depth
    x = np.random.default_rng(n).uniform(-1, 1, (4, width)).astype(np.float32)

    def level(v, w):
        parts = [v[:, i * w:(i + 1) * w] for i in range(n)]
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out * 0.5

    def tree(v, lib):
        w = width
        for _ in range(depth):
            w //= n
            v = level(v * 1.5, w)
        return lib.maximum(v, 0.0) if lib is np else fs.relu(v)

    k = fs.fused_kernel(lambda x: tree(x, fs)).compile(x, target=target)
    assert all(p.printable for p in k.kernels), [p.reason for p in k.kernels]
    k.check_ascendc()
    np.testing.assert_allclose(k.simulate(x), tree(x, np), rtol=1e-5, atol=1e-5)
