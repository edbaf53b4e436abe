// Scratch sizes of the high-level APIs: one formula per API, used by the host helpers
// (tiling/adv_tiling.h: GetXxxMaxMinTmpSize) and by the kernel-side check that the scratch a
// call gets is at least the minimum (adv_common.h).  The figures are the ones CANN's host
// helpers report (asc-devkit's tiling sources): a count of float- or T-sized temporary tensors
// ("live nodes") of the input's size, each at least one 256-byte repeat.  Plain functions of
// (element count, type size): no kernel state, so host code can include this alone.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fusedsl_cpu {
namespace adv {

struct TmpRange {
    uint64_t min = 0;
    uint64_t max = 0;
};

constexpr uint64_t kRepeat = 256;

// `nodes` temporaries of the input's byte size, at least one repeat each.
inline TmpRange Nodes(uint32_t nodes, uint64_t n, uint32_t type_size) {
    return {nodes * kRepeat, nodes * std::max<uint64_t>(n * type_size, kRepeat)};
}

inline bool IsFloat(uint32_t type_size) {
    return type_size == 4;
}

inline TmpRange Acosh(uint64_t n, uint32_t ts) {
    uint64_t nodes = IsFloat(ts) ? 1 : 2;
    return {nodes * kRepeat, std::max<uint64_t>(nodes * n, kRepeat) * ts};
}
inline TmpRange Ceil(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 1 : 2, n, ts); }
inline TmpRange Floor(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 1 : 2, n, ts); }
inline TmpRange Trunc(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 1 : 2, n, ts); }
inline TmpRange Frac(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 0 : 4, n, ts); }
inline TmpRange Erf(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 3 : 8, n, ts); }
inline TmpRange Fmod(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 1 : 8, n, ts); }
inline TmpRange Xor(uint64_t n, uint32_t ts) {
    return {kRepeat, std::max<uint64_t>(n * ts, kRepeat)};
}
// Exp keeps float temporaries whatever T is: 4 for half, 3 for float (2 when src may be reused).
inline TmpRange Exp(uint64_t n, uint32_t ts, bool reuse) {
    uint64_t nodes = IsFloat(ts) ? (reuse ? 2 : 3) : 4;
    return {nodes * kRepeat, nodes * std::max<uint64_t>(n * 4, kRepeat)};
}
inline TmpRange Log(uint64_t, uint32_t) { return {0, 0}; }
inline TmpRange Log2(uint64_t n, uint32_t ts) {
    return IsFloat(ts) ? TmpRange{0, 0} : TmpRange{kRepeat, std::max<uint64_t>(n * 4, kRepeat)};
}
// Clamp's scratch is a byte mask per element, at least one repeat's worth of elements.
inline TmpRange Clamp(uint64_t n, uint32_t ts) {
    uint64_t lanes = IsFloat(ts) ? 64 : 128;
    return {lanes, std::max<uint64_t>(n, lanes)};
}
// Axpy: float needs none; half converts to float (4 half-sized temporaries).
inline TmpRange Axpy(uint64_t n, uint32_t ts) {
    if (IsFloat(ts)) {
        return {0, 0};
    }
    return {4 * kRepeat, n * ts > kRepeat ? 4 * n * ts : 4 * kRepeat};
}

// Power: temporaries differ between 910B-class (2201) and 310P (2002) chips, and between
// tensor^tensor and the forms with a scalar.
inline TmpRange Power(int arch, uint64_t n, bool tensor_tensor, bool is_int, uint32_t ts) {
    bool v200 = arch == 2002;
    uint64_t half_p = v200 ? 16 : 14;
    uint64_t int_p = tensor_tensor ? (v200 ? 7 : 6) : (v200 ? 8 : 7);
    uint64_t float_p = tensor_tensor ? (v200 ? 5 : 4) : (v200 ? 6 : 5);
    uint64_t per = IsFloat(ts) || is_int ? std::max<uint64_t>(n * ts, kRepeat) : std::max<uint64_t>(n * ts, kRepeat / 2);
    if (is_int) {
        return {kRepeat * int_p, per * int_p};
    }
    if (IsFloat(ts)) {
        return {kRepeat * float_p + kRepeat, per * float_p + kRepeat};
    }
    return {kRepeat * half_p / 2 + kRepeat, per * half_p + kRepeat};
}

