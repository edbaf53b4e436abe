"""Canonicalisation passes as before/after text, and the PassManager.

`ir()` adds a `loc(...)` to every line so the texts below stay readable; each test
runs one pass (verified after it) and compares the printed result with `expected`.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import re

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.ir import Module
from fusedsl.passes import CSE, DCE, Algebra, ConstantFold, Pass, PassManager, write_atomic
from fusedsl.passes import base as base_module
from fusedsl.passes import canonicalize as canon_module
from fusedsl.passes import fold_batch_norm as fold_batch_norm_module
from fusedsl.passes import fuse_attention as fuse_attention_module
from fusedsl.passes.canonicalize import LocalRewrite
from fusedsl.passes.fold_transpose import FoldTranspose
from fusedsl.passes.split_reductions import SplitReductions
from fusedsl.passes.pipeline import canonicalize, canonicalize_passes
from fusedsl.reference import run_module

from conftest import kernel_corpus


def ir(text: str) -> str:
    """Text IR with `loc("t.py":1)` added to the func line and to every op line."""
    out = []
    for line in text.strip("\n").splitlines():
        line = line[4:] if line.startswith("    ") else line   # dedent the test's indentation
        if line.startswith("func "):
            line = line.replace(") {", ') loc("t.py":1) {') if ' loc(' not in line else line
        elif " = " in line and " loc(" not in line:
            line += ' loc("t.py":1)'
        out.append(line)
    return "\n".join(out) + "\n"


def run(passes, before: str) -> str:
    return str(PassManager(passes).run(fs.parse_ir(ir(before))))


def check(passes, before: str, expected: str):
    assert run(passes, before) == ir(expected)


# ---- CSE ---------------------------------------------------------------------------------
def test_cse_merges_repeated_subexpressions_and_their_users():
    check([CSE()], """
    func @f(%x: f32[4]) -> (f32[4]) {
      %0 = exp(%x) : f32[4]
      %1 = exp(%x) : f32[4]
      %2 = tanh(%0) : f32[4]
      %3 = tanh(%1) : f32[4]
      %4 = add(%2, %3) : f32[4]
      return %4
    }""", """
    func @f(%x: f32[4]) -> (f32[4]) {
      %0 = exp(%x) : f32[4]
      %1 = tanh(%0) : f32[4]
      %2 = add(%1, %1) : f32[4]
      return %2
    }""")


def test_cse_keeps_ops_that_differ_in_attributes_or_operand_order():
    before = """
    func @f(%x: f32[4,4], %y: f32[4,4]) -> (f32[4], f32[4], f32[4,4], f32[4,4]) {
      %0 = sum(%x) {axes = [0], keepdims = false} : f32[4]
      %1 = sum(%x) {axes = [1], keepdims = false} : f32[4]
      %2 = sub(%x, %y) : f32[4,4]
      %3 = sub(%y, %x) : f32[4,4]
      return %0, %1, %2, %3
    }"""
    check([CSE()], before, before)


def test_cse_merges_nan_constants_but_never_zero_with_negative_zero():
    check([CSE()], """
    func @f(%x: f32[2]) -> (f32[2], f32[2], f32[2], f32[2]) {
      %0 = constant() {dtype = "float32", value = 0.0} : f32[]
      %1 = constant() {dtype = "float32", value = -0.0} : f32[]
      %2 = constant() {dtype = "float32", value = nan} : f32[]
      %3 = constant() {dtype = "float32", value = nan} : f32[]
      %4 = mul(%x, %0) : f32[2]
      %5 = mul(%x, %1) : f32[2]
      %6 = add(%x, %2) : f32[2]
      %7 = add(%x, %3) : f32[2]
      return %4, %5, %6, %7
    }""", """
    func @f(%x: f32[2]) -> (f32[2], f32[2], f32[2], f32[2]) {
      %0 = constant() {dtype = "float32", value = 0.0} : f32[]
      %1 = constant() {dtype = "float32", value = -0.0} : f32[]
      %2 = constant() {dtype = "float32", value = nan} : f32[]
      %3 = mul(%x, %0) : f32[2]
      %4 = mul(%x, %1) : f32[2]
      %5 = add(%x, %2) : f32[2]
      return %3, %4, %5, %5
    }""")


def test_cse_keeps_constants_of_different_dtypes_apart():
    before = """
    func @f(%x: f32[2], %i: i32[2]) -> (f32[2], i32[2]) {
      %0 = constant() {dtype = "float32", value = 2.0} : f32[]
      %1 = constant() {dtype = "int32", value = 2} : i32[]
      %2 = mul(%x, %0) : f32[2]
      %3 = mul(%i, %1) : i32[2]
      return %2, %3
    }"""
    check([CSE()], before, before)


# ---- DCE ---------------------------------------------------------------------------------
def test_dce_drops_unused_ops_and_keeps_parameters():
    check([DCE()], """
    func @f(%x: f32[4], %unused: f32[4]) -> (f32[4]) {
      %0 = exp(%x) : f32[4]
      %1 = log(%0) : f32[4]
      %2 = tanh(%unused) : f32[4]
      %3 = neg(%0) : f32[4]
      return %3
    }""", """
    func @f(%x: f32[4], %unused: f32[4]) -> (f32[4]) {
      %0 = exp(%x) : f32[4]
      %1 = neg(%0) : f32[4]
      return %1
    }""")


def test_dce_keeps_everything_feeding_any_result():
    before = """
    func @f(%x: f32[4]) -> (f32[4], f32[]) {
      %0 = exp(%x) : f32[4]
      %1 = sum(%0) {axes = [0], keepdims = false} : f32[]
      return %0, %1
    }"""
    check([DCE()], before, before)


# ---- constant folding -------------------------------------------------------------------------
def test_constant_fold_folds_constant_expressions():
    check([ConstantFold(), DCE()], """
    func @f(%x: f32[4]) -> (f32[4]) {
      %0 = constant() {dtype = "float32", value = 2.0} : f32[]
      %1 = constant() {dtype = "float32", value = 3.0} : f32[]
      %2 = mul(%0, %1) : f32[]
      %3 = neg(%2) : f32[]
      %4 = add(%x, %3) : f32[4]
      return %4
    }""", """
    func @f(%x: f32[4]) -> (f32[4]) {
      %0 = constant() {dtype = "float32", value = -6.0} : f32[]
      %1 = add(%x, %0) : f32[4]
      return %1
    }""")


def test_constant_fold_rounds_once_to_the_result_dtype():
    # 0.1 + 0.2 in float16: each constant rounds to f16, the sum is computed in f32
    # (0.0999755859375 + 0.199951171875 = 0.2999267578125, exact) and rounded once
    # to f16, a tie that goes to the even neighbour 0.2998046875
    after = run([ConstantFold(), DCE()], """
    func @f(%x: f16[2]) -> (f16[2]) {
      %0 = constant() {dtype = "float16", value = 0.1} : f16[]
      %1 = constant() {dtype = "float16", value = 0.2} : f16[]
      %2 = add(%0, %1) : f16[]
      %3 = add(%x, %2) : f16[2]
      return %3
    }""")
    assert '{dtype = "float16", value = 0.2998046875}' in after
    assert float(np.float16(np.float32(np.float16(0.1)) + np.float32(np.float16(0.2)))) == 0.2998046875


def test_constant_fold_casts_comparisons_and_integer_wrap():
    check([ConstantFold(), DCE()], """
    func @f(%x: i8[2], %y: f32[2]) -> (i8[2], f32[2]) {
      %0 = constant() {dtype = "int8", value = 100} : i8[]
      %1 = add(%0, %0) : i8[]
      %2 = add(%x, %1) : i8[2]
      %3 = constant() {dtype = "float32", value = -2.7} : f32[]
      %4 = cast(%3) {dtype = "int32"} : i32[]
      %5 = lt(%4, %4) : i1[]
      %6 = constant() {dtype = "float32", value = 1.0} : f32[]
      %7 = where(%5, %3, %6) : f32[]
      %8 = mul(%y, %7) : f32[2]
      return %2, %8
    }""", """
    func @f(%x: i8[2], %y: f32[2]) -> (i8[2], f32[2]) {
      %0 = constant() {dtype = "int8", value = -56} : i8[]
      %1 = add(%x, %0) : i8[2]
      %2 = constant() {dtype = "float32", value = 1.0} : f32[]
      %3 = mul(%y, %2) : f32[2]
      return %1, %3
    }""")


def test_constant_fold_leaves_non_constant_and_non_elementwise_ops():
    before = """
    func @f(%x: f32[2]) -> (f32[2], f32[3]) {
      %0 = constant() {dtype = "float32", value = 2.0} : f32[]
      %1 = mul(%x, %0) : f32[2]
      %2 = broadcast_to(%0) {shape = [3]} : f32[3]
      %3 = exp(%2) : f32[3]
      return %1, %3
    }"""
    check([ConstantFold()], before, before)


# ---- algebra: each rule of the docstring, and what is NOT folded ------------------------------------
ALGEBRA_FOLDED = [
    # (dtype, op, constant value, constant on the left?)
    ("f32", "mul", "1.0", False), ("f32", "mul", "1.0", True), ("i32", "mul", "1", True),
    ("f16", "div", "1.0", False),
    ("f32", "sub", "0.0", False), ("i8", "sub", "0", False),
    ("f32", "add", "-0.0", False), ("f32", "add", "-0.0", True),
    ("i32", "add", "0", False), ("u8", "add", "0", True),
]
ALGEBRA_KEPT = [
    ("f32", "add", "0.0", False),    # -0.0 + 0.0 = +0.0: the sign of zero would change
    ("f32", "add", "0.0", True),
    ("f32", "sub", "-0.0", False),   # -0.0 - (-0.0) = +0.0
    ("f32", "div", "1.0", True),     # 1 / x is not x
    ("f32", "sub", "0.0", True),     # 0 - x is not x
    ("f32", "mul", "2.0", False),
    ("f32", "mul", "-1.0", False),
]
DTYPE_NAME = {"f32": "float32", "f16": "float16", "i32": "int32", "i8": "int8", "u8": "uint8"}


def identity_text(dtype, op, value, left):
    operands = "%0, %x" if left else "%x, %0"
    return f"""
    func @f(%x: {dtype}[3]) -> ({dtype}[3]) {{
      %0 = constant() {{dtype = "{DTYPE_NAME[dtype]}", value = {value}}} : {dtype}[]
      %1 = {op}({operands}) : {dtype}[3]
      return %1
    }}"""


@pytest.mark.parametrize("dtype, op, value, left", ALGEBRA_FOLDED)
def test_algebra_folds_identity(dtype, op, value, left):
    check([Algebra(), DCE()], identity_text(dtype, op, value, left), f"""
    func @f(%x: {dtype}[3]) -> ({dtype}[3]) {{
      return %x
    }}""")


@pytest.mark.parametrize("dtype, op, value, left", ALGEBRA_KEPT)
def test_algebra_does_not_fold(dtype, op, value, left):
    before = identity_text(dtype, op, value, left)
    check([Algebra(), DCE()], before, before)


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_algebra_does_not_fold_x_minus_x(dtype):
    # for floats inf - inf and NaN - NaN are NaN, not 0; ints are left alone too
    before = f"""
    func @f(%x: {dtype}[3]) -> ({dtype}[3]) {{
      %0 = sub(%x, %x) : {dtype}[3]
      return %0
    }}"""
    check(canonicalize_passes(), before, before)


def test_algebra_folds_double_negation():
    check([Algebra(), DCE()], """
    func @f(%x: i8[3]) -> (i8[3]) {
      %0 = neg(%x) : i8[3]
      %1 = neg(%0) : i8[3]
      %2 = abs(%1) : i8[3]
      return %2
    }""", """
    func @f(%x: i8[3]) -> (i8[3]) {
      %0 = abs(%x) : i8[3]
      return %0
    }""")


def test_algebra_never_changes_values():
    """The folded and the kept cases compute what they computed before, bit for bit."""
    x = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1.5, -2.0], np.float32)
    for dtype, op, value, left in ALGEBRA_FOLDED + ALGEBRA_KEPT:
        if dtype != "f32":
            continue
        text = ir(identity_text(dtype, op, value, left)).replace("[3]", "[7]")
        module = fs.parse_ir(text)
        after = PassManager([Algebra(), DCE()]).run(module)
        with np.errstate(all="ignore"):
            want, = run_module(module, [x])
            got, = run_module(after, [x])
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{op} {value}")
        np.testing.assert_array_equal(got, want)


def test_algebra_docstring_lists_the_rules_tested_here():
    doc = canon_module.__doc__
    for rule in ("x * 1 -> x", "x / 1 -> x", "x - 0.0 -> x", "x + (-0.0) -> x", "x + 0.0, x - (-0.0)",
                 "x - x", "neg(neg(x)) -> x"):
        assert rule in doc, rule


# ---- the canonicalize pipeline on traced kernels -------------------------------------------------
def test_pipeline_on_a_traced_kernel():
    @fs.fused_kernel
    def k(x):
        a = fs.exp(x) * 1.0
        b = fs.exp(x)
        unused = fs.tanh(x)  # noqa: F841
        return -(-(a + b))
    module = k.trace(np.ones(4, np.float32))
    after = str(canonicalize(module))
    body = [line.split(" loc(")[0].strip() for line in after.splitlines()[1:-1]]
    assert body == ["%0 = exp(%x) : f32[4]", "%1 = add(%0, %0) : f32[4]", "return %1"]


# ---- PassManager --------------------------------------------------------------------------------
class Breaker(Pass):
    """A broken pass: drops the first op, so its result is used before it is defined."""

    name = "breaker"

    def run_on_function(self, fn, module):
        import dataclasses
        return dataclasses.replace(fn, ops=fn.ops[1:])


BROKEN_INPUT = """
func @f(%x: f32[4]) -> (f32[4]) {
  %0 = exp(%x) : f32[4]
  %1 = tanh(%0) : f32[4]
  return %1
}"""


def test_pass_manager_verifies_after_every_pass():
    module = fs.parse_ir(ir(BROKEN_INPUT))
    with pytest.raises(fs.VerifyError, match=r"use-before-def: in @f, op #0 \(tanh\)"):
        PassManager([CSE(), Breaker(), DCE()]).run(module)
    # without verification the broken module goes through (and later stages would suffer)
    PassManager([Breaker()], verify=False).run(module)


def test_pass_manager_times_each_pass():
    pm = PassManager(canonicalize_passes())
    pm.run(fs.parse_ir(ir(BROKEN_INPUT)))
    assert [name for name, _ in pm.timings] == ["fold-batch-norm", "constant-fold", "algebra", "cse",
                                                 "fold-transpose", "attention-fusion", "attention-rope",
                                                 "attention-layout", "attention-heads", "split-reductions", "dce"]
    assert all(seconds >= 0 for _, seconds in pm.timings)


def test_passes_and_compiles_run_with_the_garbage_collector_paused():
    """The cyclic collector is off while passes run (and for a whole compile) and back on after,
    also when a pass fails; a caller that turned it off keeps it off."""
    import gc

    class Probe(Pass):
        name = "probe"
        seen: list = []

        def run_on_function(self, fn, module):
            Probe.seen.append(gc.isenabled())
            return fn

    assert gc.isenabled()
    PassManager([Probe(), DCE()]).run(fs.parse_ir(ir(BROKEN_INPUT)))
    with pytest.raises(fs.VerifyError):
        PassManager([Probe(), Breaker()]).run(fs.parse_ir(ir(BROKEN_INPUT)))
    assert Probe.seen == [False, False] and gc.isenabled()
    x = np.arange(4, dtype=np.float32)
    seen = []
    original = canon_module.DCE.run_on_function

    def dce(self, fn, module):
        seen.append(gc.isenabled())
        return original(self, fn, module)

    canon_module.DCE.run_on_function = dce
    try:
        @fs.fused_kernel
        def f(a):
            return fs.exp(a) + 1.0
        np.testing.assert_allclose(f(x), np.exp(x) + 1, rtol=1e-6)
        gc.disable()
        try:
            f.compile(x, opt_level=1)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        canon_module.DCE.run_on_function = original
    assert seen and not any(seen) and gc.isenabled()


def test_printing_and_the_first_calls_lowering_run_with_the_garbage_collector_paused(tmp_path, monkeypatch):
    """Printing Ascend C (`k.source`) and building a kernel's LLVM IR at its first call run with the
    cyclic collector off (each collection walked the caller's whole heap), and it is back on after."""
    import gc
    from fusedsl.backend_ascendc import printer_kernel
    from fusedsl.backend_cpu import kernel_cpu

    seen = {"print": [], "lower": []}
    body, lower = printer_kernel.KernelPrinter.body_parts, kernel_cpu.lower_kernel

    def probe_body(self):   # (each kernel's part of the file: printer.print_source joins them)
        seen["print"].append(gc.isenabled())
        return body(self)

    def probe_lower(*args, **kwargs):
        seen["lower"].append(gc.isenabled())
        return lower(*args, **kwargs)

    monkeypatch.setattr(printer_kernel.KernelPrinter, "body_parts", probe_body)
    monkeypatch.setattr(kernel_cpu, "lower_kernel", probe_lower)
    monkeypatch.setattr(kernel_cpu, "_lowered", {})           # (no kernel lowered before in this process
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))   # nor on disk)
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    k = fs.fused_kernel(lambda a: fs.relu(a) * 3.0 - a)
    np.testing.assert_allclose(k(x), np.maximum(x, 0) * 3 - x, rtol=1e-6)
    assert "__global__" in k.compile(x).source
    assert seen["print"] == [False] and seen["lower"] and not any(seen["lower"]) and gc.isenabled()


