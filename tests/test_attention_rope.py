"""Rotary embedding fused into the attention kernel (passes/fuse_attention.FoldAttentionRope): fs.rope
of q and k, or the rotate-half form imported from PyTorch, becomes the attention op's `rope`, so it
is no kernel of its own; the printed kernel rotates each Q block and K block as it reads them.
simulate (910B, 310P), kernel(*arrays) on both CPU executors and the ONNX export agree with torch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fusedsl as fs
from conftest import fuzz_settings, marked_line

torch = pytest.importorskip("torch")
F = torch.nn.functional


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def torch_rope_sdpa(q, k, v, cos, sin, causal):
    tq, tk, tv, tc, ts = (torch.from_numpy(a.astype(np.float32)) for a in (q, k, v, cos, sin))
    tq, tk = tq * tc + rotate_half(tq) * ts, tk * tc + rotate_half(tk) * ts
    gqa = tq.shape[-3] != tk.shape[-3]
    return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=gqa).numpy()


def tables(rng, s, d, dtype):
    pos = np.arange(s, dtype=np.float32)[:, None] / (10000 ** (np.arange(0, d, 2) / d))[None, :]
    emb = np.concatenate([pos, pos], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def roped(q, k, v, cos, sin):
    return fs.attention(fs.rope(q, cos, sin), fs.rope(k, cos, sin), v, causal=True)


@pytest.mark.parametrize("target, heads", [("ascend910b", (4, 2)), ("ascend310p", (2, 2))])
def test_rope_of_q_and_k_is_part_of_the_printed_attention_kernel(target, heads):
    """One attention kernel with rope = true; 40 rows (two Q blocks' worth of tails on 310P's
    blocks), causal, GQA on 910B; simulate, both CPU executors and torch agree."""
    rng = np.random.default_rng(1)
    h, hkv = heads
    q = rng.standard_normal((1, h, 40, 32)).astype(np.float16)
    k, v = (rng.standard_normal((1, hkv, 40, 32)).astype(np.float16) for _ in range(2))
    cos, sin = tables(rng, 40, 32, np.float16)
    c = fs.fused_kernel(roped, target=target).compile(q, k, v, cos, sin)
    assert [p.ops for p in c.kernels] == [["attention"]] and "rope = true" in c.ir
    assert "q and k rotated (rope)" in c.kernels[0].row.plan_note and "RotateK();" in c.source and "CopyRowsOut(gm_kr[" in c.source
    want = torch_rope_sdpa(q, k, v, cos, sin, True)
    results = {"simulate": c.simulate(q, k, v, cos, sin)}
    for executor in ("reference", "llvm"):
        fs.config.executor, old = executor, fs.config.executor
        try:
            results[executor] = c(q, k, v, cos, sin)
        finally:
            fs.config.executor = old
    for name, got in results.items():
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=5e-3, err_msg=name)


def test_the_torch_rotate_half_block_imports_with_rope_inside_attention():
    """The issue's block (one qkv linear, split, heads, rotate-half rope, SDPA, out projection):
    the rope, the heads transposes and the three slices of the qkv projection are no kernels any more
    (16 -> 6: attention reads q, k, v where the projection wrote them), every kernel prints, and the
    values are torch's."""
    class RopeBlock(torch.nn.Module):
        def __init__(self, d=64, h=4, t=8):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.f1, self.f2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
            cos, sin = tables(None, t, d // h, np.float32)
            self.register_buffer("cos", torch.from_numpy(cos))
            self.register_buffer("sin", torch.from_numpy(sin))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            q = q * self.cos + rotate_half(q) * self.sin
            k = k * self.cos + rotate_half(k) * self.sin
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            return x + self.f2(F.gelu(self.f1(self.ln2(x)), approximate="tanh"))

    torch.manual_seed(0)
    block = RopeBlock().eval()
    x = torch.randn(2, 8, 64)
    m = fs.from_torch(block, x)
    c = m.compile(x.numpy())
    ops = [p.ops for p in c.kernels]
    assert ["attention"] in ops and len(ops) == 6, ops
    assert not any(o in sum(ops, []) for o in ("concatenate", "neg", "transpose", "slice")), ops
    assert 'rope = true' in c.ir and 'layout = "bshd"' in c.ir and "q_heads = [0, 4]" in c.ir
    assert "v_heads = [8, 12]" in c.ir
    assert all(p.printable for p in c.kernels), [str(p.error) for p in c.kernels]
    # every boundary has its reason: the next kernel's matmul or attention reads the result from GM
    reasons = [(k.reason_code, k.reason) for k in c.report().kernels]
    assert all(code and "after it, which the Matmul API reads from GM" in text for code, text in reasons[:-1]), reasons
    np.testing.assert_allclose(m(x.numpy()), block(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_rope_read_elsewhere_is_not_folded_and_head_size_40_says_why_it_does_not_print():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 6, 40)).astype(np.float32) for _ in range(3))
    cos, sin = tables(rng, 6, 40, np.float32)
    want = torch_rope_sdpa(q, k, v, cos, sin, True)

    def kept(q, k, v, cos, sin):
        rq = fs.rope(q, cos, sin)
        return fs.attention(rq, fs.rope(k, cos, sin), v, causal=True), rq

    c = fs.fused_kernel(kept, target="ascend910b").compile(q, k, v, cos, sin)
    assert "rope = true" not in c.ir
    off = fs.fused_kernel(roped, disable_passes=["attention-rope"]).compile(q, k, v, cos, sin)
    assert "rope = true" not in off.ir and len(off.kernels) > 1
    np.testing.assert_allclose(c(q, k, v, cos, sin)[0], want, rtol=2e-5, atol=5e-6)

    def folded(q, k, v, cos, sin):
        return fs.attention(fs.rope(q, cos, sin), fs.rope(k, cos, sin), v, causal=True)   # LINE-MARK rope40

    c = fs.fused_kernel(folded, target="ascend910b").compile(q, k, v, cos, sin)
    (plan,) = c.kernels
    assert not plan.printable and "multiples of 16, got 40" in str(plan.error)
    assert f"test_attention_rope.py:{marked_line(__file__, 'rope40')}" in str(plan.error)
    np.testing.assert_allclose(c(q, k, v, cos, sin), want, rtol=2e-5, atol=5e-6)   # the CPU runs it


