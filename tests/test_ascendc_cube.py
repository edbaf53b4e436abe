"""Cube kernels printed as Ascend C (Matmul high-level API + vector epilogue in UB) and run on
the CPU implementation of the API: results against numpy on 910B and 310P, a clear error on
910A, and the parts not printed yet saying so at the user's line."""
import os

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.reference import run_module


def _close(got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= tol * (1 + np.abs(want).max())


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("m,n,k", [(100, 56, 70), (33, 48, 19)])
def test_matmul_bias_leaky_relu_f16_agrees_with_numpy(target, m, n, k):
    @fs.fused_kernel(target=target)
    def f(x, w, b):
        return fs.leaky_relu(x @ w + b, 0.1)

    rng = np.random.default_rng(m)
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((k, n)).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    c = f.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    src = c.source
    assert src.index("REGIST_MATMUL_OBJ") < src.index("op.Process(&pipe)")
    assert "GetTensorC<true>" in src and "mm.End()" in src
    assert ("KERNEL_TYPE_MIX_AIC_1_2" in src) == (target == "ascend910b")
    assert ("SetLocalWorkspace" in src) == (target == "ascend310p")
    got = c.simulate(x, w, b)
    ref = x.astype(np.float64) @ w.astype(np.float64) + b
    _close(got, np.where(ref > 0, ref, 0.1 * ref), 2e-3)
    _close(got, run_module(c.graph, [x, w, b])[0], 2e-3)


def test_matmul_gelu_residual_f32_and_a_cast_to_f16():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w, r):
        y = fs.gelu(x @ w) + r
        return y, fs.cast(y, "float16")

    rng = np.random.default_rng(3)
    x = rng.standard_normal((45, 37)).astype(np.float32)
    w = rng.standard_normal((37, 40)).astype(np.float32)
    r = rng.standard_normal((45, 40)).astype(np.float32)
    c = f.compile(x, w, r)
    assert [p.kind for p in c.kernels] == ["cube"]
    got = c.simulate(x, w, r)
    want = run_module(c.graph, [x, w, r])
    _close(got[0], want[0], 1e-4)
    _close(got[1], want[1], 2e-3)
    for a, b in zip(got, c(x, w, r)):
        _close(a, b, 2e-3)


def test_ascend910_has_no_matmul_api():
    @fs.fused_kernel(target="ascend910")
    def f(x, w):
        return fs.relu(x @ w)   # the line the error names

    x = np.ones((16, 16), np.float16)
    c = f.compile(x, x)
    with pytest.raises(fs.TargetError) as info:
        c.source
    msg = str(info.value)
    assert "ascend910 has no Matmul high-level API" in msg and f"{os.path.basename(__file__)}:" in msg
    np.testing.assert_allclose(c(x, x), np.maximum(x @ x, 0))   # the CPU executors still run it


@pytest.mark.parametrize("target,dtype", [("ascend910b", np.float32), ("ascend310p", np.float16)])
def test_batched_matmul_gelu_residual_agrees_with_numpy(target, dtype):
    @fs.fused_kernel(target=target)
    def f(x, w, r):
        return fs.gelu(x @ w) + r

    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 17, 24)).astype(dtype)
    w = rng.standard_normal((3, 24, 20)).astype(dtype)
    r = rng.standard_normal((3, 17, 20)).astype(dtype)
    c = f.compile(x, w, r)
    assert [p.kind for p in c.kernels] == ["cube"] and "3 batch matrices" in c.kernels[0].row.plan_note
    want = run_module(c.graph, [x, w, r])[0]
    _close(c.simulate(x, w, r), want, 3e-3)
    _close(c(x, w, r), want, 3e-3)


def test_a_broadcast_batch_axis_is_not_printed_yet_and_says_so():
    """[3, M, K] @ [2, 3, K, N]: A's batch axes are neither all nor none of the result's."""
    @fs.fused_kernel
    def f(x, w):
        return fs.relu(x @ w)

    x = np.ones((3, 16, 16), np.float32)
    w = np.ones((2, 3, 16, 16), np.float32)
    c = f.compile(x, w)
    with pytest.raises(fs.ScheduleError, match=r"flattens a matmul's batch axes only when each operand has all of "
                                               r"them or none .*x's batch axes \[3\] broadcast against \[2, 3\]"):
        c.source
    np.testing.assert_allclose(c(x, w), np.maximum(x @ w, 0))