def test_dump_ir_writes_one_file_per_pass(tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(dump))

    @fs.fused_kernel
    def k(x):
        return fs.exp(x) * 1.0 + fs.exp(x)
    k(np.ones(3, np.float32))
    names = sorted(os.listdir(dump))[:12]   # later stages of the compiler may dump more
    assert names == ["00-input.ir", "01-fold-batch-norm.ir", "02-constant-fold.ir", "03-algebra.ir", "04-cse.ir",
                     "05-fold-transpose.ir", "06-attention-fusion.ir", "07-attention-rope.ir",
                     "08-attention-layout.ir", "09-attention-heads.ir", "10-split-reductions.ir", "11-dce.ir"]
    texts = [(dump / n).read_text() for n in names]
    for text in texts:
        assert str(fs.parse_ir(text)) == text
    assert "mul(" in texts[2] and "mul(" not in texts[3]          # algebra removed x * 1.0
    assert texts[3].count("exp(") == 2 and texts[4].count("exp(") == 1   # cse merged the exps
    assert texts[5] == texts[4]                                          # no matmul: fold-transpose changes nothing
    assert texts[9] == texts[8] == texts[7] == texts[6] == texts[5]      # no softmax @ v: no attention
    assert texts[10] == texts[9]                                         # no reduction to split
    assert "constant()" in texts[10] and "constant()" not in texts[11]  # dce dropped the constant