def test_rope_inside_attention_exports_as_standard_onnx():
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort
    from fusedsl.importers.onnx_export import export_fused
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(3))
    cos, sin = tables(rng, 5, 8, np.float32)
    compiled = fs.fused_kernel(roped).compile(q, k, v, cos, sin)
    assert "rope = true" in compiled.ir
    session = ort.InferenceSession(export_fused(compiled, {}, None).SerializeToString())
    names = [i.name for i in session.get_inputs()]
    (got,) = session.run(None, dict(zip(names, (q, k, v, cos, sin))))
    np.testing.assert_allclose(got, torch_rope_sdpa(q, k, v, cos, sin, True), rtol=1e-5, atol=1e-6)


def test_q_k_v_sliced_from_one_projection_are_read_in_place_under_simulate():
    """attention-heads: q, k, v = qkv.split -> view(b, t, h, dh) -> transpose, rotated: the kernel
    reads the heads of qkv [B, T, 3H, dh] where they lie (q_heads/k_heads/v_heads), one kernel."""
    def t(x):
        return fs.transpose(x, (0, 2, 1, 3))

    def f(qkv, cos, sin):
        q, k, v = (t(fs.reshape(qkv[:, :, i * 64:(i + 1) * 64], (1, 40, 2, 32))) for i in range(3))
        return t(fs.attention(fs.rope(q, cos, sin), fs.rope(k, cos, sin), v, causal=True))

    rng = np.random.default_rng(5)
    qkv = rng.standard_normal((1, 40, 192)).astype(np.float16)
    cos, sin = tables(rng, 40, 32, np.float16)
    c = fs.fused_kernel(f, target="ascend910b").compile(qkv, cos, sin)
    assert [p.ops for p in c.kernels] == [["attention"]] and "k_heads = [2, 4]" in c.ir
    q, k, v = (np.ascontiguousarray(qkv[:, :, i * 64:(i + 1) * 64].reshape(1, 40, 2, 32).transpose(0, 2, 1, 3))
               for i in range(3))
    want = torch_rope_sdpa(q, k, v, cos, sin, True).transpose(0, 2, 1, 3)
    for name, got in (("simulate", c.simulate(qkv, cos, sin)), ("cpu", c(qkv, cos, sin))):
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=5e-3, err_msg=name)


@fuzz_settings(0.02)
@given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 20), st.sampled_from([2, 8, 16, 40]),
       st.booleans(), st.booleans(), st.sampled_from([np.float32, np.float16]), st.integers(0, 2**16))
def test_rope_attention_on_every_cpu_executor_agrees_with_torch(b, hkv, group, s, d, causal, per_position, dtype,
                                                                seed):
    """Sizes 1, odd lengths, GQA, a table per position or one row for all, float16/float32: the
    folded op (rope = true) on the reference and the LLVM executor against torch."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, hkv * group, s, d)).astype(dtype)
    k, v = (rng.standard_normal((b, hkv, s, d)).astype(dtype) for _ in range(2))
    cos, sin = (rng.standard_normal((s if per_position else 1, d)).astype(dtype) for _ in range(2))

    def f(q, k, v, cos, sin):
        return fs.attention(fs.rope(q, cos, sin), fs.rope(k, cos, sin), v, causal=causal)

    c = fs.fused_kernel(f).compile(q, k, v, cos, sin)
    assert "rope = true" in c.ir and [p.ops for p in c.kernels] == [["attention"]]
    want = torch_rope_sdpa(q, k, v, cos, sin, causal)
    tol = 2e-5 if dtype == np.float32 else 1e-2
    for executor in ("reference", "llvm"):
        fs.config.executor, old = executor, fs.config.executor
        try:
            got = c(q, k, v, cos, sin)
        finally:
            fs.config.executor = old
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol, err_msg=executor)
