"""How the host compiles a TileKernel (backend_cpu/kernel_cpu.py, jit.py): at its first launch; the
host runs the kernel with the lowering's queue depths where it never holds two buffers of a queue
(kinds.host_kernel_ir: no double buffering on a CPU), the chip's kernel keeps its second buffers;
and a kernel lowered again -- in one process, or in another on the same cache -- reuses its IR."""
from __future__ import annotations

import dataclasses
import re

import numpy as np

import fusedsl as fs
from fusedsl.backend_cpu import jit, kernel_cpu, llvm_kernel
from fusedsl.lower.kinds import host_kernel_ir, kernel_ir
from fusedsl.tile.kernel import Alloc, For, Free
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.kernel_passes import lift_immediates, single_buffer


def test_the_host_runs_the_lowerings_queue_depths_and_the_chip_keeps_its_second_buffers():
    comp = fs.fused_kernel(lambda x: fs.relu(x) * 2.0, target="ascend910b").compile(
        np.zeros((64, 1024), np.float32))
    sched = comp.kernels[0].schedule
    chip, host = kernel_ir(sched), host_kernel_ir(sched)
    doubled = [q.name for q in chip.queues if q.depth == 2]
    assert doubled, "the chip's kernel double-buffers its tile queues"
    assert all(q.depth == 1 for q in host.queues if q.name in doubled)
    assert [q.name for q in host.queues] == [q.name for q in chip.queues] and host.words == chip.words


def test_a_kernel_lowered_again_reuses_its_ir(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))   # not lowered by an earlier test either
    calls = []
    real = kernel_cpu.lower_kernel
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    monkeypatch.setattr(kernel_cpu, "lower_kernel", lambda k, f, *more: calls.append(k.name) or real(k, f, *more))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(2):   # two compiles of one function: two schedules, one lowering
        comp = fs.fused_kernel(lambda a: fs.abs(a) - 1.0).compile(x)
        np.testing.assert_array_equal(comp(x), np.abs(x) - 1.0)
    assert len(calls) == 1


def test_a_queue_the_kernel_holds_two_buffers_of_keeps_them_on_the_host():
    """single_buffer counts the buffers held from AllocTensor to FreeTensor along a tile's stages:
    a second AllocTensor before the FreeTensor, or one per loop pass with the frees after the loop,
    keeps the queue's depth."""
    comp = fs.fused_kernel(lambda x: fs.relu(x) * 2.0, target="ascend910b").compile(
        np.zeros((64, 1024), np.float32))
    chip = kernel_ir(comp.kernels[0].schedule)
    q = next(q for q in chip.queues if q.position == "VECIN" and q.depth == 2)
    assert next(x for x in single_buffer(chip).queues if x.name == q.name).depth == 1

    def with_compute(extra):
        stages = [dataclasses.replace(st, body=tuple(st.body) + tuple(extra)) if st.name == "Compute" else st
                  for st in chip.stages]
        return dataclasses.replace(chip, stages=stages)
    twice = with_compute([Alloc("extra", q.name), Alloc("extra2", q.name), Free(q.name, "extra"),
                          Free(q.name, "extra2")])
    per_pass = with_compute([For("i", 0, 2, (Alloc("extra", q.name),)), Free(q.name, "extra"),
                             Free(q.name, "extra")])
    for k in (twice, per_pass):
        assert next(x for x in single_buffer(k).queues if x.name == q.name).depth == 2


