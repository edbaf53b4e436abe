"""Tiered compiles (backend_cpu/jit.compile_tiered): a kernel's first call runs its quick tier, the
optimised code is compiled on a background thread and swapped in through the quick entry's slot;
both tiers compute the same bits; the disk cache keeps both objects; FUSEDSL_JIT_TIERS chooses."""
from __future__ import annotations

import ctypes
import inspect
import os
import time

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_cpu import jit

G = np.random.default_rng(7)
F32 = np.float32


def _programs():
    x, y = (G.standard_normal((33, 70)).astype(F32) for _ in range(2))
    c, d = (G.standard_normal((9, 30)).astype(F32) for _ in range(2))
    h = G.standard_normal((20, 40)).astype(np.float16)
    i, j = (G.integers(-1000, 1000, (16, 24)).astype(np.int32) for _ in range(2))
    # signed zeros both ways round and NaNs: maximum / minimum keep numpy's choice in both tiers
    z = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, -1.0, 0.0] * 5, np.float16)
    w = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, np.nan, 0.0, -1.0] * 5, np.float16)
    return [(lambda x, y: fs.gelu(x) * fs.sigmoid(y) + fs.tanh(x - y), (x, y)),            # vector
            (lambda z, w: fs.maximum(z, w) * 2.0 + fs.minimum(w, z), (z, w)),               # float16 +-0
            (lambda x: fs.softmax(x, axis=-1), (G.standard_normal((17, 300)).astype(F32),)),  # row
            (lambda x: fs.sum(x * x, axis=0), (G.standard_normal((40, 24)).astype(F32),)),    # column
            (lambda c, d: fs.relu(fs.concatenate([c, d], 1))[:, 3:50] * 2.0, (c, d)),        # view
            (lambda h: fs.exp(h) * 0.5 + h, (h,)),                                          # float16
            (lambda i, j: fs.maximum(i * 3 + j, i - j), (i, j))]                            # int32


def test_the_quick_and_the_optimised_tier_compute_the_same_bits(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    programs = _programs()
    results = {}
    for mode in ("quick", "0"):
        monkeypatch.setenv("FUSEDSL_JIT_TIERS", mode)
        results[mode] = [np.asarray(fs.fused_kernel(f)(*args)) for f, args in programs]   # new kernels
    assert any(key.startswith("quick:") for key in jit._memory)
    for (f, args), quick, best in zip(programs, results["quick"], results["0"]):
        assert quick.dtype == best.dtype and quick.shape == best.shape
        assert quick.tobytes() == best.tobytes(), inspect.getsource(f).strip()
    x, y = programs[0][1]
    want = (0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))) / (1 + np.exp(-y)) + np.tanh(x - y)
    np.testing.assert_allclose(results["quick"][0], want, rtol=2e-5, atol=2e-5)


_STRIDED_LOOP = r"""
define void @f(ptr %a, ptr %b, i64 %n, i64 %s) {
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%i1, %body]
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %done
body:
  %ia = mul i64 %i, %s
  %pa = getelementptr float, ptr %a, i64 %ia
  %pb = getelementptr float, ptr %b, i64 %i
  %x = load float, ptr %pa
  %y = load float, ptr %pb
  %z = fadd float %x, %y
  store float %z, ptr %pb
  %i1 = add i64 %i, 1
  br label %head
done:
  ret void
}
"""


def test_the_quick_tiers_code_generator_flags_hold_for_its_code_generation_only(monkeypatch):
    """jit.QUICK_CODEGEN (LLVM's process-wide -disable-lsr) is set while the quick tier generates
    code and reset after: the quick object differs from one generated without it, and the optimised
    object is the same before and after a quick compile (with the flag it would differ)."""
    optimised = jit.optimise_to_object(_STRIDED_LOOP)
    quick = jit.quick_object(_STRIDED_LOOP)
    assert jit.optimise_to_object(_STRIDED_LOOP) == optimised
    mod, tm = jit._optimised(_STRIDED_LOOP)
    assert jit._emit(tm, mod, jit.QUICK_CODEGEN) != optimised
    monkeypatch.setattr(jit, "QUICK_CODEGEN", ())
    assert jit.quick_object(_STRIDED_LOOP) != quick


def _tiered(before: set) -> list:
    return [c for key, c in jit._memory.items() if key not in before and c.slot]


