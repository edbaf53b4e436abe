"""The loop-level tile IR (tile/kernel.py): text round trip, parse errors, the kernel
interpreter's checks, and the transpose kind lowered to it (printed by printer_kernel.py).

The transpose / stepped-slice kernels themselves are checked against numpy by the interpreter
(tests/test_lone_views.py, hypothesis over shapes) and under simulate (the printed source)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir
from fusedsl.targets import get_target
from fusedsl.tile.kernel import (BINARY, Alloc, CopyIn, EnQue, Free, Let, Queue, _gets, _names_read, evaluate,
                                 format_expr, print_kernel, verify_kernel)
from fusedsl.tile.parse import TileKernelParseError, parse_expr, parse_kernel
from fusedsl.tile.verify import TileVerifyError


def _transpose(shape=(30, 17), perm=(1, 0), dtype=fs.float32, target="ascend910b"):
    @fs.fused_kernel
    def tr(v):
        return fs.transpose(v, perm)

    k = tr.compile(fs.spec(shape, dtype), target=target)
    (plan,) = k.kernels
    return k, plan


@pytest.mark.parametrize("text, value", [
    ("a + b * 3", 7), ("(a + b) * 3", 9), ("a - (b - c)", 2), ("min(t.A - a, t.ta)", 4),
    ("pad(t.tc, 8) * t.ta", 32), ("t.outerSize[b - 1]", 8), ("a * 6 % 4 == 2", 1), ("0 - 1", 2**32 - 1)])
def test_expressions_parse_print_and_evaluate(text, value):
    env = {"a": 1, "b": 2, "c": 3, "t.A": 5, "t.ta": 4, "t.tc": 5, "t.outerSize": [7, 8]}
    e = parse_expr(text)
    assert format_expr(e) == text and evaluate(e, env) == value


def test_transpose_kernel_text_round_trips_and_dumps(tmp_path, monkeypatch):
    for mode_shape, perm in (((30, 17), (1, 0)), ((4, 6, 5), (1, 0, 2))):
        k, plan = _transpose(mode_shape, perm)
        text = plan.tile_ir
        assert text.startswith(f"kernel @{plan.name} kind transpose")
        assert print_kernel(parse_kernel(text)) == text
        assert "stage Geometry(tile):" in text and "copyin xt <- v[" in text
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))
    k, plan = _transpose((9, 5), (1, 0))
    dumped = (tmp_path / f"tile-{plan.name}-kernel.tile").read_text()
    assert dumped == plan.tile_ir


@pytest.mark.parametrize("old, new, what", [
    ("kernel @", "kernal @", "expected 'kernel @<name> kind <kind>'"),
    ("  let ic = tile % t.tilesC", "  let ic = tile %% t.tilesC", "unexpected '%'"),
    ("  enque q_x xt", "  enqueue q_x xt", "not a statement"),
    ("field A", "fiel A", "not a kernel line"),
    ("  for k in 0 .. t.nOuter down:", "  for k in 0 .. t.nOuter) down:", "trailing text"),
])
def test_malformed_kernel_text_names_the_line(old, new, what):
    _, plan = _transpose()
    lines = plan.tile_ir.split("\n")
    line = lines.index(old) + 1 if old in lines else 1
    with pytest.raises(TileKernelParseError, match=f"tile kernel text line {line}: .*{what}"):
        parse_kernel(plan.tile_ir.replace(old, new, 1))


def _with_stage(kernel, name, body):
    stages = [dataclasses.replace(st, body=body) if st.name == name else st for st in kernel.stages]
    return dataclasses.replace(kernel, stages=stages)


def test_the_interpreter_checks_bounds_and_the_queue_protocol():
    """Each break of what the IR promises is a TileVerifyError naming the kernel and stage."""
    _, plan = _transpose()
    good = kernel_ir(plan.lowered)
    x = np.arange(30 * 17, dtype=np.float32).reshape(30, 17)
    out = np.zeros((17, 30), np.float32)
    run_kernel(good, [x], [out])
    np.testing.assert_array_equal(out, x.T)
    copy_in = next(st for st in good.stages if st.name == "CopyIn")
    cases = {
        "leave its 510": (Alloc("xt", "q_x"), CopyIn("xt", "v", 500, 1, 20, 0, 8), EnQue("q_x", "xt")),
        "has no free buffer": (Alloc("xt", "q_x"), Alloc("xu", "q_x"), Alloc("xw", "q_x"), EnQue("q_x", "xt")),
        "was not allocated from q_y": (Alloc("xt", "q_x"), EnQue("q_y", "xt")),
        "tensor xt is not held": (CopyIn("xt", "v", 0, 1, 8, 0, 8),),
        "ends holding": copy_in.body + (Alloc("extra", "q_x"),),
    }
    for message, body in cases.items():
        bad = _with_stage(good, "CopyIn", body)   # "ends holding": one tile, `extra` never freed
        with pytest.raises(TileVerifyError, match=f"kernel {plan.name}.*{message}"):
            run_kernel(bad, [x], [np.zeros((17, 30), np.float32)])
    short = dataclasses.replace(good, words=good.words[:-1])
    with pytest.raises(TileVerifyError, match="tiling words for a struct of"):
        run_kernel(short, [x], [out])


def test_printed_transpose_walks_the_tile_kernel():
    """The printer prints the IR's nodes: the stages as methods, Process calling them per tile,
    the queue protocol and the DMA helpers; the same source on both chips' paths."""
    for target in ("ascend910b", "ascend310p"):
        k, plan = _transpose((4, 6, 5), (2, 0, 1), fs.float16, target)
        src = k.source
        for line in ("Geometry(tile);", "CopyIn();", "Compute();", "CopyOut();",
                     "__aicore__ inline void Geometry(uint32_t tile)",
                     "AscendC::LocalTensor<half> xt = q_x.AllocTensor<half>();",
                     "yt.SetValue(c * taPad + r, xt.GetValue(r * tcPad + c));",
                     "for (uint32_t k = tiling.nOuter; k-- > 0u;) {", "q_y.FreeTensor(yt);"):
            assert line in src, line
        assert Free("q_y", "yt") in next(st for st in kernel_ir(plan.lowered).stages if st.name == "CopyOut").body