def test_a_second_process_takes_the_lowered_ir_from_the_disk_cache(monkeypatch, tmp_path):
    """jit.lowered_ir: the IR of a TileKernel is cached on disk under its text, fusedsl's sources,
    llvmlite and the host; a hit skips the lowering, a damaged entry is lowered again, and other
    sources (an edited lowering) are another key."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    lowered = []
    real = kernel_cpu.lower_kernel
    monkeypatch.setattr(kernel_cpu, "lower_kernel", lambda *a: lowered.append(1) or real(*a))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def run():
        monkeypatch.setattr(kernel_cpu, "_lowered", {})      # a new process: nothing in memory
        monkeypatch.setattr(jit, "_memory", {})
        np.testing.assert_array_equal(fs.fused_kernel(lambda a: fs.abs(a) * 3.0 - 1.0)(x), np.abs(x) * 3 - 1)
    run()
    run()
    assert len(lowered) == 1, "the second run reads the IR from the disk cache"
    entries = [p for p in tmp_path.rglob("*.o")]
    for p in entries:       # damage every entry (IR and objects): each is rebuilt, nothing breaks
        p.write_bytes(p.read_bytes()[:-7] + b"garbage")
    run()
    assert len(lowered) == 2
    monkeypatch.setattr(jit, "_SOURCES", "another fusedsl")
    run()
    assert len(lowered) == 3


def test_the_sources_digest_sees_an_edit_a_new_file_and_a_rename(tmp_path):
    """jit.sources_digest (the lowered-IR cache's key for fusedsl's own code): each .py file's
    path, size and modification time, as Python's bytecode cache trusts them; __pycache__ and
    other files do not count."""
    import os
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    first = jit.sources_digest(str(pkg))
    assert jit.sources_digest(str(pkg)) == first
    (pkg / "notes.txt").write_text("not a source")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "c.py").write_text("z = 3\n")
    assert jit.sources_digest(str(pkg)) == first
    st = os.stat(pkg / "a.py")
    (pkg / "a.py").write_text("x = 7\n")   # same size: the edit's time tells
    os.utime(pkg / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    edited = jit.sources_digest(str(pkg))
    assert edited != first
    (pkg / "sub" / "c.py").write_text("")
    added = jit.sources_digest(str(pkg))
    assert added != edited
    os.rename(pkg / "sub" / "c.py", pkg / "sub" / "d.py")
    assert jit.sources_digest(str(pkg)) not in (added, edited, first)


def test_a_helper_modules_declare_is_compiled_once_and_linked(monkeypatch, tmp_path):
    """jit.share: a module that declares a shared helper (attention kernels: the K^T pack) is
    loaded after the helper, which is compiled once per process and linked by name -- also when
    the module's object comes from the disk cache in a new process."""
    import ctypes
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    helper, made = "fusedsl_test_shared_double", []

    def make_ir():
        made.append(1)
        return f'define i64 @"{helper}"(i64 %x) {{\n  %y = mul i64 %x, 2\n  ret i64 %y\n}}\n'
    monkeypatch.setitem(jit._shared, helper, make_ir)

    def call(add: int) -> int:
        text = (f'declare i64 @"{helper}"(i64)\n\ndefine i64 @"caller"(i64 %x) {{\n'
                f'  %y = call i64 @"{helper}"(i64 %x)\n  %z = add i64 %y, {add}\n  ret i64 %z\n}}\n')
        compiled = jit.compile_ir(text, "caller")
        return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(compiled.address)(20)
    assert (call(1), call(2), len(made)) == (41, 42, 1)
    monkeypatch.setattr(jit, "_memory", {})     # a new process: the caller's object from disk
    monkeypatch.setattr(jit, "_provided", {})
    assert (call(1), len(made)) == (41, 2)