def test_dump_dir_argument_overrides_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("FUSEDSL_DUMP_IR", raising=False)
    PassManager([DCE()], dump_dir=str(tmp_path)).run(fs.parse_ir(ir(BROKEN_INPUT)))
    assert sorted(os.listdir(tmp_path)) == ["00-input.ir", "01-dce.ir"]
    PassManager([DCE()]).run(fs.parse_ir(ir(BROKEN_INPUT)))   # no env, no dir: nothing written


def test_write_atomic_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "out.ir"
    write_atomic(str(path), "first")
    write_atomic(str(path), "second")
    assert path.read_text() == "second"
    assert os.listdir(tmp_path) == ["out.ir"]


def test_passes_return_new_modules_and_leave_the_input_alone():
    module = fs.parse_ir(ir(BROKEN_INPUT.replace("%1 = tanh(%0)", "%1 = tanh(%x)")))
    before = str(module)
    after = PassManager([DCE()]).run(module)
    assert isinstance(after, Module) and after is not module
    assert str(module) == before and str(after) != before
    assert re.search(r"exp", before) and not re.search(r"exp", str(after))


def test_fold_transpose_reads_the_matmul_operand_transposed():
    from fusedsl.passes.fold_transpose import FoldTranspose
    from fusedsl.passes.canonicalize import DCE
    from fusedsl.passes.base import PassManager
    before = """func @lin(%x: f32[4,3], %w: f32[5,3], %v: f32[3,6]) -> (f32[4,5], f32[6,4]) loc("l.py":1) {
  %0 = transpose(%w) {perm = [1, 0]} : f32[3,5] loc("l.py":2)
  %1 = matmul(%x, %0) : f32[4,5] loc("l.py":2)
  %2 = transpose(%x) {perm = [1, 0]} : f32[3,4] loc("l.py":3)
  %3 = transpose(%v) {perm = [1, 0]} : f32[6,3] loc("l.py":3)
  %4 = matmul(%3, %2) : f32[6,4] loc("l.py":3)
  return %1, %4
}
"""
    after = """func @lin(%x: f32[4,3], %w: f32[5,3], %v: f32[3,6]) -> (f32[4,5], f32[6,4]) loc("l.py":1) {
  %0 = matmul(%x, %w) {transpose_b = true} : f32[4,5] loc("l.py":2)
  %1 = matmul(%v, %x) {transpose_a = true, transpose_b = true} : f32[6,4] loc("l.py":3)
  return %0, %1
}
"""
    module = fs.parse_ir(before)
    out = PassManager([FoldTranspose(), DCE()]).run(module)
    assert str(out) == after
    from fusedsl.reference import run_module
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (5, 3), (3, 6))]
    for a, b in zip(run_module(module, args), run_module(out, args)):
        np.testing.assert_array_equal(a, b)