@pytest.mark.parametrize("name", ["sumsq", "var_resident", "mean_f16", "max_nan", "scalars"])
def test_column_kernels_run_from_their_text(name):
    """The column kind's TileKernel (lower/column_tile.py), read back from its text and run by the
    interpreter, agrees with numpy: a fused producer, var's two walks over rows held in UB
    (resident), a float16 mean (float32 accumulation, one rounding), max with NaN, a one-element
    tensor and a runtime scalar (members loaded from GM / from the tiling's typed field)."""
    g = np.random.default_rng(3)
    x32 = g.standard_normal((37, 45)).astype(np.float32)
    nan = x32.copy()
    nan[5, 7] = np.nan
    progs = {
        "sumsq": (lambda x: fs.sum(x * x, 0), [x32], lambda x: (x * x).sum(0)),
        "var_resident": (lambda x: fs.var(x, 0), [g.standard_normal((300, 70)).astype(np.float32)],
                         lambda x: x.var(0)),
        "mean_f16": (lambda x: fs.mean(x, (0, 1)) * 2.0, [g.standard_normal((5, 6, 40)).astype(np.float16)],
                     lambda x: (x.astype(np.float32).mean((0, 1)) * 2).astype(np.float16)),
        "max_nan": (lambda x: fs.max(x, 0) + 1.0, [nan], lambda x: x.max(0) + 1),
        "scalars": (lambda x, s, r: fs.sum(x * s, 0) + r, [x32, np.array([0.5], np.float32), 3.0],
                    lambda x, s, r: (x * s).sum(0) + r),
    }
    f, args, want_fn = progs[name]
    specs = [fs.scalar("r", fs.float32) if isinstance(a, float) else a for a in args]
    k = fs.fused_kernel(f, target="ascend910b").compile(*specs)
    (plan,) = k.kernels
    assert plan.kernel_kind == "column" and plan.printable
    text = plan.tile_ir
    assert text.startswith(f"kernel @{plan.name} kind column") and print_kernel(parse_kernel(text)) == text
    if name == "var_resident":
        assert plan.lowered.resident and text.count("copyin e0") == 1   # x read once for both walks
    want = np.asarray(want_fn(*args))
    out = np.zeros(want.shape, want.dtype)
    run_kernel(parse_kernel(text), args, [out])
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=2e-3 if name == "mean_f16"
                               else 2e-5, atol=1e-5)


