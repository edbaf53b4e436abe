// fusedsl CPU implementation of the Ascend C sort and transpose instructions (asc-devkit docs,
// 排序组合 / 数据排布转换): Sort32, MrgSort (four sorted lists), the region proposal family (ProposalConcat,
// RpSort16, MrgSort4, ProposalExtract), Transpose (16 x 16 and NCHW -> NHWC), TransDataTo5HD.
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
                   const int32_t repeatTime, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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
    MrgSortSrcList() = default;
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In)
        : src1(src1In), src2(src2In), src3(src3In), src4(src4In) {}
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

// elementLengths: records per list; validBit: which lists take part (0b0011, 0b0111, 0b1111);
// ifExhaustedSuspension: stop as soon as one list runs out; repeatTimes: repeat r merges the
// lists that follow the previous repeat's (all four lists consecutive and of equal length).
struct MrgSort4Info {
    MrgSort4Info() = default;
    MrgSort4Info(const uint16_t elementLengthsIn[4], const bool ifExhaustedSuspensionIn, const uint16_t validBitIn,
                 const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn) {
        for (int i = 0; i < 4; ++i) {
            elementLengths[i] = elementLengthsIn[i];
        }
    }
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint16_t repeatTimes = 1;
};

template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& p, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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

// ---- Region Proposals (排序组合: ProposalConcat, RpSort16, MrgSort4, ProposalExtract) -------------------
// Atlas 训练系列 (910A: half) and 推理系列 AI Core (310P: half, float); A2/A3 sort (score, index) records with
// Sort32/MrgSort instead.  A region proposal is 8 elements [x1, y1, x2, y2, score, label, reserved, reserved]
// (16 bytes of half, 32 of float).  Each call checks what CANN's CPU debug mode checks (asc-tools
// kernel_vec_proposal_check.cpp): UB operands, 32-byte alignment (MrgSort4 half: 16), repeatTime in [0, 255],
// modeNumber in [0, 5], and that each tensor holds what the repeats read or write.

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
inline void CheckProposalChip(const char* api) {
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "region proposals are half or float");
    if (Target().separated) {
        Fail("%s is not available on %s (Atlas 训练系列 / 推理系列 AI Core only; A2/A3 sort with Sort32 and MrgSort)",
             api, Target().name);
    }
    if (std::is_same_v<T, float> && Target().arch == 1001) {
        Fail("%s: float region proposals are not supported on %s (half only)", api, Target().name);
    }
}

inline void CheckProposalRange(const char* api, const char* what, int32_t v, int32_t hi) {
    if (v < 0 || v > hi) {
        Fail("%s: %s = %d; it must be in [0, %d]", api, what, v, hi);
    }
}

constexpr uint32_t kProposalElems = 8;   // elements per region proposal
constexpr uint32_t kProposalsPerRepeat = 16;

}  // namespace fusedsl_cpu

