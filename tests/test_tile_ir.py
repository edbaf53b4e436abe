"""Tile IR: text form and the verifier's rejections (ASCENDC.md 1.3, 2.8, 6)."""
import dataclasses

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import dtypes as dt
from fusedsl.lower.vector import Slot, Stmt, compute_tiling, schedule_vector_kernel
from fusedsl.targets import get_target
from fusedsl.lower.kinds import kernel_ir, tile_programs
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.parse import TileParseError, parse_kernel, parse_tile, parse_tiles
from fusedsl.tile.text import print_tile
from fusedsl.tile.verify import TileVerifyError, verify_tile

IR = """func @k(%a: f32[128], %b: f32[M,128]) -> (f32[M,128]) loc("k.py":1) {
  %0 = abs(%a) : f32[128] loc("k.py":2)
  %1 = add(%0, %b) : f32[M,128] loc("k.py":2)
  %2 = relu(%1) : f32[M,128] loc("k.py":3)
  return %2
}
"""

GOLDEN = """tile @k iter [M,128] dims (0) (1) block 8 granule 64 slack 0 budget 196352
buffers:
  in_a_0: float32 TBuf<VECCALC> per core x1
  in_b_1: float32 TQue<VECIN, depth 1> x2
  t2: float32 TBuf<VECCALC> per core x1
  t3: float32 TBuf<VECCALC> x1
  out0_5: float32 TQue<VECOUT, depth 1> x2
copyin:
  in_a_0 <- a#0 float32 row [01]
  in_b_1 <- b#1 float32 full [11]
hoisted:
  t2 = abs(in_a_0) : float32
compute:
  t3 = add(t2, in_b_1) : float32
  out0_5 = relu(t3) : float32
copyout:
  y0#0 <- out0_5 float32
"""

T = get_target("ascend910b")


def _sched():
    return schedule_vector_kernel(fs.parse_ir(IR).functions[0], T)


def test_text_form_is_deterministic():
    s = _sched()
    assert print_tile(s) == print_tile(_sched())
    assert print_tile(s) == GOLDEN
    tiled = print_tile(s, compute_tiling(s, {"M": 192}, T))
    assert "tiling: R 192 C 128" in tiled and "in_b_1: float32 TQue<VECIN, depth 1> x2 " in tiled


def test_rejects_over_budget_plan():
    s = _sched()
    t = dataclasses.replace(compute_tiling(s, {"M": 192}, T), tile_elems=16384)
    with pytest.raises(TileVerifyError, match=r"tiles of 16384 elements needs 458752 bytes .*in_b_1 65536 B x2.*"
                       r"budget on ascend910b is 196352 bytes"):
        verify_tile(s, T, t)


def test_rejects_partial_overlap():
    s = _sched()
    s.slots["h"] = Slot("h", dt.float16, "tmp")
    s.stmts.insert(1, Stmt("cast", "t2", ("t2",), dt.float32, src_dtype=dt.float16, round_mode="CAST_NONE",
                           hoisted=True))
    with pytest.raises(TileVerifyError, match="cast writes t2 as float32 .* reading it as float16 .*partial overlap"):
        verify_tile(s, T)


def test_rejects_queue_limit():
    s = _sched()
    for k in range(4):
        s.slots[f"q{k}"] = Slot(f"q{k}", dt.float32, "in", 2)
    with pytest.raises(TileVerifyError, match=r"10 queue buffers on VECIN \(in_b_1 x2, q0 x2.*ascend910b allows 8 "
                       "per position"):
        verify_tile(s, T)


def test_rejects_use_before_def():
    s = _sched()
    s.slots["u"] = Slot("u", dt.float32, "tmp")
    s.stmts.append(Stmt("add", "out0_5", ("out0_5", "u"), dt.float32))
    with pytest.raises(TileVerifyError, match="add reads u before it is written"):
        verify_tile(s, T)


def _broken(case: str):
    """_sched()'s program with one rule broken."""
    s = _sched()
    if case == "unknown op":
        s.stmts[1] = dataclasses.replace(s.stmts[1], op="frobnicate")
    elif case == "dst":
        s.stmts[1] = dataclasses.replace(s.stmts[1], dst="nowhere")
    elif case == "src":
        s.stmts[2] = dataclasses.replace(s.stmts[2], srcs=("nowhere",))
    elif case == "aux":
        s.stmts[2] = dataclasses.replace(s.stmts[2], aux=("nowhere",))
    elif case == "hoisted":   # a hoisted stmt reads a tile's input (copied in per tile)
        s.stmts[0] = dataclasses.replace(s.stmts[0], srcs=("in_b_1",))
    elif case == "unwritten output":
        s.stmts.pop()
    elif case == "VECOUT":
        for k in range(4):
            s.slots[f"o{k}"] = Slot(f"o{k}", dt.float32, "out", 2)
    elif case == "buffers":
        for k in range(60):
            s.slots[f"b{k}"] = Slot(f"b{k}", dt.float32, "tmp")
    return s