def test_kernels_equal_but_for_name_and_words_lower_and_compile_once(monkeypatch, tmp_path):
    """The IR does not depend on a kernel's name or tiling words (read at run time): two functions
    and two shapes of one elementwise kernel are one lowering and one compile, each result right;
    another op is another kernel."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    monkeypatch.setattr(jit, "_memory", {})
    lowered, compiled = [], []
    real_lower, real_compile, real_quick = kernel_cpu.lower_kernel, jit.optimise_to_object, jit.quick_object
    monkeypatch.setattr(kernel_cpu, "lower_kernel", lambda *a: lowered.append(1) or real_lower(*a))
    # a compile before the first call: the optimised one, or the quick tier's (jit.compile_tiered)
    monkeypatch.setattr(jit, "optimise_to_object", lambda text: compiled.append(1) or real_compile(text))
    monkeypatch.setattr(jit, "quick_object", lambda text: compiled.append(1) or real_quick(text))

    def first(a):
        return fs.exp(a) + 1.0

    def second(a):
        return fs.exp(a) + 1.0
    for fn in (first, second):
        for shape in ((3, 4), (7, 33)):
            x = np.linspace(-2, 2, int(np.prod(shape)), dtype=np.float32).reshape(shape)
            np.testing.assert_allclose(fs.fused_kernel(fn)(x), np.exp(x) + 1, rtol=1e-6)
    assert (len(lowered), len(compiled)) == (1, 1)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(fs.fused_kernel(lambda a: fs.exp(a) * 2.0)(x), np.exp(x) * 2, rtol=1e-6)
    assert (len(lowered), len(compiled)) == (2, 2)


def test_transposes_of_other_shapes_share_one_kernel(monkeypatch, tmp_path):
    """A transpose kernel's note names its blocks' sizes; its IR does not depend on them: three
    shapes and permutations of one dtype lower once."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    lowered = []
    real = kernel_cpu.lower_kernel
    monkeypatch.setattr(kernel_cpu, "lower_kernel", lambda *a: lowered.append(1) or real(*a))
    for shape, perm in (((5, 7, 9), (2, 0, 1)), ((6, 8, 10), (2, 0, 1)), ((5, 7), (1, 0))):
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        np.testing.assert_array_equal(fs.fused_kernel(lambda a: fs.transpose(a, perm))(x), np.transpose(x, perm))
    assert len(lowered) == 1


def test_only_the_element_loops_unroll_by_a_runtime_count():
    """irgen.no_runtime_unrolling: the back edges of a kernel's structural loops (blocks, tiles)
    carry llvm.loop.unroll.runtime.disable, its element loops (`vec`) none; the results are numpy's."""
    x = np.linspace(-3, 3, 7 * 300, dtype=np.float32).reshape(7, 300)
    comp = fs.fused_kernel(lambda a: fs.exp(a) * 2.0 + 1.0).compile(x)
    np.testing.assert_allclose(comp(x), np.exp(x) * 2 + 1, rtol=1e-6)
    text = kernel_cpu.TileKernelCpu(host_kernel_ir(comp.kernels[0].schedule)).ir
    hint = re.search(r'^(!\d+) = !\{ !"llvm\.loop\.unroll\.runtime\.disable" \}$', text, re.M)
    assert hint, "no loop carries the hint"
    loop_id = re.search(rf"^(!\d+) = !{{ (!\d+), {hint.group(1)} }}$", text, re.M)
    assert loop_id and loop_id.group(1) == loop_id.group(2), "a loop ID refers to itself"
    back_edges = re.findall(r'br label %"([\w.]+)\.head[.\d]*"(, !llvm\.loop !\d+)?', text)
    hinted = {tag for tag, h in back_edges if h}
    assert {"block", "tile"} <= hinted and not hinted & set(llvm_kernel.UNROLLED_LOOPS)
    assert "vec" in {tag for tag, _ in back_edges}