def test_the_first_call_runs_the_quick_code_until_the_optimised_code_is_swapped_in(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSEDSL_JIT_TIERS", raising=False)
    x = G.standard_normal((64, 129)).astype(F32)
    before = set(jit._memory)
    kernel = fs.fused_kernel(lambda v: fs.log_softmax(v, axis=-1) * 3.0)
    first = kernel(x)
    [compiled] = _tiered(before)
    assert not compiled.from_disk and compiled.slot
    assert jit.wait_for_upgrades(120)
    assert compiled.upgraded is not None
    assert ctypes.c_void_p.from_address(compiled.slot).value   # the entry calls the optimised code now
    again = kernel(x)                                           # the same bound kernel, upgraded
    assert again.tobytes() == first.tobytes()
    # both objects on disk: a new process loads the optimised one and queues nothing
    names = [n for _, _, files in os.walk(tmp_path / "llvm") for n in files if n.endswith(".o")]
    assert f"{compiled.key}.o" in names and len(names) >= 3   # the lowered IR, the quick and the optimised object
    monkeypatch.setattr(jit, "_memory", {})
    third = fs.fused_kernel(lambda v: fs.log_softmax(v, axis=-1) * 3.0)(x)
    [loaded] = jit._memory.values()
    assert loaded.from_disk and not loaded.slot
    assert third.tobytes() == first.tobytes()


def test_a_process_without_the_optimised_object_loads_the_quick_one(monkeypatch, tmp_path):
    """A short script that exits before its upgrade ran compiles nothing the second time: the quick
    object is cached too (and its upgrade queued again)."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSEDSL_JIT_TIERS", "quick")   # the first process never upgrades
    x = G.standard_normal((5, 77)).astype(F32)
    want = fs.fused_kernel(lambda v: fs.sqrt(fs.abs(v)) - v)(x)
    monkeypatch.setattr(jit, "_memory", {})
    monkeypatch.delenv("FUSEDSL_JIT_TIERS")
    compiles = []
    monkeypatch.setattr(jit, "quick_object", lambda text: compiles.append(text))
    got = fs.fused_kernel(lambda v: fs.sqrt(fs.abs(v)) - v)(x)
    assert compiles == []
    [loaded] = jit._memory.values()
    assert loaded.from_disk and loaded.slot
    assert got.tobytes() == want.tobytes()
    assert jit.wait_for_upgrades(120) and loaded.upgraded is not None


def test_an_unknown_tier_setting_names_the_call(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSEDSL_JIT_TIERS", "fast")
    x = np.ones(8, F32)
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(fs.FusedslError) as info:
        fs.fused_kernel(lambda v: v * 4.25 + 1)(x)
    msg = str(info.value)
    assert type(info.value).__name__ == "JitTiersError"
    assert msg.startswith(f"{__file__}:{line}: FUSEDSL_JIT_TIERS='fast' is not a tier setting"), msg
    assert "set 0 (optimised before the first call) or quick" in msg


def test_a_child_forked_beside_an_upgrade_compiles(monkeypatch, tmp_path):
    """A fork waits for the running upgrade (llvmlite holds one lock over every LLVM call: a child
    forked while the upgrade thread held it would hang at its first compile); the child compiles
    and runs a new kernel, and the parent's upgrades go on."""
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSEDSL_JIT_TIERS", raising=False)
    monkeypatch.setattr(jit, "UPGRADE_QUIET", 0.0)   # the upgrade starts at once
    x = G.standard_normal((48, 200)).astype(F32)
    before = set(jit._memory)
    np.testing.assert_allclose(fs.fused_kernel(lambda v: fs.softmax(v * 2.0, axis=-1))(x),
                               np.exp(2 * x - (2 * x).max(-1, keepdims=True)) /
                               np.exp(2 * x - (2 * x).max(-1, keepdims=True)).sum(-1, keepdims=True), rtol=2e-6)
    [compiled] = _tiered(before)
    pid = os.fork()
    if pid == 0:   # the child: a new kernel's compile must not hang on the parent's lock
        ok = False
        try:
            y = fs.fused_kernel(lambda v: fs.tanh(v) * 3.0 - 1.0)(x)
            ok = np.allclose(y, np.tanh(x) * 3.0 - 1.0, rtol=1e-5, atol=1e-6)
        finally:
            os._exit(0 if ok else 1)
    deadline = 120
    start = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung compiling a kernel")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert jit.wait_for_upgrades(120) and compiled.upgraded is not None


def test_an_upgrade_writes_into_the_cache_its_kernel_was_compiled_for(monkeypatch, tmp_path):
    """The optimised object goes where the kernel's cache was when it compiled, not where
    FUSEDSL_CACHE_DIR points when the upgrade is done (another cache's size accounting: a test suite's
    next test, a program switching caches)."""
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(first))
    monkeypatch.delenv("FUSEDSL_JIT_TIERS", raising=False)
    x = G.standard_normal((6, 50)).astype(F32)
    before = set(jit._memory)
    fs.fused_kernel(lambda v: fs.exp(v) * fs.sigmoid(v) - 0.75)(x)
    [compiled] = _tiered(before)
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(second))
    assert jit.wait_for_upgrades(120) and compiled.upgraded is not None
    names = {n for _, _, files in os.walk(first) for n in files}
    assert f"{compiled.key}.o" in names
    assert not [n for _, _, files in os.walk(second) for n in files if n.endswith(".o")]
