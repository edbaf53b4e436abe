// fusedsl CPU implementation of the Ascend C sort and transpose instructions (asc-devkit docs,
// 排序组合 / 数据排布转换): Sort32, MrgSort (four sorted lists), Transpose (16 x 16 and
// NCHW -> NHWC), TransDataTo5HD.
//
// Sort32 and MrgSort work on 8-byte (score, index) records: the score in the low bytes (float: 4 B,
// half: 2 B and 2 reserved bytes) and the uint32 index in the high 4 B.  Both sort by descending
// score; equal scores keep their input order (Sort32: the lower position first; MrgSort: the
// earlier list first).  Sort32 and MrgSort exist on A2/A3 (910B) only, not on 310P or 910A.
#pragma once

#include <algorithm>
#include <vector>

#include "kernel_utils.h"

namespace fusedsl_cpu {

inline void CheckSortChip(const char* api) {
    if (!Target().separated) {
        Fail("%s is not available on %s (A2/A3 products only)", api, Target().name);
    }
}

template <typename T>
inline void CheckSortType(const char* api) {
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Sort32/MrgSort take half or float scores");
    (void)api;
}

template <typename T>
struct SortRecord {
    Compute<T> score;
    uint32_t index;
    uint8_t bytes[8];   // the record as stored, copied whole so reserved bytes travel with it
};

template <typename T>
inline SortRecord<T> LoadRecord(const uint8_t* p) {
    SortRecord<T> r;
    std::memcpy(r.bytes, p, 8);
    T s;
    std::memcpy(&s, p, sizeof(T));
    r.score = static_cast<Compute<T>>(s);
    std::memcpy(&r.index, p + 4, 4);
    return r;
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T>
inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                   const int32_t repeatTime) {
    using namespace fusedsl_cpu;
    const char* api = "Sort32";
    CheckSortChip(api);
    CheckSortType<T>(api);
    if (repeatTime < 0 || repeatTime > 255) {
        Fail("%s: repeatTime = %d; it must be in [0, 255]", api, repeatTime);
    }
    if (repeatTime == 0) {
        return;   // a NOP on A2/A3
    }
    uint64_t n = 32ull * repeatTime;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), n * 8, sizeof(T));
    uint32_t s0 = CheckUb(api, "src0", src0.fs_addr, src0.GetLength(), n * sizeof(T), sizeof(T));
    uint32_t s1 = CheckUb(api, "src1", src1.fs_addr, src1.GetLength(), n * 4, 4);
    if (d % 256 != 0 || s0 % (32 * sizeof(T)) != 0 || s1 % 128 != 0) {
        Fail("%s: each repeat needs dst 256-byte, src0 %u-byte and src1 128-byte aligned; the offsets are %u, %u "
             "and %u", api, static_cast<unsigned>(32 * sizeof(T)), d, s0, s1);
    }
    CheckWritten(api, "src0", s0, n * sizeof(T));
    CheckWritten(api, "src1", s1, n * 4);
    uint8_t* ub = CurCore().ub.data();
    for (int32_t r = 0; r < repeatTime; ++r) {
        std::vector<std::pair<Compute<T>, uint32_t>> recs(32);
        for (uint32_t i = 0; i < 32; ++i) {
            T s;
            std::memcpy(&s, ub + s0 + (r * 32 + i) * sizeof(T), sizeof(T));
            uint32_t idx;
            std::memcpy(&idx, ub + s1 + (r * 32 + i) * 4, 4);
            recs[i] = {static_cast<Compute<T>>(s), idx};
        }
        std::stable_sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (uint32_t i = 0; i < 32; ++i) {
            uint8_t* o = ub + d + (r * 32 + i) * 8;
            std::memset(o, 0, 8);
            T s = FromCompute<T>(recs[i].first);
            std::memcpy(o, &s, sizeof(T));
            std::memcpy(o + 4, &recs[i].second, 4);
        }
    }
    MarkWritten(d, n * 8);
    CountVector(n * 8);
}