def test_fold_transpose_keeps_a_transpose_with_other_readers_and_other_permutations():
    from fusedsl.passes.fold_transpose import FoldTranspose
    from fusedsl.passes.base import PassManager
    text = """func @t(%x: f32[2,3,4], %w: f32[2,4,5]) -> (f32[2,3,5], f32[4,3,2]) loc("t.py":1) {
  %0 = transpose(%x) {perm = [2, 1, 0]} : f32[4,3,2] loc("t.py":2)
  %1 = matmul(%x, %w) : f32[2,3,5] loc("t.py":3)
  return %1, %0
}
"""
    module = fs.parse_ir(text)
    assert str(PassManager([FoldTranspose()]).run(module)) == text


# ---- a pass that rewrites nothing ------------------------------------------------------------
def test_a_pass_that_rewrites_nothing_returns_its_input_module():
    """Pass.run hands back the module it was given when no function changed (Rewriter.function,
    DCE and the passes' own early returns give back the function itself), so the PassManager
    need not verify it again; a pass that rewrites something still returns a new module."""
    @fs.fused_kernel
    def softmax(x):
        return fs.softmax(x)
    module = softmax.trace(np.ones((4, 8), np.float32))
    for p in canonicalize_passes():
        assert p.run(module) is module, p.name
    folded = fs.parse_ir(ir(BROKEN_INPUT.replace("%1 = tanh(%0)", "%1 = mul(%0, %0)")))
    assert CSE().run(folded) is folded and DCE().run(folded) is folded
    dead = fs.parse_ir(ir(BROKEN_INPUT.replace("%1 = tanh(%0)", "%1 = tanh(%x)")))
    assert DCE().run(dead) is not dead