def test_kernels_equal_but_for_their_constants_share_one_lowering(monkeypatch, tmp_path):
    """kernel_passes.lift_immediates: a stmt's immediate is a runtime scalar on the host, so
    kernels that differ only in constants lower once, and give the bits the immediates gave (each
    constant rounded to its stmt's dtype: 0.1 in float16; -0.0 and NaN kept); muls by -1 stays an
    immediate (exact on the CPU)."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    lowered = []
    real = kernel_cpu.lower_kernel
    monkeypatch.setattr(kernel_cpu, "lower_kernel", lambda *a: lowered.append(1) or real(*a))

    def run(fn, x, lifted: bool):
        monkeypatch.setattr(kernel_cpu, "_lowered", {})
        monkeypatch.setattr(kernel_cpu, "lift_immediates", lift_immediates if lifted else (lambda k: (k, {})))
        return fs.fused_kernel(fn)(x)
    x32 = np.array([-2.5, -0.0, 0.0, 0.1, 3.0, np.nan, np.inf, -1.0], np.float32)
    i32 = np.arange(-5, 5, dtype=np.int32)
    floats = ((0.1, -0.0), (2.5, 0.0), (np.nan, 1.0), (-3.0, np.inf))
    for x, constants, make in ((x32, floats, lambda c, lo: (lambda a: fs.maximum(a * c + c, lo))),
                               (x32.astype(np.float16), floats, lambda c, lo: (lambda a: fs.maximum(a * c + c, lo))),
                               (i32, ((3, 0), (-7, 0)), lambda c, _: (lambda a: (a + c) * c))):
        for c, lo in constants:
            got = run(make(c, lo), x, True)
            want = run(make(c, lo), x, False)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (x.dtype, c, lo, got, want)
    # in one process: a second constant finds the first one's IR in memory
    lowered.clear()
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    monkeypatch.setattr(kernel_cpu, "lift_immediates", lift_immediates)
    for c in (0.5, 7.25):
        lowered.clear()
        np.testing.assert_array_equal(fs.fused_kernel(lambda a: fs.maximum(a * c + c, 1.0))(x32),
                                      np.maximum(x32 * np.float32(c) + np.float32(c), 1))
    assert not lowered, "the second constant lowered again"
    sched = fs.fused_kernel(lambda a: a * -1.0 + 2.0).compile(x32).kernels[0].schedule
    lifted, values = lift_immediates(host_kernel_ir(sched))
    assert list(values.values()) == [2.0] and "muls(in_a_0, -1" in print_kernel(lifted).replace(".0", "")
    # the executor keeps the kernel it was given (the interpreter runs it: no typed field of its own)
    cpu = kernel_cpu.TileKernelCpu(host_kernel_ir(sched))
    assert cpu.k == host_kernel_ir(sched) and not any(f.ctype != "uint32_t" for f in cpu.k.fields)


def test_a_launch_that_does_not_stream_compiles_the_variant_without_streamed_stores(monkeypatch, tmp_path):
    """kernel_cpu.TileKernelCpu lowers and compiles each variant when a launch first needs it: small
    outputs run the one without non-temporal stores (its first call compiles a third less IR);
    outputs of STREAM_MIN_BYTES and more the streaming one; both give the same bits.  A small launch
    runs as one block, a threaded one as the words' blocks: the same bits too."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    x = np.linspace(-3, 3, 5000, dtype=np.float32).reshape(5, 1000)
    comp = fs.fused_kernel(lambda a: fs.sigmoid(a) * a - 1.0).compile(x)
    want = comp(x)
    cpu = comp._cpu[comp.kernels[0].name][0].kernel
    assert set(cpu._compiled) == {False} and "!nontemporal" not in cpu.ir
    # (kernel_cpu.ONE_BLOCK_KINDS) a launch on the caller's thread runs the words' blocks as one,
    # on the launcher's threads they stay blocks: the same bits
    sched_cpu = comp._cpu[comp.kernels[0].name][0]
    comp(x, out=np.empty_like(want))
    tiling, inputs, call = sched_cpu._last[:3]
    words, offsets = sched_cpu.words(tiling), cpu.k.field_offsets()
    assert -(-words[offsets["totalTiles"][0]] // words[offsets["tilesPerCore"][0]]) > 1
    assert call.native[1:3] == (0, 1)
    np.testing.assert_array_equal(call.outputs[0], want)
    monkeypatch.setattr(kernel_cpu, "PARALLEL_MIN_BYTES", 0)
    threaded = sched_cpu.bind(list(inputs), [np.empty_like(want)], tiling)
    assert len(threaded.keep[1]) > 1   # an arena per launcher thread, each running blocks
    threaded()
    np.testing.assert_array_equal(threaded.outputs[0], want)
    monkeypatch.setattr(kernel_cpu, "STREAM_MIN_BYTES", 0)
    out = np.empty(5064, np.float32)[16:5016].reshape(5, 1000)   # (64-byte lines: a peeled head)
    comp(x, out=out)
    assert set(cpu._compiled) == {False, True} and "!nontemporal" in cpu.ir_for(True)
    assert len(cpu.ir_for(True)) > 1.3 * len(cpu.ir)
    np.testing.assert_array_equal(out, want)