def test_the_static_verifier_names_each_broken_rule():
    """verify_kernel runs on every kernel lowered to the loop-level IR (lower/kinds.lower_kernel):
    each rule it keeps, broken in a copy of a real transpose kernel, is a TileVerifyError that
    names the kernel and what is wrong."""
    t = get_target("ascend910b")
    _, plan = _transpose()
    good = kernel_ir(plan.lowered)
    verify_kernel(good, t)
    copy_in = next(st for st in good.stages if st.name == "CopyIn").body
    broken = {
        "names queue q_z, which is not allocated": _with_stage(good, "CopyIn", (Alloc("xt", "q_z"),) + copy_in[1:]),
        "reads zz, which is not set before": _with_stage(good, "CopyIn", (Let("w", ("+", "zz", 1)),) + copy_in),
        "tensor xt is used before it is taken from a queue": _with_stage(good, "CopyIn", copy_in[1:]),
        "names GM tensor nope": _with_stage(good, "CopyIn", (copy_in[0], dataclasses.replace(copy_in[1], gm="nope"),
                                                              copy_in[2])),
        "10 queue buffers on VECIN; ascend910b allows 8": dataclasses.replace(
            good, queues=good.queues + [Queue(f"q_more{i}", "VECIN", 2, fs.float32, 8) for i in range(4)]),
        "the UB plan takes": dataclasses.replace(
            good, queues=good.queues + [Queue("q_big", "VECCALC", 1, fs.float32, 60000)]),
    }
    for message, kernel in broken.items():
        with pytest.raises(TileVerifyError, match=f"tile kernel {plan.name}: .*{message}"):
            verify_kernel(kernel, t)


def test_the_ub_plan_is_read_from_the_kernel():
    """The report's UB plan of a transpose and of a column kernel is the IR's queues at the tiling
    (what the printer's InitBuffer calls allocate)."""
    _, plan = _transpose((64, 33), (1, 0), fs.float16)
    assert plan.ub_plan == [("q_x", "VECIN", 64 * 48 * 2, 2), ("q_y", "VECOUT", 33 * 64 * 2, 2)]
    k = fs.fused_kernel(lambda x: fs.sum(x * x, 0), target="ascend910b").compile(np.ones((37, 45), np.float32))
    col = k.kernels[0]
    assert [(n, p) for n, p, _, _ in col.ub_plan][:3] == [("q_e0", "VECIN"), ("q_y0", "VECOUT"), ("b_acc0", "VECCALC")]
    assert "pipe.InitBuffer(q_e0, 2, tiling.kt * tiling.bn * sizeof(float));" in k.source


@fuzz_settings(scale=0.04)
@given(a=st.integers(1, 3), k=st.integers(1, 40), b=st.integers(1, 70), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float16]), target=st.sampled_from(["ascend910b", "ascend910"]))
def test_generated_column_kernels_interpret_like_numpy(a, k, b, data, dtype, target):
    """Column kernels over [A, K, B] (odd sizes, size 1, 16-bit inputs, a chip without DataCopyPad)
    from their TileKernel text, run by the interpreter with its bounds and queue checks, agree
    with numpy: a reduction over K of an elementwise producer, then a consumer."""
    red = data.draw(st.sampled_from(["sum", "mean", "max", "min", "var"]))
    g = np.random.default_rng(a * 1000 + k * 10 + b)
    x = g.standard_normal((a, k, b)).astype(dtype)

    def f(v):
        r = getattr(fs, red)(v * 0.5 + 1.0, 1)
        return r * 2.0

    comp = fs.fused_kernel(f, target=target).compile(x)
    plans = [p for p in comp.kernels if p.kernel_kind == "column"]
    if not plans:   # a lone reduction the row kind takes ([A, K] rows), or fused otherwise
        return
    (plan,) = plans
    want = comp(x)
    out = np.zeros(want.shape, want.dtype)
    run_kernel(parse_kernel(plan.tile_ir), [x], [out])
    tol = 2e-2 if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_expression_text_is_remembered_with_its_literals_kinds():
    """format_expr keeps the text of the expressions it printed (kernels print the same few dozen
    again and again), keyed so that 1, 1.0 and True -- equal as dict keys -- stay apart."""
    assert format_expr(("+", "t.n", 1)) == "t.n + 1"
    assert format_expr(("+", "t.n", 1.0)) == "t.n + #1.0"
    assert format_expr(("+", "t.n", 1), "tiling.") == "tiling.n + 1"
    with pytest.raises(TypeError, match="bool is not an expression"):
        format_expr(("+", "t.n", True))
    assert format_expr(("+", "t.n", 1)) == "t.n + 1"


