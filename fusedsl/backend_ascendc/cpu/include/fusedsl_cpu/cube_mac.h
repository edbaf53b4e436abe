// The cube model's multiply-accumulate: acc[tm x tn] += a[tm x k] x b[k x tn] (row-major), every element
// summing its K products in order, each product and each sum rounded as the scalar loop rounds them (no
// fused multiply-add, no reassociation).  Used by Mmad (cube.h) and the Matmul API (matmul.h).
//
// Why the blocked loops: the cube samples multiply up to 8192 x 8192 x 8192 (5.5e11 products); the plain
// four-row loop reloads and stores its accumulators for every k and ran at 19 GFLOP/s.  Blocks of 4 rows x
// 2 vectors keep their accumulators in registers for the whole K loop; on x86 CPUs with AVX2 / AVX-512
// (checked at run time, GCC's target attribute) the vectors are 8 / 16 floats wide.  A block's elements
// are independent, so the result is bit for bit the scalar loop's.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base.h"

namespace fusedsl_cpu {

// acc[i, j] += a[i, kk] * b[kk, j] for i in [i0, i1), j in [j0, j1), kk in order.
template <typename Acc>
FUSEDSL_CPU_HOT inline void AccumulatePart(Acc* __restrict acc, const Acc* __restrict a, const Acc* __restrict b,
                                           int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k, int64_t tn) {
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {   // four rows share each load of b's row
        Acc* __restrict r0 = acc + i * tn;
        Acc* __restrict r1 = r0 + tn;
        Acc* __restrict r2 = r1 + tn;
        Acc* __restrict r3 = r2 + tn;
        const Acc* a0 = a + i * k;
        for (int64_t kk = 0; kk < k; ++kk) {
            const Acc v0 = a0[kk], v1 = a0[k + kk], v2 = a0[2 * k + kk], v3 = a0[3 * k + kk];
            const Acc* __restrict brow = b + kk * tn;
            for (int64_t j = j0; j < j1; ++j) {
                const Acc bj = brow[j];
                r0[j] += v0 * bj;
                r1[j] += v1 * bj;
                r2[j] += v2 * bj;
                r3[j] += v3 * bj;
            }
        }
    }
    for (; i < i1; ++i) {
        Acc* row = acc + i * tn;
        for (int64_t kk = 0; kk < k; ++kk) {
            const Acc av = a[i * k + kk];
            const Acc* brow = b + kk * tn;
            for (int64_t j = j0; j < j1; ++j) {
                row[j] += av * brow[j];
            }
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FUSEDSL_CPU_WIDE_MAC 1

// One width of the blocked float loop: rows [0, tm / R * R) x columns [0, tn / (2 W) * 2 W) in blocks of
// R x 2W held in 2R W-float vectors (R = 8 with AVX-512's 32 vector registers, 4 with AVX2's 16), K in chunks of kKc (the block's accumulators are stored between chunks,
// which rounds nothing: a float stays the float it is), so a chunk of b's column strip stays in L1 while
// the row blocks pass over it.  Returns the columns it covered.  Loads and stores go through memcpy
// (unaligned).  `V` is a GCC vector of W floats.
constexpr int64_t kMacKc = 128;
#define FUSEDSL_CPU_MAC_BLOCKS(V, W, kMacRows)                                                                 \
    const int64_t cols = tn / (2 * (W)) * (2 * (W));                                                           \
    const int64_t rows = tm / kMacRows * kMacRows;                                                             \
    for (int64_t k0 = 0; k0 < k; k0 += kMacKc) {                                                               \
        const int64_t k1 = k0 + kMacKc < k ? k0 + kMacKc : k;                                                  \
        for (int64_t j = 0; j < cols; j += 2 * (W)) {                                                          \
            for (int64_t i = 0; i < rows; i += kMacRows) {                                                     \
                const float* ar = a + i * k;                                                                   \
                V c[kMacRows][2];                                                                              \
                for (int r = 0; r < kMacRows; ++r) {                                                           \
                    std::memcpy(&c[r][0], acc + (i + r) * tn + j, sizeof(V));                                  \
                    std::memcpy(&c[r][1], acc + (i + r) * tn + j + (W), sizeof(V));                            \
                }                                                                                              \
                for (int64_t kk = k0; kk < k1; ++kk) {                                                         \
                    V b0, b1;                                                                                  \
                    std::memcpy(&b0, b + kk * tn + j, sizeof(V));                                              \
                    std::memcpy(&b1, b + kk * tn + j + (W), sizeof(V));                                        \
                    for (int r = 0; r < kMacRows; ++r) {                                                       \
                        const float av = ar[r * k + kk];                                                       \
                        const V p0 = av * b0, p1 = av * b1;                                                    \
                        c[r][0] += p0;                                                                         \
                        c[r][1] += p1;                                                                         \
                    }                                                                                          \
                }                                                                                              \
                for (int r = 0; r < kMacRows; ++r) {                                                           \
                    std::memcpy(acc + (i + r) * tn + j, &c[r][0], sizeof(V));                                  \
                    std::memcpy(acc + (i + r) * tn + j + (W), &c[r][1], sizeof(V));                            \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
    }                                                                                                          \
    return rows > 0 ? cols : 0;

typedef float FusedslV16f __attribute__((vector_size(64)));
typedef float FusedslV8f __attribute__((vector_size(32)));

// No "fma" in the targets: a contracted multiply-add would round once where the scalar loop rounds twice.
__attribute__((target("avx512f"), optimize("O3", "fp-contract=off"))) inline int64_t MacBlocksAvx512(
    float* __restrict acc, const float* __restrict a, const float* __restrict b, int64_t tm, int64_t k, int64_t tn) {
    FUSEDSL_CPU_MAC_BLOCKS(FusedslV16f, 16, 8)
}

__attribute__((target("avx2"), optimize("O3", "fp-contract=off"))) inline int64_t MacBlocksAvx2(
    float* __restrict acc, const float* __restrict a, const float* __restrict b, int64_t tm, int64_t k, int64_t tn) {
    FUSEDSL_CPU_MAC_BLOCKS(FusedslV8f, 8, 4)
}

#undef FUSEDSL_CPU_MAC_BLOCKS

// 2: AVX-512F, 1: AVX2, 0: neither (the portable loop only); FUSEDSL_CPU_MAC=plain forces 0, =avx2 at most 1.  The rows
// each level's blocks take: MacRows(level).
inline int MacLevel() {
    static const int level = [] {
        const char* force = std::getenv("FUSEDSL_CPU_MAC");
        const bool plain = force != nullptr && std::strcmp(force, "plain") == 0;
        const bool avx2_only = force != nullptr && std::strcmp(force, "avx2") == 0;
        __builtin_cpu_init();
        return plain ? 0 : __builtin_cpu_supports("avx512f") && !avx2_only ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    }();
    return level;
}

inline int64_t MacRows(int level) {
    return level == 2 ? 8 : 4;
}
#endif

template <typename Acc>
inline void AccumulateRows(Acc* __restrict acc, const Acc* __restrict a, const Acc* __restrict b, int64_t tm,
                           int64_t k, int64_t tn) {
    int64_t cols = 0, rows = 0;   // the columns of the first rows the blocked loop covered
#ifdef FUSEDSL_CPU_WIDE_MAC
    if constexpr (std::is_same_v<Acc, float>) {
        const int level = MacLevel();
        cols = level == 2 ? MacBlocksAvx512(acc, a, b, tm, k, tn) : level == 1 ? MacBlocksAvx2(acc, a, b, tm, k, tn) : 0;
        rows = cols > 0 ? tm / MacRows(level) * MacRows(level) : 0;
    }
#endif
    if (cols < tn) {
        AccumulatePart(acc, a, b, 0, rows, cols, tn, k, tn);
    }
    AccumulatePart(acc, a, b, rows, tm, 0, tn, k, tn);
}

}  // namespace fusedsl_cpu