def test_cube_kernels_save_as_op_projects(tmp_path):
    """The op-project layout carries the TCubeTiling (tests/test_op_project_cube.py builds and runs them)."""
    @fs.fused_kernel
    def f(x, w):
        return fs.relu(x @ w)

    x = np.ones((16, 16), np.float32)
    path = f.compile(x, x).save(str(tmp_path / "p"), layout="op")
    host = next(open(os.path.join(root, n), encoding="utf-8").read() for root, _, names in os.walk(path)
                for n in names if n.endswith("_tiling.h"))
    assert "TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData)" in host


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_linear_layer_x_at_w_transposed_is_one_printed_kernel(target):
    """x @ w.T + b (nn.Linear): the transpose folds into the matmul (B read transposed, isTrans)."""
    @fs.fused_kernel(target=target)
    def linear(x, w, b):
        return fs.gelu(x @ w.T + b)

    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 24)).astype(np.float16)
    w = rng.standard_normal((36, 24)).astype(np.float16)
    b = rng.standard_normal(36).astype(np.float16)
    c = linear.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"] and "transpose_b = true" in c.ir
    assert "SetTensorB(gm_p_w[offB], true)" in c.source
    _close(c.simulate(x, w, b), run_module(c.graph, [x, w, b])[0], 3e-3)
    _close(c(x, w, b), run_module(c.graph, [x, w, b])[0], 3e-3)


def test_l1_headroom_bounds_the_cube_tiling():
    @fs.fused_kernel
    def f(x, w):
        return fs.relu(x @ w)

    x = np.ones((256, 4096), np.float16)
    w = np.ones((4096, 256), np.float16)
    roomy = f.compile(x, w).kernels[0].row.tiling_fields
    tight = f.compile(x, w, l1_headroom=0.1).kernels[0].row.tiling_fields
    l1 = fs.fused_kernel(lambda a: a).compile(np.ones(1, np.float32)).target.l1_bytes
    assert roomy.l1_bytes <= 0.8 * l1 and tight.l1_bytes <= 0.1 * l1 < roomy.l1_bytes
    with pytest.raises(fs.ScheduleError, match=r"FS110: one K step of A and B \(\d+ bytes\) does not fit the \d+ "
                                               r"bytes of L1 allowed on ascend910b"):
        f.compile(x, w, l1_headroom=0.001).source



def test_a_kernel_printed_again_is_remembered_and_equals_a_fresh_print(monkeypatch):
    """printer_kernel.KERNEL_TEXT: a program compiled again prints the kernel object the kernel passes
    kept, from the memo -- the text a fresh print gives; a primitive registered again since is printed
    anew, and a debug print (the user's lines beside the statements) is never remembered."""
    import dataclasses

    from fusedsl.backend_ascendc import printer_kernel as pk
    from fusedsl.backend_ascendc.printers import printer_for_plan
    from fusedsl.lower.kinds import kernel_ir
    from fusedsl.tile.prims import PRIMS

    def f(x, w, r):
        return fs.gelu(x @ w) * r

    x, w, r = (np.ones(s, np.float32) for s in ((24, 40), (40, 16), (24, 16)))
    compiles = [fs.fused_kernel(f, target="ascend910b").compile(x, w, r) for _ in range(3)]
    plan, target = compiles[2].kernels[0], compiles[2].target
    k = kernel_ir(plan.lowered)
    assert kernel_ir(compiles[1].kernels[0].lowered) is k   # the kept kernel, handed out again
    remembered = compiles[1].source
    assert any(hit[0]() is k for hit in pk.KERNEL_TEXT.values())
    assert compiles[2].source == remembered   # from the memo
    monkeypatch.setattr(pk, "KERNEL_TEXT", {})
    assert fs.fused_kernel(f, target="ascend910b").compile(x, w, r).source == remembered   # printed afresh
    # the entry lists the primitives its steps print by; one registered again since prints anew
    (prims,) = [hit[2] for key, hit in pk.KERNEL_TEXT.items() if hit[0]() is k and key[-1]]
    op, prim = next((op, p) for op, p in prims if p.form == "unary")
    text = printer_for_plan(plan, target).kernel()
    monkeypatch.setitem(PRIMS, op, dataclasses.replace(prim, api="Renamed"))
    again = printer_for_plan(plan, target).kernel()
    assert "AscendC::Renamed(" in again and again.replace("AscendC::Renamed(", f"AscendC::{prim.api}(") == text
    debug = pk.KernelPrinter(plan.lowered, target, plan.name, debug=True).kernel()
    assert "test_ascendc_cube.py" in debug and all(hit[1] != debug for hit in pk.KERNEL_TEXT.values())