@pytest.mark.parametrize("case, message", [
    ("unknown op", "unknown tile op 'frobnicate'"),
    ("dst", "add names buffer nowhere, which is not allocated"),
    ("src", "relu names buffer nowhere, which is not allocated"),
    ("aux", "relu names buffer nowhere, which is not allocated"),
    ("hoisted", "hoisted abs reads in_b_1 before it is written"),
    ("unwritten output", "output y0 is copied out of out0_5, which no stmt of the tile writes"),
    ("VECOUT", r"10 queue buffers on VECOUT \(out0_5 x2, o0 x2, .*ascend910b allows 8 per position"),
    ("buffers", "67 UB buffers; ascend910b allows at most 64 per kernel"),
])
def test_rejects_each_broken_rule(case, message):
    """Each rule of verify_tile not pinned above, broken in the program, is a TileVerifyError
    naming the kernel and what is wrong."""
    with pytest.raises(TileVerifyError, match=f"tile program of kernel k: {message}"):
        verify_tile(_broken(case), T)


def test_dump_and_plan_tile_ir(tmp_path, monkeypatch):
    import numpy as np
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))

    @fs.fused_kernel
    def f(a, b):
        return fs.relu(fs.abs(a) + b)

    k = f.compile(np.zeros(128, np.float32), np.zeros((4, 128), np.float32))
    text = k.kernels[0].tile_ir
    assert text.startswith(f"tile @{k.kernels[0].name} ") and "tiling: R 4 C 128" in text
    dumped = (tmp_path / f"tile-{k.kernels[0].name}.tile").read_text()
    assert "compute:" in dumped and "test_tile_ir.py" in dumped   # with the user's lines


def _passes(fn):
    """The tile text after lowering and after each tile pass (tile/pipeline.py), by name."""
    snaps = []
    schedule_vector_kernel(fn, T, snapshots=snaps)
    return dict(snaps), [name for name, _ in snaps]


def test_tile_passes_run_in_the_documented_order():
    from fusedsl.tile.pipeline import TILE_PASSES
    fn = fs.parse_ir(IR).functions[0]
    _, order = _passes(fn)
    assert order == ["lowered"] + [name for name, _ in TILE_PASSES] == ["lowered", "reuse", "compare-slack",
                                                                       "granules", "allocate"]


def test_reuse_pass_before_after():
    ir = """func @r(%b: f32[64]) -> (f32[64]) loc("r.py":1) {
  %0 = neg(%b) : f32[64] loc("r.py":2)
  %1 = exp(%0) : f32[64] loc("r.py":3)
  %2 = sqrt(%1) : f32[64] loc("r.py":4)
  return %2
}
"""
    text, _ = _passes(fs.parse_ir(ir).functions[0])
    before, after = text["lowered"], text["reuse"]
    assert "compute:\n  t1 = muls(in_b_0, -1) : float32" in before and "t2 = exp(t1) : float32" in before
    assert "  t2: float32 TBuf<VECCALC> x1" in before
    # exp writes the slot of its dying operand (100 % overlap); t2 is no longer allocated
    assert "compute:\n  t1 = muls(in_b_0, -1) : float32" in after and "t1 = exp(t1) : float32" in after
    assert "t2:" not in after and "t1: float32 TBuf<VECCALC> x1 holds 2" in after


def test_compare_slack_pass_before_after():
    ir = """func @c(%a: f32[64], %b: f32[64]) -> (f32[64]) loc("c.py":1) {
  %0 = lt(%a, %b) : i1[64] loc("c.py":2)
  %1 = where(%0, %a, %b) : f32[64] loc("c.py":3)
  return %1
}
"""
    text, _ = _passes(fs.parse_ir(ir).functions[0])
    before, after = text["reuse"], text["compare-slack"]
    assert "slack 0 " in before and "  t2: float32 TBuf<VECCALC> x1\n" in before
    assert "slack 128 " in after and "  t2: float32 TBuf<VECCALC> x1 prefill 0\n" in after
    assert "prefill 1.0" in before   # Compare's constant tensor came from the lowering


def test_allocate_pass_before_after():
    text, _ = _passes(fs.parse_ir(IR).functions[0])
    before, after = text["granules"], text["allocate"]
    assert "budget 0\n" in before and "in_b_1: float32 TQue<VECIN, depth 1> x1\n" in before
    assert "budget 196352\n" in after and "in_b_1: float32 TQue<VECIN, depth 1> x2\n" in after
    assert "out0_5: float32 TQue<VECOUT, depth 1> x2\n" in after


