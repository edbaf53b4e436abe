"""Cube kernels as loop-level tile kernels (lower/cube_tile.py): their text round-trips, and the
kernel interpreter (backend_cpu/kernel_interp.py: the Matmul object's block product handed out
tile by tile, with its bounds and queue checks) runs the parsed text like the LLVM call: plain,
bias and residual epilogues, transposed operands, batches, scalars, per-row outputs, row
epilogues (softmax, layer_norm), int8 operands wrapped like numpy, A's panel in L1 (NZ), on
910B and 310P.  The printed Ascend C of the same kernels runs under simulate in
test_ascendc_cube*.py and tools/kernel_corpus.py."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
import fusedsl.lower.cube as lower_cube
import fusedsl.reference as reference
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower import kinds
from fusedsl.lru import Lru
from fusedsl.lower.cube_tile import _CubeLowering, cube_tile_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.targets import get_target
from fusedsl.tile import kernel_cost, kernel_reuse
from fusedsl.tile.kernel import MmSet, Stage, print_kernel, verify_kernel
from fusedsl.tile.parse import TileKernelParseError, parse_kernel
from fusedsl.tile.verify import TileVerifyError

# name -> (function, shapes of (x, w, r) as functions of (m, k, n))
PROGRAMS = {
    "bias_leaky": (lambda x, w, r: fs.leaky_relu(x @ w + r, 0.1), lambda m, k, n: [(m, k), (k, n), (n,)]),
    "residual": (lambda x, w, r: fs.sigmoid(x @ w) * r, lambda m, k, n: [(m, k), (k, n), (m, n)]),
    "transposed": (lambda x, w, r: fs.transpose(x) @ fs.transpose(w) - r, lambda m, k, n: [(k, m), (n, k), (1,)]),
    "batched": (lambda x, w, r: fs.relu(x @ w) + r, lambda m, k, n: [(2, m, k), (2, k, n), (n,)]),
    "rowsum": (lambda x, w, r: (fs.exp(x @ w), fs.sum(x @ w, axis=-1)), lambda m, k, n: [(m, k), (k, n), (1,)]),
    "softmax": (lambda x, w, r: fs.softmax(x @ w + r), lambda m, k, n: [(m, k), (k, n), (n,)]),
    "layer_norm": (lambda x, w, r: fs.layer_norm(x @ w, r), lambda m, k, n: [(m, k), (k, n), (n,)]),
}


def _interpret(comp, args, names=("x", "w", "r")):
    """Run the compiled program's cube kernel from its printed TileKernel text."""
    (plan,) = [p for p in comp.kernels if p.kernel_kind == "cube"]
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text
    want = comp(*args)
    wants = want if isinstance(want, tuple) else (want,)
    outs = [np.zeros(np.shape(w), np.asarray(w).dtype) for w in wants]
    by_name = dict(zip(names, args))
    inputs = [by_name[p.value.name] for p in plan.function.params]
    run_kernel(kernel, inputs, outs, kernel_words(plan.lowered, plan.tiling))
    return outs, wants, text


@fuzz_settings(scale=0.05)
@given(name=st.sampled_from(sorted(PROGRAMS)), m=st.integers(1, 70), k=st.integers(1, 40), n=st.integers(1, 90),
       dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(["ascend910b", "ascend310p"]))