def test_int_literals_remembered_equal_fresh_ones():
    """printer_kernel._int_literal keeps each int's literal (_INT_TEXT): a remembered text equals
    the literal printed afresh, a bool or an int subclass equal to a kept int never takes its text,
    and the memo empties when full."""
    import enum

    from fusedsl.backend_ascendc import printer_kernel as pk

    def fresh(e):
        return f"{e}u" if e >= 0 else f"({e})"

    ints = [0, 1, -1, 7, 8, 16, 255, 256, 65535, 2**31, 2**32 - 1, -2**31, 10**30, -10**30]
    for _ in range(2):   # the second time from the memo
        assert [pk._int_literal(e) for e in ints] == [fresh(e) for e in ints]
    assert 1 in pk._INT_TEXT and 0 in pk._INT_TEXT

    class Flag(enum.IntEnum):
        ON = 1

    class Wide(int):
        def __format__(self, spec):
            return "wide"

    assert pk._int_literal(Flag.ON) == f"{Flag.ON}u"
    assert pk._int_literal(Wide(1)) == "wideu" != pk._int_literal(1)
    assert pk.c_expr(("+", "a", 1)) == "a + 1u" and pk._c(1)[0] == "1u"
    with pytest.raises(TypeError, match="bool is not an expression"):
        pk.c_expr(("+", "a", True))
    pk._INT_TEXT.clear()
    for e in range(pk._INT_TEXT_MAX + 10):
        assert pk._int_literal(e) == fresh(e)
    assert len(pk._INT_TEXT) <= pk._INT_TEXT_MAX


def test_expression_texts_and_process_names_equal_a_fresh_walk():
    """printer_kernel.c_expr keeps each expression tuple's text by its marshal bytes: a remembered
    text equals a fresh print (_c) for either field signedness, and 1, 1.0 and True -- equal as dict
    keys -- print apart; `_names` (the process body's names, its record types remembered) equals a
    plain recursive walk of every field."""
    import dataclasses

    from fusedsl.backend_ascendc import printer_kernel as pk
    from fusedsl.lower.kinds import kernel_ir

    exprs = [("+", "t.n", 1), ("+", "t.n", 1.0), ("*", ("+", "a", 2), "t.baseM"), ("min", "a", -3),
             ("pad", ("-", "t.n", "b"), 16), 7, -7, 0, "t.baseN", "x"]
    for signed in (False, True):
        fresh = [pk._c(e, signed)[0] for e in exprs]
        assert [pk.c_expr(e, signed) for e in exprs] == fresh == [pk.c_expr(e, signed) for e in exprs]
    assert pk.c_expr(("+", "t.n", 1)) == "tiling.n + 1u" != pk.c_expr(("+", "t.n", 1.0))
    assert pk.c_expr(("+", "t.n", 1), True) == "uint32_t(tiling.n) + 1u"
    with pytest.raises(TypeError, match="bool is not an expression"):
        pk.c_expr(("+", "t.n", True))

    def walk(x, out, expr=False):   # every str the process's nodes and expressions hold
        if isinstance(x, str):
            out.add(x)
        elif isinstance(x, tuple) and x and all(dataclasses.is_dataclass(e) for e in x):
            for e in x:
                walk(e, out)
        elif isinstance(x, tuple):
            for e in x[1:]:
                walk(e, out, True)
        elif dataclasses.is_dataclass(x) and not expr:
            for v in vars(x).values():
                walk(v, out)
        return out

    x, w = np.ones((24, 40), np.float32), np.ones((40, 16), np.float32)
    k = kernel_ir(fs.fused_kernel(lambda a, b: fs.relu(a @ b), target="ascend910b").compile(x, w).kernels[0].lowered)
    assert pk._names(k.process) == walk(k.process, set()) and {"block", "cube"} <= pk._names(k.process)