// CumSum over [outer, inner] (inner 32-byte aligned): along the last axis it transposes
// 16-row groups twice (half also converts the sum to float); along the first axis only half
// needs float rows.
inline TmpRange CumSum(uint64_t outer, uint64_t inner, uint32_t ts, bool last_axis) {
    if (!last_axis) {
        uint64_t v = IsFloat(ts) ? 0 : outer * inner * 4;
        return {v, v};
    }
    uint64_t outer16 = (outer + 15) / 16 * 16;
    uint64_t cast_min = IsFloat(ts) ? 0 : inner * 16 * 2;
    uint64_t cast_max = IsFloat(ts) ? 0 : inner * outer16 * 2;
    return {cast_min + 16 * inner * ts * 2, cast_max + outer16 * inner * ts * 2};
}

// Sum: one partial sum per 256-byte repeat of a row of n elements, in whole 32-byte blocks.
inline uint64_t SumBytes(uint64_t n, uint32_t ts) {
    uint64_t per_blk = 32 / ts;
    uint64_t repeats = (n * ts + kRepeat - 1) / kRepeat;
    return (repeats + per_blk - 1) / per_blk * per_blk * ts;
}

// ---- activations ----
// Gelu: 3 float temporaries.
inline TmpRange Gelu(uint64_t n, uint32_t) {
    return {3 * kRepeat, std::max<uint64_t>(3 * kRepeat, 3 * n * 4)};
}
inline TmpRange Sigmoid(uint64_t n, uint32_t ts) {
    return {kRepeat, std::max<uint64_t>(n * ts, kRepeat)};
}
inline TmpRange None(uint64_t, uint32_t) { return {0, 0}; }
// SwiGLU / GeGLU: float needs none; half works in float (6 / 4 half-sized temporaries).
inline TmpRange SwiGLU(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 0 : 6, n, ts); }
inline TmpRange GeGLU(uint64_t n, uint32_t ts) { return Nodes(IsFloat(ts) ? 0 : 4, n, ts); }

// ---- SoftMax family (910B/310P: the API works a group of rows at a time; one row's temporaries
// are the minimum).  epb = elements of the reduce type in a 32-byte block. ----
inline uint64_t SoftMaxRowMin(uint64_t k, uint32_t ts) {
    return (32 / ts + k + 64) * 4;
}
inline uint64_t SoftMaxGradRowMin(uint64_t k, uint32_t ts, bool front) {
    uint64_t epb = 32 / ts;
    if (!IsFloat(ts)) {
        return (epb * 2 + k * 3 + 64) * 4;
    }
    return (front ? epb + k + 64 : epb * 2 + k + 64) * 4;
}
inline uint64_t SoftMaxFlashV2Min(uint64_t k, uint32_t ts1, uint32_t ts2, bool basic_block) {
    uint64_t epb = 32 / ts2;
    uint64_t unit = k == 1024 ? 128 : 64;
    uint64_t n;
    if (basic_block && k % 64 == 0) {
        n = IsFloat(ts1) ? 8 * (epb + unit) : 8 * (epb + k + unit);
    } else {
        n = IsFloat(ts1) ? epb + 64 : epb * 2 + k + 64;
    }
    return n * 4;
}

// SoftmaxFlashV3 (fusedsl's own model: CANN documents no formula): the page's pseudo-code keeps a
// 64-float partial-sum row and the row in float, plus one 32-byte block per statistic, per row.
inline uint64_t SoftMaxFlashV3Min(uint64_t k) {
    return (64 + k + 4 * 8) * 4;
}

// ---- Broadcast [m, 1] -> [m, k] (910B/310P): one block per element (Brcb), a block-aligned copy
// of a row when k is not block aligned; int8 works in half (casts of source and result). ----
inline TmpRange BroadcastRows(uint64_t m, uint64_t k, uint32_t ts) {
    uint64_t cast = 0;
    if (ts == 1) {
        ts = 2;
        cast = ((m + 15) / 16 * 16 + (m * k + 15) / 16 * 16) * 2;
    }
    uint64_t epb = 32 / ts;
    uint64_t brcb_min = epb * epb * ts;
    uint64_t brcb_max = (m + 7) / 8 * 8 * epb * ts;
    if (k % epb == 0) {
        return {brcb_min + cast, brcb_max + cast};
    }
    uint64_t k_align = (k + epb - 1) / epb * epb;
    return {brcb_min + epb * k_align * ts + cast, brcb_max + m * k_align * ts + cast};
}