namespace AscendC {

// ProposalConcat: per repeat, 16 consecutive src elements into field modeNumber of 16 consecutive proposals
// (the other fields untouched).
template <typename T>
inline void ProposalConcat(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t modeNumber, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "ProposalConcat";
    AtSite at(fs_site);
    CheckProposalChip<T>(api);
    CheckProposalRange(api, "repeatTime", repeatTime, 255);
    CheckProposalRange(api, "modeNumber", modeNumber, 5);
    const uint64_t n = static_cast<uint64_t>(repeatTime) * kProposalsPerRepeat;
    const uint32_t d = CheckUb(api, "dstLocal", dst.fs_addr, dst.GetLength(), n * kProposalElems * sizeof(T), sizeof(T));
    const uint32_t s = CheckUb(api, "srcLocal", src.fs_addr, src.GetLength(), n * sizeof(T), sizeof(T));
    CheckWritten(api, "srcLocal", s, n * sizeof(T));
    uint8_t* ub = CurCore().ub.data();
    for (uint64_t i = 0; i < n; ++i) {
        const uint32_t at_byte = d + static_cast<uint32_t>((i * kProposalElems + modeNumber) * sizeof(T));
        std::memmove(ub + at_byte, ub + s + i * sizeof(T), sizeof(T));
        MarkWritten(at_byte, sizeof(T));
    }
    CountVector(n * sizeof(T));
}

// ProposalExtract: the reverse — field modeNumber of 16 proposals per repeat into 16 consecutive elements.
template <typename T>
inline void ProposalExtract(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                            const int32_t modeNumber, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "ProposalExtract";
    AtSite at(fs_site);
    CheckProposalChip<T>(api);
    CheckProposalRange(api, "repeatTime", repeatTime, 255);
    CheckProposalRange(api, "modeNumber", modeNumber, 5);
    const uint64_t n = static_cast<uint64_t>(repeatTime) * kProposalsPerRepeat;
    const uint32_t s = CheckUb(api, "srcLocal", src.fs_addr, src.GetLength(), n * kProposalElems * sizeof(T), sizeof(T));
    const uint32_t d = CheckUb(api, "dstLocal", dst.fs_addr, dst.GetLength(), n * sizeof(T), sizeof(T));
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out(n * sizeof(T));
    for (uint64_t i = 0; i < n; ++i) {
        const uint32_t from = s + static_cast<uint32_t>((i * kProposalElems + modeNumber) * sizeof(T));
        CheckWritten(api, "srcLocal", from, sizeof(T));
        std::memcpy(out.data() + i * sizeof(T), ub + from, sizeof(T));
    }
    std::memcpy(ub + d, out.data(), out.size());
    MarkWritten(d, out.size());
    CountVector(out.size());
}

// RpSort16: each repeat sorts 16 proposals by score, largest first; equal scores keep their order.
template <typename T>
inline void RpSort16(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                     FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "RpSort16";
    AtSite at(fs_site);
    CheckProposalChip<T>(api);
    CheckProposalRange(api, "repeatTime", repeatTime, 255);
    constexpr uint32_t kBytes = kProposalElems * sizeof(T);
    const uint64_t n = static_cast<uint64_t>(repeatTime) * kProposalsPerRepeat;
    const uint32_t d = CheckUb(api, "dstLocal", dst.fs_addr, dst.GetLength(), n * kBytes, sizeof(T));
    const uint32_t s = CheckUb(api, "srcLocal", src.fs_addr, src.GetLength(), n * kBytes, sizeof(T));
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out(n * kBytes);
    for (uint64_t r = 0; r < static_cast<uint64_t>(repeatTime); ++r) {
        std::vector<std::pair<Compute<T>, uint32_t>> keys(kProposalsPerRepeat);
        for (uint32_t i = 0; i < kProposalsPerRepeat; ++i) {
            const uint32_t at_byte = s + static_cast<uint32_t>((r * kProposalsPerRepeat + i) * kBytes);
            CheckWritten(api, "srcLocal (score)", at_byte + 4 * sizeof(T), sizeof(T));
            T score;
            std::memcpy(&score, ub + at_byte + 4 * sizeof(T), sizeof(T));
            keys[i] = {static_cast<Compute<T>>(score), i};
        }
        std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (uint32_t i = 0; i < kProposalsPerRepeat; ++i) {
            std::memcpy(out.data() + (r * kProposalsPerRepeat + i) * kBytes,
                        ub + s + (r * kProposalsPerRepeat + keys[i].second) * kBytes, kBytes);
        }
    }
    std::memcpy(ub + d, out.data(), out.size());   // dst may be src (in place)
    MarkWritten(d, out.size());
    CountVector(out.size());
}

// MrgSort4: merges up to 4 score-sorted proposal lists (validBit 3, 7, 15) into one, largest score first; on equal
// scores the earlier list's proposal comes first.  ifExhaustedSuspension stops at the first exhausted list;
// repeatTimes applies only with 4 equal, consecutive lists, no suspension and validBit 15 (else 1).
template <typename T>
inline void MrgSort4(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& p,
                     FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "MrgSort4";
    AtSite at(fs_site);
    CheckProposalChip<T>(api);
    const int lists = p.validBit == 3 ? 2 : p.validBit == 7 ? 3 : p.validBit == 15 ? 4 : 0;
    if (lists == 0) {
        Fail("%s: validBit = %u; its valid values are 3, 7 and 15 (2, 3 or 4 lists)", api, p.validBit);
    }
    for (int i = 0; i < 4; ++i) {
        if (p.elementLengths[i] > 4095) {
            Fail("%s: elementLengths[%d] = %u; it must be in [0, 4095]", api, i, p.elementLengths[i]);
        }
    }
    constexpr uint32_t kBytes = kProposalElems * sizeof(T);
    const LocalTensor<T>* srcs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    uint64_t total = 0;
    for (int i = 0; i < lists; ++i) {
        total += p.elementLengths[i];
    }
    bool continuous = lists == 4;
    for (int i = 1; i < lists && continuous; ++i) {
        continuous = reinterpret_cast<const uint8_t*>(srcs[i]->fs_addr) ==
                     reinterpret_cast<const uint8_t*>(srcs[i - 1]->fs_addr) + p.elementLengths[i - 1] * kBytes;
    }
    const bool equal = p.elementLengths[0] == p.elementLengths[1] && p.elementLengths[1] == p.elementLengths[2] &&
                       p.elementLengths[2] == p.elementLengths[3];
    uint32_t repeats = 1;
    if (continuous && equal && !p.ifExhaustedSuspension && p.validBit == 15) {
        if (p.repeatTimes < 1 || p.repeatTimes > 255) {
            Fail("%s: repeatTimes = %u; it must be in [1, 255]", api, p.repeatTimes);
        }
        repeats = p.repeatTimes;
    }
    const uint32_t align = sizeof(T) == 2 ? 16 : 32;   // the MrgSort4 page: 16-byte aligned for half
    const uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(),
                               p.ifExhaustedSuspension ? 0 : total * kBytes * repeats, sizeof(T), false);
    uint32_t s[4] = {};
    for (int i = 0; i < lists; ++i) {
        const char* role = i == 0 ? "src1" : i == 1 ? "src2" : i == 2 ? "src3" : "src4";
        s[i] = CheckUb(api, role, srcs[i]->fs_addr, srcs[i]->GetLength(),
                       ((repeats - 1) * total + p.elementLengths[i]) * kBytes, sizeof(T), false);
        if (s[i] % align != 0) {
            Fail("%s: %s starts at UB offset %u, which is not %u-byte aligned", api, role, s[i], align);
        }
    }
    if (d % align != 0) {
        Fail("%s: dst starts at UB offset %u, which is not %u-byte aligned", api, d, align);
    }
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out;
    for (uint32_t r = 0; r < repeats; ++r) {
        const uint64_t base = static_cast<uint64_t>(r) * total * kBytes;
        uint64_t pos[4] = {};
        while (true) {
            int best = -1;
            Compute<T> best_score{};
            bool exhausted = false;
            for (int i = 0; i < lists; ++i) {
                if (pos[i] >= p.elementLengths[i]) {
                    exhausted = true;
                    continue;
                }
                const uint32_t at_byte = static_cast<uint32_t>(s[i] + base + pos[i] * kBytes);
                CheckWritten(api, "a source list", at_byte, kBytes);
                T score;
                std::memcpy(&score, ub + at_byte + 4 * sizeof(T), sizeof(T));
                if (best < 0 || static_cast<Compute<T>>(score) > best_score) {
                    best = i;
                    best_score = static_cast<Compute<T>>(score);
                }
            }
            if (best < 0 || (exhausted && p.ifExhaustedSuspension)) {
                break;
            }
            const uint8_t* rec = ub + s[best] + base + pos[best] * kBytes;
            out.insert(out.end(), rec, rec + kBytes);
            pos[best] += 1;
        }
    }
    if (out.size() > dst.GetLength()) {
        Fail("%s: dst needs %zu bytes but the LocalTensor has only %u", api, out.size(),
             static_cast<unsigned>(dst.GetLength()));
    }
    std::memcpy(ub + d, out.data(), out.size());
    MarkWritten(d, out.size());
    CountVector(out.size());
}

// Transpose(dst, src): one 16 x 16 matrix of a 2-byte type.
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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
                      const TransposeParamsExt& p, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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
inline void TransDataTo5HD(const uint64_t dstList[16], const uint64_t srcList[16], const TransDataTo5HDParams& p,
                           FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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