def test_tiling_pass_before_after():
    from fusedsl.tile.tiling import compute_tiling
    fn = fs.parse_ir(IR).functions[0]
    sched = schedule_vector_kernel(fn, T)
    before, after = print_tile(sched), print_tile(sched, compute_tiling(sched, {"M": 192}, T))
    # 6 cores (16 KiB of output each); the cost model halves the largest tile (32 rows per
    # core) three times so each core's loads, compute and stores overlap over 8 tiles
    assert "tiling:" not in before and "tiling: R 192 C 128 Cpad 128 tile 4x128" in after
    assert "out0_5: float32 TQue<VECOUT, depth 1> x2\n" in before
    assert "out0_5: float32 TQue<VECOUT, depth 1> x2 2048 B\n" in after   # bytes once the tile is sized


def test_dump_ir_writes_the_tile_text_after_every_tile_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))

    @fs.fused_kernel
    def k(a, b):
        return fs.relu(a * b + 1.0)

    c = k.compile(np.ones((8, 64), np.float32), np.ones((8, 64), np.float32))
    name = c.kernels[0].name
    files = sorted(p.name for p in tmp_path.glob(f"tile-{name}-*.tile"))
    assert files == [f"tile-{name}-00-lowered.tile", f"tile-{name}-01-reuse.tile",
                     f"tile-{name}-02-compare-slack.tile", f"tile-{name}-03-granules.tile",
                     f"tile-{name}-04-allocate.tile", f"tile-{name}-05-kernel-lowered.tile", f"tile-{name}-kernel.tile"]
    assert (tmp_path / files[-3]).read_text() == (tmp_path / f"tile-{name}.tile").read_text()
    # the kernel passes changed nothing here (symbolic-free but already double-buffered by allocate)
    assert (tmp_path / files[-2]).read_text() == (tmp_path / files[-1]).read_text()
    # the whole kernel the printer prints, in the loop-level tile IR, reads back as it was
    whole = (tmp_path / files[-1]).read_text()
    assert whole.startswith(f"kernel @{name} kind vector\n") and print_kernel(parse_kernel(whole)) == whole


def test_dump_ir_of_a_kernel_with_a_300_character_name(tmp_path, monkeypatch):
    """The tile dumps are named after the kernel: a name longer than a file name may be is
    shortened to its first 64 characters and a hash (it failed with ENAMETOOLONG)."""
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))

    def f(x):
        return x * 2.0 + 1.0
    f.__name__ = "k" * 300
    c = fs.fused_kernel(f).compile(np.ones(8, np.float32))
    tiles = sorted(p.name for p in tmp_path.glob("tile-*.tile"))
    assert tiles and all(len(t) < 120 and t.startswith("tile-" + "k" * 64 + "-") for t in tiles)
    np.testing.assert_array_equal(c(np.ones(8, np.float32)), np.full(8, 3.0, np.float32))


# ---- the parser: every kind's tile programs read back ------------------------------------------

def _every_kind():
    """One small program per kernel kind (vector, view, row, column, cube with an elementwise and
    with a row epilogue, conv, transpose, attention), on 910B."""
    x, w = np.ones((24, 40), np.float32), np.ones((40, 16), np.float32)

    @fs.fused_kernel(target="ascend910b")
    def f(x, w, b, idx, img, cw, z, q):
        v = fs.where(x > 0.5, fs.exp(x), x.astype(fs.float16).astype(fs.float32))   # vector: cmp, cast
        cat = fs.relu(fs.concatenate([x[:, :8], x[:, 8:16]], axis=1) + 1.0)        # view kernel
        t = fs.take(w, idx) * 2.0                                                     # gather view
        sm = fs.softmax(x * 0.5, axis=-1)                                             # row
        col = fs.sum(fs.exp(z) * z, axis=0)                                           # column
        mm = fs.gelu(x @ w + b)                                                       # cube + elementwise
        lsm = fs.softmax(x @ w, axis=-1)                                              # cube + row epilogue
        cv = fs.relu(fs.conv2d(img, cw, padding=1) * 0.5)                             # conv
        tr = fs.transpose(z, (1, 0))                                                  # transpose
        at = fs.attention(q, q, q, causal=True)                                       # attention
        return v, cat, t, sm, col, mm, lsm, cv, tr, at

    return f.compile(x, w, np.ones(16, np.float32), np.zeros(5, np.int32),
                     np.ones((1, 3, 6, 6), np.float32), np.ones((4, 3, 3, 3), np.float32),
                     np.ones((30, 20), np.float32), np.ones((1, 2, 17, 32), np.float16))