def test_pass_manager_verifies_an_input_no_pass_rewrites():
    """The shortcut skips only a module verified before: an invalid input that every pass leaves
    alone is still caught, after the first pass."""
    good = fs.parse_ir(ir(BROKEN_INPUT))
    bad = Module((dataclasses.replace(good.main, ops=good.main.ops[::-1]),))   # tanh before exp
    assert CSE().run(bad) is bad
    with pytest.raises(fs.VerifyError, match=r"use-before-def: in @f, op #0 \(tanh\)"):
        PassManager([CSE(), CSE()]).run(bad)


def test_pass_manager_verifies_every_module_a_pass_makes(monkeypatch):
    """Over many kernels: every module the pipeline's passes return is verified or is the very
    module verified just before it (so skipping it checks nothing less), and the IR after each
    pass prints as the same passes run on fresh copies print it."""
    verified = []
    monkeypatch.setattr(base_module, "verify_module", lambda m: verified.append(m) or m)
    kernels = [
        (lambda x: fs.softmax(x), [(4, 8)]),
        (lambda x: fs.exp(x) * 1.0 + fs.exp(x), [(4,)]),
        (lambda x, w: fs.layer_norm(x, w, w), [(4, 8), (8,)]),
        (lambda x, y: fs.relu(x @ y) - 0.0, [(4, 8), (8, 4)]),
        (lambda x: fs.sum(x * 2, axis=(0, 2)), [(2, 3, 4)]),
        (lambda x: -(-fs.tanh(x)), [(4,)]),
    ]
    for fn, shapes in kernels:
        module = fs.fused_kernel(fn).trace(*[np.ones(s, np.float32) for s in shapes])
        verified.clear()
        pm = PassManager(canonicalize_passes())
        pm.run(module)
        previous, last_verified = module, None
        for name, after in pm.history:
            if after is not previous or last_verified is None:
                assert verified and verified.pop(0) is after, name
                last_verified = after
            else:
                assert after is last_verified, name
            # the same pass on a fresh copy of its input: the same text (a copy is never returned as-is)
            copy = fs.parse_ir(str(previous))
            fresh = next(p for p in canonicalize_passes() if p.name == name).run(copy)
            assert str(fresh) == str(after), name
            previous = after
        assert not verified