// MrgSort's sources: up to four sorted record lists.
template <typename T>
struct MrgSortSrcList {
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

// elementLengths: records per list; validBit: which lists take part (0b0011, 0b0111, 0b1111);
// ifExhaustedSuspension: stop as soon as one list runs out; repeatTimes: repeat r merges the
// lists that follow the previous repeat's (all four lists consecutive and of equal length).
struct MrgSort4Info {
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint16_t repeatTimes = 1;
};

template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& p) {
    using namespace fusedsl_cpu;
    const char* api = "MrgSort";
    CheckSortChip(api);
    CheckSortType<T>(api);
    int lists = p.validBit == 0b0011 ? 2 : p.validBit == 0b0111 ? 3 : p.validBit == 0b1111 ? 4 : 0;
    if (lists == 0) {
        Fail("%s: validBit = %u; it must be 0b0011, 0b0111 or 0b1111 (2, 3 or 4 lists)", api, p.validBit);
    }
    if (p.repeatTimes == 0 || p.repeatTimes > 255) {
        Fail("%s: repeatTimes = %u; it must be in [1, 255]", api, p.repeatTimes);
    }
    const LocalTensor<T>* srcs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    uint64_t total = 0;
    for (int i = 0; i < lists; ++i) {
        total += p.elementLengths[i];
    }
    if (p.repeatTimes > 1) {
        for (int i = 1; i < lists; ++i) {
            if (p.elementLengths[i] != p.elementLengths[0] ||
                reinterpret_cast<const uint8_t*>(srcs[i]->fs_addr) !=
                    reinterpret_cast<const uint8_t*>(srcs[0]->fs_addr) + i * p.elementLengths[0] * 8ull) {
                Fail("%s: repeatTimes = %u needs the %d lists consecutive and of equal length (list %d is not)", api,
                     p.repeatTimes, lists, i + 1);
            }
        }
    }
    uint64_t out_bytes = total * 8 * p.repeatTimes;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), out_bytes, sizeof(T));
    uint32_t s[4] = {};
    for (int i = 0; i < lists; ++i) {
        uint64_t need = (p.elementLengths[i] + (p.repeatTimes - 1) * total) * 8;
        s[i] = CheckUb(api, i == 0 ? "src1" : i == 1 ? "src2" : i == 2 ? "src3" : "src4", srcs[i]->fs_addr,
                       srcs[i]->GetLength(), need, sizeof(T));
    }
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out;
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        uint64_t pos[4] = {};
        uint64_t base = r * total * 8;
        for (int i = 0; i < lists; ++i) {
            CheckWritten(api, "a source list", static_cast<uint32_t>(s[i] + base), p.elementLengths[i] * 8ull);
        }
        while (true) {
            int best = -1;
            Compute<T> best_score{};
            bool exhausted = false;
            for (int i = 0; i < lists; ++i) {
                if (pos[i] >= p.elementLengths[i]) {
                    exhausted = true;
                    continue;
                }
                SortRecord<T> rec = LoadRecord<T>(ub + s[i] + base + pos[i] * 8);
                if (best < 0 || rec.score > best_score) {
                    best = i;
                    best_score = rec.score;
                }
            }
            if (best < 0 || (exhausted && p.ifExhaustedSuspension)) {
                break;
            }
            const uint8_t* rec = ub + s[best] + base + pos[best] * 8;
            out.insert(out.end(), rec, rec + 8);
            pos[best] += 1;
        }
    }
    std::memcpy(ub + d, out.data(), out.size());
    MarkWritten(d, out.size());
    CountVector(out.size());
}

// Transpose(dst, src): one 16 x 16 matrix of a 2-byte type.
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
    using namespace fusedsl_cpu;
    const char* api = "Transpose";
    static_assert(sizeof(T) == 2, "Transpose(dst, src) transposes a 16 x 16 matrix of uint16_t/int16_t/half");
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), 512, sizeof(T));
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 512, sizeof(T));
    CheckOverlap(api, "src", d, 512, s, 512);
    CheckWritten(api, "src", s, 512);
    uint8_t* ub = CurCore().ub.data();
    uint8_t tmp[512];
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            std::memcpy(tmp + (c * 16 + r) * 2, ub + s + (r * 16 + c) * 2, 2);
        }
    }
    std::memcpy(ub + d, tmp, 512);
    MarkWritten(d, 512);
    CountVector(512);
}

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE = 0,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
};