def test_generated_cube_kernels_interpret_like_the_call(name, m, k, n, dtype, target):
    if dtype == "float32" and target == "ascend310p":
        dtype = "float16"   # 310P's Matmul has no float32 x float32 form
    f, shapes = PROGRAMS[name]
    g = np.random.default_rng(m * 10000 + k * 100 + n)
    args = [(g.standard_normal(s) * 0.5).astype(dtype) for s in shapes(m, k, n)]
    comp = fs.fused_kernel(f, target=target).compile(*args)
    outs, wants, _ = _interpret(comp, args)
    tol = 2e-3 if dtype == "float32" else 2e-2
    for got, want in zip(outs, wants):
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", [(1, True), (2, True)])
def test_a_panel_in_l1_and_several_cores(layout, monkeypatch):
    """Each core's A panel in L1 (a TSCM queue, copied in NZ), one or two Matmul objects per AI
    core (the layouts lower/cube.py may choose; restricted here so a small shape takes them)."""
    monkeypatch.setattr(lower_cube, "LAYOUTS", (layout,))
    monkeypatch.setattr(kinds, "_LOWERED", Lru(512))   # (the other layout's lowering of this kernel is remembered)
    g = np.random.default_rng(3)
    x = (g.standard_normal((70, 40)) * 0.1).astype(np.float16)
    w = (g.standard_normal((40, 300)) * 0.1).astype(np.float16)
    comp = fs.fused_kernel(lambda x, w: fs.relu(x @ w), target="ascend910b").compile(x, w)
    assert comp.kernels[0].lowered.tiling_fields.objects_per_core == layout[0]
    outs, wants, text = _interpret(comp, [x, w], ("x", "w"))
    assert "queue a_l1 TSCM" in text and "copynz aL1 <- x[offA]" in text and "mmset mm A <- aL1[0]" in text
    np.testing.assert_allclose(outs[0].astype(np.float32), wants[0].astype(np.float32), rtol=2e-2, atol=2e-2)


def test_int8_products_wrap_like_numpy():
    """int32 C wrapped to int8 (And on 16-bit lanes), and an int8 add after it wrapped in half."""
    g = np.random.default_rng(5)
    x, w, r = (g.integers(-100, 100, s).astype(np.int8) for s in [(33, 19), (19, 30), (33, 30)])
    for f in (lambda x, w, r: x @ w, lambda x, w, r: x @ w + r):
        comp = fs.fused_kernel(f, target="ascend910b").compile(x, w, r)
        outs, wants, text = _interpret(comp, [x, w, r])
        assert " as int16" in text
        np.testing.assert_array_equal(outs[0], wants[0])


def _kernel_inputs(comp, plan, args, monkeypatch) -> list:
    """The kernel's own arguments (the weights reshaped, ...): what the reference interpreter
    passes to its function when it runs the program."""
    seen = []
    run = reference.run_function

    def spy(module, fn, fn_args):
        if fn.name == plan.function.name:
            seen.append(list(fn_args))
        return run(module, fn, fn_args)

    monkeypatch.setattr(reference, "run_function", spy)
    reference.run_module(comp.module, args)
    (inputs,) = seen
    return inputs


def _kernel(text_fn=None):
    x = np.ones((20, 8), np.float32)
    w = np.ones((8, 24), np.float32)
    comp = fs.fused_kernel(lambda x, w: fs.relu(x @ w), target="ascend910b").compile(x, w)
    (plan,) = comp.kernels
    return kernel_ir(plan.lowered)


def test_verifier_refuses_a_broken_cube_kernel():
    k = _kernel()
    t = get_target("ascend910b")
    verify_kernel(k, t)
    process = tuple(MmSet("mm", "A", "nowhere") if isinstance(n, MmSet) and n.which == "A" else n for n in k.process)
    bad = dataclasses.replace(k, process=process)
    with pytest.raises(TileVerifyError, match="SetTensorA of nowhere: neither a GM tensor nor an L1 tensor"):
        verify_kernel(bad, t)
    stages = [st for st in k.stages if st.name != "CopyOut"] + [Stage("Other", None, ())]
    with pytest.raises(TileVerifyError, match="call of stage CopyOut, which the kernel does not have"):
        verify_kernel(dataclasses.replace(k, stages=stages), t)
    text = print_kernel(k).replace("; c VECIN ND float32", "; c L0C ND float32")
    with pytest.raises(TileKernelParseError, match="not a Matmul operand"):
        parse_kernel(text)