def test_passes_that_return_early_rewrite_as_their_full_loop_over_the_corpus(monkeypatch):
    """fold-transpose returns at once without a transpose, split-reductions without a reduction
    over separated axes, fold-batch-norm without a conv2d or matmul, attention-fusion without a
    matmul, the other attention passes without an attention op: over every program of
    tools/kernel_corpus.py (each dtype) and each module the pipeline hands them, the full loop
    gives the same text (and then the function itself, so the module is handed on unchanged) and
    attention-fusion the same misses."""
    corpus = kernel_corpus()

    def full_loop(p, main, module):
        """The pass's rewrite with its early return off."""
        if isinstance(p, FoldTranspose):
            return LocalRewrite.run_on_function(p, main, module)
        if isinstance(p, SplitReductions):
            return SplitReductions._split(main)
        with monkeypatch.context() as m:
            m.setattr(fuse_attention_module, "has_op", lambda fn, *names: True)
            m.setattr(fold_batch_norm_module, "has_op", lambda fn, *names: True)
            return p.run_on_function(main, module)

    seen, early = set(), collections.Counter()
    for key, fn, specs, _ in corpus.configs():
        if (key, specs[0][1]) in seen:
            continue
        seen.add((key, specs[0][1]))
        try:
            module = fs.fused_kernel(fn).trace(*[np.ones(s[0], s[1]) for s in specs])
        except fs.FusedslError:
            continue
        for p, q in zip(canonicalize_passes(), canonicalize_passes()):
            main = module.main
            fast = p.run_on_function(main, module)
            full = full_loop(q, main, module)
            assert str(fast) == str(full), (key, p.name)
            assert getattr(p, "misses", None) == getattr(q, "misses", None), (key, p.name)
            early[p.name] += fast is main and full is main
            module = p.run(module)
    assert len(seen) > 150, len(seen)
    shortcut = ("fold-transpose", "split-reductions", "fold-batch-norm", "attention-fusion", "attention-rope",
                "attention-layout", "attention-heads")
    assert all(early[name] > 100 for name in shortcut), early