def _row_kernel_text() -> str:
    """A row kernel with every kind of node the row lowering makes: GM loads, loops, vector calls,
    steps with scalars, Get/SetValue and both syncs."""
    x = np.ones((2, 8), np.float32)
    comp = fs.fused_kernel(lambda x, s, p: fs.layer_norm(x) * s + p, target="ascend910b").compile(
        x, np.ones((1,), np.float32), np.ones((2, 1), np.float32))
    return print_kernel(kernel_ir(comp.kernels[0].lowered))


@pytest.mark.parametrize("old, new, message", [
    ("load(p, po2)", "load(q, po2)", "load\\(q\\) names no GM tensor"),
    ("set po2g /= t.dims[0]", "set pz /= t.dims[0]", "set pz before it is declared"),
    ("scalar s_a1 -> sv5", "scalar s_a1 -> sv99", "step 'mul .*' reads scalar sv99, which is not a member"),
    ("vec Add lanes <- lanes, rv_float32_1[k]", "vec Add lanes <- lanes, nowhere[k]",
     "tensor nowhere is used before it is taken from a queue"),
    ("vec Add lanes <- lanes, rv_float32_1[k]", "vec Add lanes <- lanes, rv_float32_1[kk]",
     "kk reads kk, which is not set before"),
    ("    dup lanes <- #0.0 count 64\n    for k in 0 .. t.C step 64:\n      vec Add lanes <- lanes, rv",
     "    dup nowhere <- #0.0 count 64\n    for k in 0 .. t.C step 64:\n      vec Add lanes <- lanes, rv",
     "tensor nowhere is used before it is taken from a queue"),
    ("map out0_2 -> y0[r * t.Cpad]", "map out0_2 -> nowhere[r * t.Cpad]",
     "tensor nowhere is used before it is taken from a queue"),
    ("map out0_2 -> y0[r * t.Cpad]", "map out0_2 -> y0[rr * t.Cpad]",
     "rr \\* t.Cpad reads rr, which is not set before"),
    ("put rs_float32[0] <- sv4", "put nowhere[0] <- sv4", "tensor nowhere is used before it is taken from a queue"),
    ("put rs_float32[0] <- sv4", "put rs_float32[0] <- sv44", "sv44 reads sv44, which is not set before"),
    ("  enque q_y0 y0\n", "  enque q_zz y0\n", "enque names queue q_zz, which is not allocated"),
    ("  enque q_y0 y0\n", "  let w = po2\n  enque q_y0 y0\n", "po2 reads po2, which is not set before"),
    ("    var po2 = 0\n", "    var po2 = 0\n    alloc extra = b_red\n", None),
    (("    var po2 = 0\n", "    var po2 = 0\n    alloc extra = b_red\n"), ("  enque q_y0 y0\n", "  enque q_y0 extra\n"),
     "tensor extra is used before it is taken from a queue"),
    ("rows nrows ; cols t.C ; gm t.C ; ub t.Cpad\n  free", "rows nrowz ; cols t.C ; gm t.C ; ub t.Cpad\n  free",
     "nrowz reads nrowz, which is not set before"),
    ("    sync V_S\n    val sv5", "    val sv5", "GetValue of rs_float32 after a vector op wrote it, with no V_S sync"),
    ("    sync S_V\n", "", "a vector op reads rs_float32 after SetValue wrote it, with no S_V sync between"),
    ("  enque q_y0 y0\n", "  copyout y0[0] <- y0 rows 1 ; cols 1 ; gm 1 ; ub 1\n  enque q_y0 y0\n",
     "a DMA copies y0 out after a vector op or SetValue wrote it, with no barrier or queue between"),
    ("  deque in_x_0 = q_in_x_0\n",
     "  alloc in_x_0 = q_in_x_0\n  copyin in_x_0 <- x[0] rows 1 ; cols 1 ; gm 1 ; ub 1\n",
     "a vector op reads in_x_0 after a DMA wrote it, with no barrier or queue between"),
])
def test_the_static_verifier_fires_on_each_rule_in_a_row_kernel(old, new, message):
    """Each rule verify_kernel keeps, broken by an edit of a real row kernel's text (old -> new, or
    two such edits), is a TileVerifyError naming what is wrong (message None: still a valid
    kernel); the unedited kernel verifies.  (The rules on GM tensors, queues per position and the
    UB plan: test_the_static_verifier_names_each_broken_rule; Matmul objects, parts and calls:
    test_tile_kernel_cube.py.)"""
    target = get_target("ascend910b")
    text = _row_kernel_text()
    verify_kernel(parse_kernel(text), target)
    for a, b in [old, new] if isinstance(old, tuple) else [(old, new)]:
        assert a in text
        text = text.replace(a, b, 1)
    if message is None:
        verify_kernel(parse_kernel(text), target)
        return
    with pytest.raises(TileVerifyError, match=f"tile kernel lambda_kernel: {message}"):
        verify_kernel(parse_kernel(text), target)