@pytest.mark.parametrize("epilogue", ["bias-leaky", "softmax"])
def test_candidate_kernels_equal_fresh_lowerings(epilogue):
    """The lowering offers the kernel pass `tiling` one kernel per tiling (cube_tile_kernel): a
    layout's kernel is built once and its other tilings take its words and plan line, and every
    layout shares the schedule's one Compute stage.  Each candidate equals the kernel lowered
    alone from its tiling, field by field and printed."""
    g = np.random.default_rng(3)
    x, w, b = (g.standard_normal(s).astype(np.float16) for s in ((128, 64), (64, 96), (96,)))
    fn = ((lambda x, w, b: fs.leaky_relu(x @ w + b)) if epilogue == "bias-leaky"
          else (lambda x, w, b: fs.softmax(x @ w + b)))
    (plan,) = fs.fused_kernel(fn, target="ascend910b").compile(x, w, b).kernels
    sched = lower_cube.schedule_cube_kernel(plan.function, get_target("ascend910b"), 1.0, 0.8)
    lowered = cube_tile_kernel(sched)
    assert len(lowered.candidates) >= 2 and len({(t.a_l1_bytes > 0, t.objects_per_core) for t, _ in sched.offers}) >= 2
    for kernel, (tiling, note) in zip((lowered, *lowered.candidates), sched.offers):
        alone = copy.copy(sched)
        alone.tiling_fields, alone.plan_note, alone.offers = tiling, note, ()
        fresh = _CubeLowering(alone).kernel()
        assert dataclasses.replace(kernel, candidates=()) == fresh
        assert print_kernel(dataclasses.replace(kernel, candidates=())) == print_kernel(fresh)
    # the pass `reuse` on the candidates (kernel_passes._offered): a layout's kernels share their stages,
    # so its result is taken for the next one -- equal to the pass run afresh on each
    kernel_reuse._SAME.clear()
    taken = 0
    for c in lowered.candidates:
        taken += kernel_reuse._SAME.get((id(c.stages), id(c.process), id(c.queues), id(c.matmuls))) is not None
        remembered, fresh = kernel_reuse.reuse_buffers(c), kernel_reuse._reuse(c)
        assert remembered == fresh and print_kernel(remembered) == print_kernel(fresh)
    assert taken
    # the Process walk's plan (tile/kernel_cost._process_plan) of a layout's kernels: found once, equal to
    # finding it afresh for each
    kernel_cost._PLANS.clear()
    shared = [kernel_cost._process_plan(c) for c in lowered.candidates]
    assert len(kernel_cost._PLANS) < len(lowered.candidates)
    for c, plan in zip(lowered.candidates, shared):
        kernel_cost._PLANS.clear()
        alone = dataclasses.replace(c)   # (a copy: nothing of c's remembered)
        assert kernel_cost._process_plan(alone) == plan