// ---- normalisation ----
// RmsNorm: one float row of H (two for half) and a block of per-row values.
inline uint64_t RmsNormRowMin(uint64_t h, uint32_t ts) {
    return (IsFloat(ts) ? h + 8 : 2 * h + 8) * 4;
}
// DeepNorm: float rows of H (3, or 2 reusing a float source) and two float [B*S] vectors, each
// rounded up to 32 bytes; the maximum holds whole [B, S, H] tensors instead of rows.
inline TmpRange DeepNorm(uint64_t bs, uint64_t h, uint32_t ts, bool reuse) {
    uint64_t k = (reuse && IsFloat(ts)) ? 2 : 3;
    uint64_t bsb = (bs * 4 + 31) / 32 * 32;
    return {k * ((h * 4 + 31) / 32 * 32) + 2 * bsb, k * ((bs * h * 4 + 31) / 32 * 32) + 2 * bsb};
}

// LayerNorm over [B, S, H]: the DeepNorm rule (DeepNorm is a LayerNorm of alpha * x + gx).
inline TmpRange LayerNorm(uint64_t bs, uint64_t h, uint32_t ts, bool reuse) { return DeepNorm(bs, h, ts, reuse); }
inline uint64_t Align32(uint64_t bytes) { return (bytes + 31) / 32 * 32; }
// LayerNormGrad and LayerNormGradBeta (fusedsl's own figures): float rows of H for the per-row
// temporaries (pd_var, pd_mean, x - mean and two more; 2 for the beta sums, doubled for half
// sources that are widened first) and two [B*S] vectors; the maximum holds whole tensors.
inline TmpRange LayerNormGrad(uint64_t bs, uint64_t h, uint32_t ts) {
    uint64_t k = IsFloat(ts) ? 5 : 7;
    uint64_t bsb = Align32(bs * 4);
    return {k * Align32(h * 4) + 2 * bsb, k * Align32(bs * h * 4) + 2 * bsb};
}
inline TmpRange LayerNormGradBeta(uint64_t bs, uint64_t h, uint32_t ts) {
    uint64_t k = IsFloat(ts) ? 2 : 4;
    return {k * Align32(h * 4), k * Align32(bs * h * 4)};
}
// LayerNorm over [A, R] with rstd (rPad: R rounded up to 32 bytes of T): two float rows and the
// [A] statistics, at least Normalize's minimum plus those statistics.
inline TmpRange Normalize(uint64_t a, uint64_t r_pad, uint32_t ts_u) {
    uint64_t rb = Align32(r_pad * 4);
    uint64_t ab = Align32(a * 4);
    uint64_t nr = (IsFloat(ts_u) ? 2 : 4) * rb;
    uint64_t a_pad = (a + 7) / 8 * 8;
    return {std::max(ab, nr), 2 * rb + 2 * Align32(a_pad * r_pad * 4)};
}
inline TmpRange LayerNormRstd(uint64_t a, uint64_t r_pad, uint32_t ts) {
    uint64_t mv = Align32(a * 4);
    TmpRange norm = Normalize(a, r_pad, ts);
    uint64_t mn = 2 * Align32(r_pad * 4) + mv;
    uint64_t mx = 2 * Align32(a * r_pad * 4) + mv;
    return {std::max(mn, norm.min + mv), std::max(mx, norm.max + mv)};
}
// WelfordUpdate: 256-byte repeats of float temporaries (3 for half x, 1 reusing a float source,
// else 2); the maximum one set per repeat of the [rn, ab] input.
inline TmpRange WelfordUpdate(uint64_t n, uint32_t ts, bool reuse) {
    uint64_t k = !IsFloat(ts) ? 3 : (reuse ? 1 : 2);
    return {k * kRepeat, (n + 63) / 64 * k * kRepeat};
}
// WelfordFinalize: four 64-float blocks (mean and variance, computing and storing).
inline TmpRange WelfordFinalize(uint64_t ab) {
    uint64_t mn = 64 * 4 * 4;
    return {mn, ab <= 64 ? mn : (64 * 2 + ab * 2) * 4};
}

