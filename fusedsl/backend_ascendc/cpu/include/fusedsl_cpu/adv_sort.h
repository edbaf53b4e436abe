// fusedsl CPU implementation of the Ascend C high-level sort (asc-devkit docs 高阶API/排序操作):
// Concat, Sort<T, isFullSort>, Extract, GetSortLen / GetSortOffset, on A2/A3's layout ("方式一":
// 8-byte (score, index) records, the score in the low bytes, the uint32 index in the high 4 B).
//
// Concat hands the scores over as they are (on A2/A3 Sort reads them directly: concat becomes
// src, GetConcatTmpSize is 0).  Sort sorts each 32-element repeat by descending score (Sort32), and
// with isFullSort merges all of them into one descending list; equal scores keep their input
// order.  Extract splits records back into scores and indices, 32 per repeat.  The 310P's region
// proposal layout ("方式二") is not modelled: the calls stop with a message there.
//
// TopK<T, isInitIndex, isHasfinish, isReuseSrc, mode>: per row of [outter, inner] (the first n
// valid) the k largest (isLargest) or smallest values, largest first or smallest first, with their
// indices (the positions, or srcIndexLocal's values when isInitIndex: one [inner] row shared in
// the normal mode, [outter, inner] in the small mode); equal values keep the lower position first
// (the device's stable Sort32/MrgSort).  A row whose finishLocal entry is true (isHasfinish) gets
// the invalid index n for all k.  Value rows are k rounded up to 32 bytes of T apart, index rows
// k rounded up to 8; only the k results of a row are written.
#pragma once

#include "adv_common.h"
#include "sort.h"
#include "kernel_tiling/kernel_tiling.h"

namespace fusedsl_cpu {

inline void CheckAdvSortChip(const char* api) {
    if (CurrentChip() != kChipA2A3) {
        Fail("%s: %s keeps its sort records as region proposals (the API page's layout two), which fusedsl does "
             "not model; A2/A3 (layout one) only", api, Target().name);
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T>
inline uint32_t GetSortLen(const uint32_t elemCount) {
    return elemCount * 8 / sizeof(T);
}

template <typename T>
inline uint32_t GetSortOffset(const uint32_t elemOffset) {
    return elemOffset * 8 / sizeof(T);
}

template <typename T>
inline void Concat(LocalTensor<T>& concat, const LocalTensor<T>& src, const LocalTensor<T>& tmp,
                   const int32_t repeatTime, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    const char* api = "Concat";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    CheckAdvSortChip(api);
    if (repeatTime < 0 || repeatTime > 255) {
        Fail("%s: repeatTime = %d; it must be in [0, 255]", api, repeatTime);
    }
    (void)tmp;
    AdvIn(api, "src", src, 16ull * repeatTime);
    concat = src;
}

template <typename T, bool isFullSort>
inline void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
                 LocalTensor<T>& tmp, const int32_t repeatTime, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    const char* api = "Sort";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    CheckAdvSortChip(api);
    if (repeatTime < 0 || repeatTime > 255) {
        Fail("%s: repeatTime = %d; it must be in [0, 255]", api, repeatTime);
    }
    uint64_t n = 32ull * repeatTime;
    if (n == 0) {
        return;
    }
    AdvSpan sc{"concat", AdvIn(api, "concat", concat, n), n * sizeof(T)};
    AdvSpan si{"index", AdvIn(api, "index", index, n), n * 4};
    AdvSpan sd{"dst", AdvOut(api, "dst", dst, n * 8 / sizeof(T)), n * 8};
    AdvNoOverlap(api, sd, sc);
    AdvNoOverlap(api, sd, si);
    std::vector<std::pair<double, uint32_t>> recs(n);
    for (uint64_t i = 0; i < n; ++i) {
        recs[i] = {AdvLoad<T>(Bytes(concat), i), LoadAs<uint32_t>(Bytes(index) + i * 4)};
    }
    if (isFullSort && repeatTime > 1) {
        // the merge passes keep their intermediate lists in tmp: GetSortTmpSize's n * 8 bytes
        uint32_t t = CheckUb(api, "tmp", tmp.fs_addr, tmp.GetLength(), n * 8, sizeof(T));
        AdvSpan st{"tmp", t, n * 8};
        AdvNoOverlap(api, st, sd);
        AdvNoOverlap(api, st, sc);
        AdvNoOverlap(api, st, si);
        std::memset(Bytes(tmp), 0xFF, n * 8);
        MarkWritten(t, n * 8);
    }
    auto desc = [](const std::pair<double, uint32_t>& a, const std::pair<double, uint32_t>& b) {
        return a.first > b.first;
    };
    if (isFullSort) {
        std::stable_sort(recs.begin(), recs.end(), desc);
    } else {
        for (uint64_t r = 0; r < n; r += 32) {
            std::stable_sort(recs.begin() + r, recs.begin() + r + 32, desc);
        }
    }
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t* o = Bytes(dst) + i * 8;
        std::memset(o, 0, 8);
        AdvStore<T>(o, 0, recs[i].first);
        std::memcpy(o + 4, &recs[i].second, 4);
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(sd.bytes);
}

template <typename T>
inline void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex, const LocalTensor<T>& sorted,
                    const int32_t repeatTime, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    const char* api = "Extract";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    CheckAdvSortChip(api);
    if (repeatTime < 0 || repeatTime > 255) {
        Fail("%s: repeatTime = %d; it must be in [0, 255]", api, repeatTime);
    }
    uint64_t n = 32ull * repeatTime;
    if (n == 0) {
        return;
    }
    AdvSpan ss{"sorted", AdvIn(api, "sorted", sorted, n * 8 / sizeof(T)), n * 8};
    AdvSpan sv{"dstValue", AdvOut(api, "dstValue", dstValue, n), n * sizeof(T)};
    AdvSpan sx{"dstIndex", AdvOut(api, "dstIndex", dstIndex, n), n * 4};
    AdvNoOverlap(api, sv, ss);
    AdvNoOverlap(api, sx, ss);
    AdvNoOverlap(api, sv, sx);
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t* rec = Bytes(sorted) + i * 8;
        std::memcpy(Bytes(dstValue) + i * sizeof(T), rec, sizeof(T));
        std::memcpy(Bytes(dstIndex) + i * 4, rec + 4, 4);
    }
    MarkWritten(sv.off, sv.bytes);
    MarkWritten(sx.off, sx.bytes);
    CountVector(ss.bytes);
}