@pytest.mark.parametrize("target,dtype", [("ascend910b", "float32"), ("ascend310p", "float16"), ("ascend910b", "int8")])
def test_conv_kernels_interpret_like_the_call(target, dtype, monkeypatch):
    """conv2d's tile kernel (lower/conv_tile.py): the im2col panel in the workspace (a "work" GM
    tensor), the offset table from the scalar unit, the Gather (through half for int8), then the
    Matmul and a per-channel bias; stride, padding taps and a tail chunk."""
    g = np.random.default_rng(11)
    if dtype == "int8":
        x, w = g.integers(-50, 50, (2, 3, 11, 9)).astype(np.int8), g.integers(-4, 4, (5, 3, 3, 3)).astype(np.int8)
        b = np.zeros(5, np.int8)
        f = lambda x, w, b: fs.conv2d(x, w, padding=1)   # noqa: E731
    else:
        x, w = g.standard_normal((2, 3, 11, 9)).astype(dtype), g.standard_normal((5, 3, 3, 3)).astype(dtype)
        b = g.standard_normal(5).astype(dtype)
        f = lambda x, w, b: fs.relu(fs.conv2d(x, w, b, stride=2, padding=1))   # noqa: E731
    comp = fs.fused_kernel(f, target=target).compile(x, w, b)
    (plan,) = [p for p in comp.kernels if p.kernel_kind == "conv"]
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text and "gm panel" in text and "vec Gather" in text
    want = comp(x, w, b)
    out = np.zeros(want.shape, want.dtype)
    run_kernel(kernel, _kernel_inputs(comp, plan, [x, w, b], monkeypatch), [out], kernel_words(plan.lowered, plan.tiling))
    tol = 1e-4 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_dma_and_compute_without_a_barrier_or_queue_between_are_refused():
    """verify_kernel orders DMA with compute: the bias columns a CopyIn put in a TBuf are read by
    the epilogue only after the barrier that follows the copy; a tile leaves by DMA only after its
    queue's EnQue / DeQue (or a barrier) has ordered the vector ops that wrote it; a per-row value
    read by GetValue after its DMA needs the barrier too."""
    x, w, b = np.ones((20, 8), np.float32), np.ones((8, 24), np.float32), np.ones(24, np.float32)
    comp = fs.fused_kernel(lambda x, w, b: fs.relu(x @ w + b), target="ascend910b").compile(x, w, b)
    text = print_kernel(kernel_ir(comp.kernels[0].lowered))
    target = get_target("ascend910b")
    verify_kernel(parse_kernel(text), target)
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip().startswith("barrier"))
    stage_end = next(i for i, line in enumerate(lines) if i > last and line.startswith("stage "))
    # the columns' copy moved into Compute, after the row loop's Alloc: read with no barrier between
    copy = next(i for i, line in enumerate(lines) if line.strip().startswith("copyin col_b_2"))
    moved = lines[:copy] + lines[copy + 1:]
    at = next(i for i, line in enumerate(moved) if line.strip() == "alloc col_b_2 = b_col_b_2" and i > stage_end - 1)
    moved.insert(at + 1, lines[copy])
    with pytest.raises(TileVerifyError, match="a vector op reads col_b_2 after a DMA wrote it, with no barrier or queue"):
        verify_kernel(parse_kernel("\n".join(moved) + "\n"), target)
    # CopyOut of the output tile straight after Compute's vector ops, without its queue
    compute = lines.index("stage Compute:")
    enque = next(i for i, line in enumerate(lines) if i > compute and line.strip() == "enque q_y0 out_y0")
    copyout = next(line for line in lines if line.strip().startswith("copyout y0"))
    early = lines[:enque] + ["  " + copyout.strip()] + lines[enque:]
    with pytest.raises(TileVerifyError, match="a DMA copies out_y0 out after a vector op or SetValue wrote it"):
        verify_kernel(parse_kernel("\n".join(early) + "\n"), target)
    # a conv's per-channel bias copied into its TBuf in Compute, read by GetValue with no barrier
    xc, wc, bc = np.ones((1, 3, 9, 9), np.float32), np.ones((4, 3, 3, 3), np.float32), np.ones(4, np.float32)
    conv = fs.fused_kernel(lambda x, w, b: fs.relu(fs.conv2d(x, w, b, padding=1)), target="ascend910b")
    lines = print_kernel(kernel_ir(conv.compile(xc, wc, bc).kernels[0].lowered)).splitlines()
    copy = next(i for i, line in enumerate(lines) if line.strip().startswith("copyin rowv_"))
    allocs = [i for i, line in enumerate(lines) if line.strip().startswith("alloc rowv_")]
    moved = lines[:allocs[1] + 1] + [lines[copy]] + lines[allocs[1] + 1:]
    del moved[copy]
    with pytest.raises(TileVerifyError, match=r"GetValue of rowv_t2_2 after a DMA wrote it, with no barrier or queue"):
        verify_kernel(parse_kernel("\n".join(moved) + "\n"), target)


def test_cube_group_is_one_kernel_of_parts(tmp_path, monkeypatch):
    """A kernel of two matmuls of one A (the cube_group kind) is one TileKernel holding its parts'
    kernels: FUSEDSL_DUMP_IR writes it, `plan.tile_ir` shows it, its text parses back, and the
    interpreter runs the parsed parts in turn like the LLVM call."""
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))
    g = np.random.default_rng(3)
    x, w, v, b = (g.standard_normal(s).astype(np.float16) for s in ((40, 24), (24, 72), (24, 72), (72,)))
    comp = fs.fused_kernel(lambda x, w, v, b: (fs.relu(x @ w), x @ v + b), target="ascend910b").compile(x, w, v, b)
    (plan,) = comp.kernels
    assert plan.kernel_kind == "cube_group" and [p.value.name for p in plan.function.params] == ["x", "w", "v", "b"]
    text = (tmp_path / f"tile-{plan.name}-kernel.tile").read_text()
    assert text.startswith(f"kernel @{plan.name} kind cube_group") and text.count("  matmul mm a GM ND float16") == 2
    assert "  run part 0 (" in text and "  reset\n  run part 1 (" in text
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text and plan.tile_ir == text and len(kernel.parts) == 2
    verify_kernel(kernel, get_target("ascend910b"))
    want = comp(x, w, v, b)
    outs = [np.zeros(np.shape(r), np.asarray(r).dtype) for r in want]
    run_kernel(kernel, [x, w, v, b], outs)
    for got, ref in zip(outs, want):
        np.testing.assert_array_equal(got, ref)