def _expressions(value, out: list) -> list:
    """Every expression (int, str, float or tuple) held by a kernel's records, depth first."""
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], str) and (
            value[0] in BINARY or value[0] in ("min", "pad", "[]", "load", "get", "cast", "neg", "fmax", "fmin",
                                               "sel")):
        out.append(tuple(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _expressions(getattr(value, f.name), out)
    elif isinstance(value, (tuple, list)):
        for x in value:
            _expressions(x, out)
    return out


def _kernels_of_every_kind() -> list:
    """The tile kernels (after the kernel passes) of a row (single-read and multi-pass), cube,
    cube group (a kernel of parts), column, transpose and elementwise program."""
    programs = [(lambda x: fs.softmax(x), [(4, 96)]), (lambda x, g: fs.layer_norm(x, g, g), [(3, 70000), (70000,)]),
                (lambda x, w: fs.relu(x @ w), [(32, 48), (48, 64)]), (lambda x: fs.sum(x * x, 0), [(37, 45)]),
                (lambda x, a, b: (fs.relu(x @ a.T), x @ b.T * 2), [(18, 24), (40, 24), (40, 24)]),
                (lambda x: fs.transpose(x, (1, 0)), [(30, 17)]), (lambda x, y: fs.relu(x) * y, [(8, 64), (64,)])]
    kernels = []
    for fn, shapes in programs:
        dtype = np.float16 if len(shapes) == 3 else np.float32   # (the cube group in float16)
        comp = fs.fused_kernel(fn, target="ascend910b").compile(*[np.ones(s, dtype) for s in shapes])
        kernels += [kernel_ir(plan.lowered) for plan in comp.kernels]
    return kernels


def test_a_kernel_printed_under_another_name_is_its_renamed_copys_text():
    """print_kernel(k, name=...) (the kernel passes' memo key: k's text without its name) is the
    text of k renamed, its parts keeping theirs."""
    kernels = _kernels_of_every_kind()
    assert any(k.parts for k in kernels)
    for k in kernels:
        for name in ("", "other"):
            assert print_kernel(k, name=name) == print_kernel(dataclasses.replace(k, name=name))
        assert print_kernel(k, locs=False, name="") == print_kernel(dataclasses.replace(k, name=""), locs=False)


def _fresh_names(e) -> list:
    if isinstance(e, str):
        return [e]
    if not isinstance(e, tuple):
        return []
    if e[0] == "load":
        return [("load", e[1])] + [n for x in e[2:] for n in _fresh_names(x)]
    if e[0] in ("cast", "get"):
        return _fresh_names(e[2])
    return [n for x in e[1:] for n in _fresh_names(x)]


def _fresh_gets(e) -> set:
    if not isinstance(e, tuple):
        return set()
    return ({e[1]} if e[0] == "get" else set()).union(*(_fresh_gets(x) for x in e[1:]))


def test_the_verifiers_remembered_names_equal_a_fresh_walk():
    """The names an expression reads and the tensors it reads with GetValue (what verify_kernel and
    the pass `reuse` ask of every expression, remembered per expression: tile/kernel._names_read,
    _gets) equal a fresh walk of each expression of row, column, cube and transpose kernels, asked
    twice, and of each with its ints as floats and as bools (equal dict keys, same answers)."""
    exprs = []
    for k in _kernels_of_every_kind():
        _expressions(k, exprs)
    assert len(exprs) > 100 and any(e[0] == "get" for e in exprs) and any(e[0] == "load" for e in exprs)

    def retyped(e, kind):
        return tuple(kind(x) if type(x) is int else retyped(x, kind) if isinstance(x, tuple) else x for x in e)

    for e in exprs:
        for variant in (e, retyped(e, float), retyped(e, bool), e):
            assert list(_names_read(variant)) == _fresh_names(variant), variant
            assert _gets(variant) == _fresh_gets(variant), variant
    odd = ("+", ("get", "t", "i"), ["not", "hashable"])   # (not remembered: worked out each time)
    assert _names_read(odd) == ("i",) and _gets(odd) == {"t"}