template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopKImpl(fusedsl_cpu::Site site, const LocalTensor<T>& dstValueLocal,
                     const LocalTensor<int32_t>& dstIndexLocal, const LocalTensor<T>& srcLocal,
                     const LocalTensor<int32_t>& srcIndexLocal, const LocalTensor<bool>& finishLocal,
                     const LocalTensor<uint8_t>* tmp, const int32_t k, const TopkTiling& tiling,
                     const TopKInfo& info, const bool isLargest) {
    using namespace fusedsl_cpu;
    AtSite at(site);
    const char* api = "TopK";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    bool small = topkMode == TopKMode::TOPK_NSMALL;
    int32_t rows = info.outter, inner = info.inner, n = info.n;
    if (rows <= 0 || inner <= 0 || inner % 32 != 0 || n <= 0 || n > inner) {
        Fail("%s: topKInfo outter %d, inner %d, n %d: inner must be a positive multiple of 32 and n in [1, inner] "
             "(the API page)", api, rows, inner, n);
    }
    if (small && inner != 32) {
        Fail("%s: TOPK_NSMALL needs inner = 32, not %d (the API page)", api, inner);
    }
    if (k < 1 || k > n) {
        Fail("%s: k = %d; it must be in [1, n = %d]", api, k, n);
    }
    if (tiling.k != 0 && (tiling.k != k || tiling.innerDataSize != inner || tiling.mode != static_cast<int>(topkMode) ||
                          (tiling.isLargest != 0) != isLargest)) {
        Fail("%s: the tiling was made for k %d, inner %d, mode %d, isLargest %d but the call has k %d, inner %d, mode "
             "%d, isLargest %d; fill it with TopKTilingFunc for this call", api, tiling.k, tiling.innerDataSize,
             tiling.mode, tiling.isLargest, k, inner, static_cast<int>(topkMode), isLargest ? 1 : 0);
    }
    uint64_t total = static_cast<uint64_t>(rows) * inner;
    uint32_t kv = static_cast<uint32_t>((k * sizeof(T) + 31) / 32 * 32 / sizeof(T));
    uint32_t ki = static_cast<uint32_t>((k + 7) / 8 * 8);
    AdvSpan ss{"srcLocal", AdvIn(api, "srcLocal", srcLocal, total), total * sizeof(T)};
    uint64_t idx_n = small ? total : static_cast<uint64_t>(inner);
    AdvSpan sx{"srcIndexLocal", isInitIndex ? AdvIn(api, "srcIndexLocal", srcIndexLocal, idx_n) : 0u,
               isInitIndex ? idx_n * 4 : 0};
    AdvSpan sf{"finishLocal", isHasfinish ? AdvIn(api, "finishLocal", finishLocal, static_cast<uint64_t>(rows)) : 0u,
               isHasfinish ? static_cast<uint64_t>(rows) : 0};
    uint64_t out_v = static_cast<uint64_t>(rows - 1) * kv + k;
    uint64_t out_i = static_cast<uint64_t>(rows - 1) * ki + k;
    AdvSpan sv{"dstValueLocal", AdvOut(api, "dstValueLocal", dstValueLocal, out_v), out_v * sizeof(T)};
    AdvSpan si{"dstIndexLocal", AdvOut(api, "dstIndexLocal", dstIndexLocal, out_i), out_i * 4};
    for (const AdvSpan* o : {&sv, &si}) {
        for (const AdvSpan* in : {&ss, &sx, &sf}) {
            if (in->bytes != 0) {
                AdvNoOverlap(api, *o, *in);
            }
        }
    }
    AdvNoOverlap(api, sv, si);
    std::vector<double> x(total);
    for (uint64_t i = 0; i < total; ++i) {
        x[i] = AdvLoad<T>(Bytes(srcLocal), i);
    }
    std::vector<int32_t> given(isInitIndex ? idx_n : 0);
    for (uint64_t i = 0; i < given.size(); ++i) {
        given[i] = LoadAs<int32_t>(Bytes(srcIndexLocal) + i * 4);
    }
    std::vector<uint8_t> fin(isHasfinish ? rows : 0);
    for (int32_t r = 0; r < static_cast<int32_t>(fin.size()); ++r) {
        fin[r] = LoadAs<uint8_t>(Bytes(finishLocal) + r);
    }
    adv::TmpRange need = adv::TopK(inner, rows, small, isInitIndex, isLargest, sizeof(T), CurrentChip() == kChip310P);
    AdvScratch(api, tmp, need.min, need.max, {ss, sx, sf, sv, si}, "GetTopKMaxMinTmpSize");
    if (isReuseSrc) {   // the device may leave anything in the source
        std::memset(Bytes(srcLocal), 0xFF, ss.bytes);
    }
    for (int32_t r = 0; r < rows; ++r) {
        std::vector<int32_t> pos(n);
        for (int32_t j = 0; j < n; ++j) {
            pos[j] = j;
        }
        const double* row = x.data() + static_cast<uint64_t>(r) * inner;
        std::stable_sort(pos.begin(), pos.end(), [&](int32_t a, int32_t b) {
            return isLargest ? row[a] > row[b] : row[a] < row[b];
        });
        for (int32_t j = 0; j < k; ++j) {
            AdvStore<T>(Bytes(dstValueLocal), static_cast<uint64_t>(r) * kv + j, row[pos[j]]);
            int32_t id = pos[j];
            if (isInitIndex) {
                id = given[small ? static_cast<uint64_t>(r) * inner + pos[j] : pos[j]];
            }
            if (isHasfinish && fin[r] != 0) {
                id = n;
            }
            StoreAs(Bytes(dstIndexLocal) + (static_cast<uint64_t>(r) * ki + j) * 4, id);
        }
        MarkWritten(sv.off + static_cast<uint64_t>(r) * kv * sizeof(T), k * sizeof(T));
        MarkWritten(si.off + static_cast<uint64_t>(r) * ki * 4, k * 4);
    }
    CountVector(ss.bytes);
}

template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const int32_t k, const TopkTiling& tilling,
                 const TopKInfo& topKInfo, const bool isLargest = true, FUSEDSL_CPU_SITE) {
    TopKImpl<T, isInitIndex, isHasfinish, isReuseSrc, topkMode>(fs_site, dstValueLocal, dstIndexLocal, srcLocal,
                                                                srcIndexLocal, finishLocal, nullptr, k, tilling,
                                                                topKInfo, isLargest);
}
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const LocalTensor<uint8_t>& tmpLocal, const int32_t k,
                 const TopkTiling& tilling, const TopKInfo& topKInfo, const bool isLargest = true, FUSEDSL_CPU_SITE) {
    TopKImpl<T, isInitIndex, isHasfinish, isReuseSrc, topkMode>(fs_site, dstValueLocal, dstIndexLocal, srcLocal,
                                                                srcIndexLocal, finishLocal, &tmpLocal, k, tilling,
                                                                topKInfo, isLargest);
}

}  // namespace AscendC