def test_every_kinds_tile_programs_round_trip_through_the_parser():
    k = _every_kind()
    kinds = {}
    for plan in k.kernels:
        for label, prog in tile_programs(plan.lowered):
            text = print_tile(prog, locs=True)
            back = parse_tile(text)
            assert print_tile(back.sched, locs=True) == text, (plan.kernel_kind, label)
            verify_tile(back.sched, T)          # a parsed program is a program the verifier takes
            kinds.setdefault(plan.kernel_kind, []).append(label)
        whole = kernel_ir(plan.lowered)
        if whole is not None:   # a whole loop-level tile kernel (tile/kernel.py)
            text = print_kernel(whole)
            assert print_kernel(parse_kernel(text)) == text, plan.kernel_kind
            kinds.setdefault(plan.kernel_kind, []).append("kernel")
            if plan.schedule is None:   # (a vector kernel's tile_ir is its tile program, with the tiling)
                assert plan.tile_ir == text
        elif plan.tile_ir is not None and plan.schedule is None:   # another kind: its programs in turn
            assert [p.sched.kernel.name for p in parse_tiles(plan.tile_ir)] == [
                prog.kernel.name for _, prog in tile_programs(plan.lowered)]
    assert {"vector", "row", "column", "cube", "conv", "transpose", "attention"} <= set(kinds), kinds
    assert all("kernel" in kinds[kind] for kind in ("transpose", "attention", "row", "column", "cube", "conv"))
    assert any(label.startswith("epilogue-") and label.endswith("-gelu") for label in kinds["cube"])
    views = [p.schedule for p in k.kernels if p.schedule is not None and p.schedule.views is not None]
    assert views and all("views: S [" in print_tile(s) for s in views)
    # a view kernel's loads and boxes come back as they were
    for s in views:
        got = parse_tile(print_tile(s)).sched.views
        assert got.S == s.views.S and got.boxes == s.views.boxes
        assert [(ld.sources, ld.gather) for ld in got.loads] == [(ld.sources, ld.gather) for ld in s.views.loads]


def test_dump_writes_every_kinds_tile_programs(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))

    @fs.fused_kernel(target="ascend910b")
    def g(x, w):
        return fs.softmax(x * 0.5, axis=-1), fs.relu(x @ w)

    k = g.compile(np.ones((8, 32), np.float32), np.ones((32, 16), np.float32))
    names = {p.kernel_kind: p.name for p in k.kernels}
    row = sorted(f.name for f in tmp_path.glob(f"tile-{names['row']}-*.tile"))
    assert row and all(n.endswith((".tile")) for n in row) and any("-mul.tile" in n for n in row)
    cube = sorted(f.name for f in tmp_path.glob(f"tile-{names['cube']}-epilogue-*.tile"))
    assert cube == [f"tile-{names['cube']}-epilogue-00-relu.tile"]
    text = (tmp_path / cube[0]).read_text()
    assert "test_tile_ir.py" in text and parse_tile(text).sched.kernel.name.endswith(".relu")


def test_a_planted_bug_in_parsed_text_is_caught_by_the_verifier():
    text = print_tile(_sched())
    broken = text.replace("t3 = add(t2, in_b_1) : float32", "t3 = add(t9, in_b_1) : float32")
    parsed = parse_tile(broken.replace("  t3: float32 TBuf<VECCALC> x1\n",
                                       "  t3: float32 TBuf<VECCALC> x1\n  t9: float32 TBuf<VECCALC> x1\n"))
    with pytest.raises(TileVerifyError, match="add reads t9 before it is written"):
        verify_tile(parsed.sched, T)


@pytest.mark.parametrize("text, line, what", [
    ("tile k iter [4]\n", 1, "expected 'tile @<kernel>"),
    (GOLDEN.replace("  t3 = add(t2, in_b_1) : float32", "  t3 = add(t2, in_b_1)"), 14, "is not a compute line"),
    (GOLDEN.replace("in_b_1: float32 TQue", "in_b_1: float33 TQue"), 4, "unknown dtype 'float33'"),
])
def test_parse_errors_name_the_line(text, line, what):
    with pytest.raises(TileParseError, match=f"tile text line {line}: .*{what}" if line > 1 else what):
        parse_tile(text)


def test_tiled_text_parses_with_its_tiling_line():
    s = _sched()
    parsed = parse_tile(print_tile(s, compute_tiling(s, {"M": 192}, T)))
    assert parsed.tiling["R"] == 192 and parsed.tiling["C"] == 128
    assert print_tile(parsed.sched) == GOLDEN