// ReduceMax / ReduceMin over [first, last] (the API's host helper rules): none reusing the source;
// AR: nothing for a last axis within a 32-byte block, else one block (a repeat from 256 bytes on)
// per row; RA: k rows of the 32-byte padded last axis, k the largest power of two below first.
inline TmpRange PatternReduce(uint64_t first, uint64_t last, uint32_t ts, bool ra, bool reuse) {
    if (reuse) {
        return {0, 0};
    }
    uint64_t v;
    if (!ra) {
        uint64_t blk = 32 / ts, rep = 256 / ts;
        v = last <= blk ? 0 : last < rep ? first * blk * ts : first * rep * ts;
    } else {
        uint64_t k = 1;
        while (k * 2 <= first) {
            k *= 2;
        }
        if (k == first && first > 1) {
            k /= 2;
        }
        v = k * ((last * ts + 31) / 32 * 32);
    }
    return {v, v};
}

// TopK over [outter, inner] (the API's host helper rules).  A2/A3: normal mode 16 bytes per inner
// element (+4 generating the indices); small mode 8 bytes per element for Sort32, a 64-byte mask
// block, +4 per element negating for the smallest and +4 generating the indices.  310P: two
// region-proposal copies (8 elements each) per element (+4 for the indices in normal mode).
inline TmpRange TopK(uint64_t inner, uint64_t outter, bool small, bool init_index, bool largest, uint32_t ts,
                     bool proposals) {
    uint64_t v;
    if (proposals) {
        v = small ? inner * outter * 8 * ts * 2 : inner * 8 * ts * 2 + inner * 4;
    } else if (!small) {
        v = (init_index ? 16 : 20) * inner;
    } else {
        uint64_t e = inner * outter;
        v = e * 8 + 64 + (largest ? 0 : e * 4) + (init_index ? 0 : e * 4);
    }
    return {v, v};
}

// ---- filters ----
// DropOut: two repeats; the maximum two float copies of the source.
inline TmpRange DropOut(uint64_t n) {
    return {2 * kRepeat, std::max<uint64_t>(2 * kRepeat, 2 * n * 4)};
}
// Select with a bytes mask: the source (at most a 4096-element block for the minimum) as half,
// 32-element padded, plus 512 bytes, at least 1024; plus a copy of the mask when its last axis
// differs from the source's and the mask may not be modified.
inline TmpRange SelectBytesMask(uint64_t src_size, bool mask_axis_differs, uint32_t mask_type, bool reuse_mask) {
    auto need = [&](uint64_t cal) {
        uint64_t v = std::max<uint64_t>(1024, (cal + 31) / 32 * 32 * 2 + 512);
        if (mask_axis_differs && !reuse_mask) {
            v += (src_size * mask_type + 31) / 32 * 32;
        }
        return v;
    };
    return {need(std::min<uint64_t>(src_size, 4096)), need(src_size)};
}

// ---- quantization ----
// AscendAntiQuant (src elements n, k = the source's first dimension, scale elements s): none for
// half output; for bfloat16 per channel two float copies of the scale plus 64 float columns of k
// rows (transposed: 8 + 8 + 64 float rows of the scale), per tensor one float copy of the source
// (at least 1024 bytes).
inline TmpRange AscendAntiQuant(uint64_t n, uint64_t k, uint64_t s, bool transpose, bool half_out) {
    if (half_out) {
        return {0, 0};
    }
    if (s > 1) {
        uint64_t v = transpose ? 80 * s * 4 : s * 2 * 4 + 64 * k * 4;
        return {v, v};
    }
    return {1024, n * 4};
}
// AscendQuant: two half-sized copies of the input, at least two repeats.
inline TmpRange AscendQuant(uint64_t n) {
    return {2 * kRepeat, (std::max<uint64_t>(2 * n, 2 * kRepeat) + 31) / 32 * 32};
}
// AscendDequant: float copies of one row (all rows for the maximum) and of the scales (n plus a
// block), plus one repeat of floats.
inline TmpRange AscendDequant(uint64_t outer, uint64_t inner) {
    uint64_t scales = inner + 8;
    return {(64 + inner + scales) * 4, (64 + outer * inner + scales) * 4};
}

}  // namespace adv
}  // namespace fusedsl_cpu