def test_cube_group_verifier_rules():
    """A kernel of parts: a run must name a part it has, hand over as many GM tensors as the part
    takes, of the right role, and two runs need a TPipe reset between them."""
    x, w, b = np.ones((40, 24), np.float32), np.ones((24, 72), np.float32), np.ones(72, np.float32)
    comp = fs.fused_kernel(lambda x, w, b: (fs.relu(x @ w), x @ (w * 2.0) + b), target="ascend910b").compile(x, w, b)
    (plan,) = [p for p in comp.kernels if p.kernel_kind == "cube_group"]
    text = plan.tile_ir
    tgt = get_target("ascend910b")
    run1 = next(line for line in text.splitlines() if line.startswith("  run part 1 ("))
    cases = [(text.replace("  reset\n", "", 1), r"part 1 runs after part 0 with no TPipe reset between"),
             (text.replace(run1, "  run part 2 (x)"), r"run part 2: the kernel has 2 part\(s\)"),
             (text.replace(run1, run1.replace(", y1)", ")")), r"run part 1 hands over 3 GM tensor\(s\); the part takes 4"),
             (text.replace(run1, run1.replace(", y1)", ", w)")), r"run part 1 hands w to its out tensor")]
    for bad, msg in cases:
        with pytest.raises(TileVerifyError, match=msg):
            verify_kernel(parse_kernel(bad), tgt)
    with pytest.raises(TileKernelParseError, match=r"part 1 \(from line \d+\): tile kernel text line 2: not a kernel line"):
        parse_kernel(text.replace("  note ", "  nonsense ", 2).replace("  nonsense ", "  note ", 1))


@pytest.mark.parametrize("target,dtype,case", [
    ("ascend910b", "float16", "causal"), ("ascend910b", "float32", "additive"), ("ascend310p", "float16", "bool"),
    ("ascend910b", "float16", "rope"), ("ascend310p", "float16", "plain")])
def test_attention_kernels_interpret_like_the_call(target, dtype, case, monkeypatch):
    """attention's tile kernel (lower/attention_tile.py): two Matmul objects with their own
    TCubeTilings, the Q block in L1 (910B) or UB (310P), P through the workspace (910B) or a VECOUT
    A in UB (310P), the online softmax with masks, the causal diagonal and rope, per work item."""
    g = np.random.default_rng(7)
    q = g.standard_normal((1, 2, 17, 40)).astype(dtype)
    k, v = (g.standard_normal((1, 2, 33, 40)).astype(dtype) for _ in range(2))
    m = g.standard_normal((17, 33)).astype(dtype)
    fn, args = {"causal": (lambda q, k, v: fs.attention(q, k, v, causal=True), (q, k, v)),
                "additive": (lambda q, k, v, m: fs.attention(q, k, v, mask=m), (q, k, v, m)),
                "bool": (lambda q, k, v, m: fs.attention(q, k, v, mask=m > 0.5), (q, k, v, m)),
                "plain": (lambda q, k, v: fs.attention(q, k, v), (q, k, v))}.get(case, (None, None))
    if case == "rope":
        q = g.standard_normal((1, 2, 24, 32)).astype(dtype)
        cos, sin = (g.standard_normal((24, 32)).astype(dtype) for _ in range(2))
        fn, args = (lambda q, k, v, c, s: fs.attention(fs.rope(q, c, s), fs.rope(k, c, s), v)), (q, q, q, cos, sin)
    comp = fs.fused_kernel(fn, target=target).compile(*args)
    (plan,) = [p for p in comp.kernels if p.kernel_kind == "attention"]
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text and "matmul qk" in text and "matmul pv" in text
    want = comp(*args)
    out = np.zeros(want.shape, want.dtype)
    run_kernel(kernel, _kernel_inputs(comp, plan, list(args), monkeypatch), [out], kernel_words(plan.lowered, plan.tiling))
    tol = 1e-5 if dtype == "float32" else 4e-3
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