struct TransposeParamsExt {
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

// The enhanced form: [N, C, H, W] <-> [N, H, W, C] (TRANSPOSE_NCHW2NHWC / NHWC2NCHW) with a
// scratch buffer; other transposeTypes are not modelled.
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& p) {
    using namespace fusedsl_cpu;
    const char* api = "Transpose(TransposeParamsExt)";
    bool to_nhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    if (!to_nhwc && p.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW) {
        Fail("%s: transposeType %d is not modelled (NCHW2NHWC and NHWC2NCHW are)", api,
             static_cast<int>(p.transposeType));
    }
    uint64_t n = static_cast<uint64_t>(p.nSize) * p.cSize * p.hSize * p.wSize;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), n * sizeof(T), sizeof(T));
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), n * sizeof(T), sizeof(T));
    CheckUb(api, "sharedTmpBuffer", sharedTmpBuffer.fs_addr, sharedTmpBuffer.GetLength(), 0, 1);
    CheckOverlap(api, "src", d, n * sizeof(T), s, n * sizeof(T));
    CheckWritten(api, "src", s, n * sizeof(T));
    std::vector<T> out(n);
    const T* in = src.fs_addr;
    uint64_t C = p.cSize, HW = static_cast<uint64_t>(p.hSize) * p.wSize;
    for (uint64_t b = 0; b < p.nSize; ++b) {
        for (uint64_t c = 0; c < C; ++c) {
            for (uint64_t x = 0; x < HW; ++x) {
                if (to_nhwc) {
                    out[b * C * HW + x * C + c] = in[b * C * HW + c * HW + x];
                } else {
                    out[b * C * HW + c * HW + x] = in[b * C * HW + x * C + c];
                }
            }
        }
    }
    std::memcpy(static_cast<void*>(dst.fs_addr), out.data(), n * sizeof(T));
    MarkWritten(d, n * sizeof(T));
    CountVector(n * sizeof(T));
}

struct TransDataTo5HDParams {
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

// TransDataTo5HD with address lists (UB byte offsets, GetPhyAddr): for 2-byte types each repeat
// reads 16 blocks of 16 elements (block i at srcList[i] + r * srcRepStride blocks) and writes
// element j of block i to element i of dst block j: a 16 x 16 transpose.
template <typename T>
inline void TransDataTo5HD(const uint64_t dstList[16], const uint64_t srcList[16], const TransDataTo5HDParams& p) {
    using namespace fusedsl_cpu;
    const char* api = "TransDataTo5HD";
    static_assert(sizeof(T) == 2, "fusedsl models TransDataTo5HD for 2-byte types");
    Core& c = CurCore();
    uint8_t tmp[512];
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        for (int i = 0; i < 16; ++i) {
            uint64_t off = srcList[i] + static_cast<uint64_t>(r) * p.srcRepStride * 32;
            CheckUb(api, "a src block", c.ub.data() + std::min<uint64_t>(off, c.ub_bytes), 32, 32, sizeof(T));
            CheckWritten(api, "a src block", static_cast<uint32_t>(off), 32);
            for (int j = 0; j < 16; ++j) {
                std::memcpy(tmp + (j * 16 + i) * 2, c.ub.data() + off + j * 2, 2);
            }
        }
        for (int j = 0; j < 16; ++j) {
            uint64_t off = dstList[j] + static_cast<uint64_t>(r) * p.dstRepStride * 32;
            CheckUb(api, "a dst block", c.ub.data() + std::min<uint64_t>(off, c.ub_bytes), 32, 32, sizeof(T));
            std::memcpy(c.ub.data() + off, tmp + j * 32, 32);
            MarkWritten(static_cast<uint32_t>(off), 32);
        }
    }
    CountVector(512ull * p.repeatTimes);
}

}  // namespace AscendC
