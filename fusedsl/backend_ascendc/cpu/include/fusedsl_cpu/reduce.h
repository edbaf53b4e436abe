// fusedsl CPU implementation of the Ascend C API: reductions and Brcb (ASCENDC.md §2.5, §2.6).
//
//  * ReduceSum/ReduceMax/ReduceMin: the whole-tensor form (count) and the mask/repeat form
//    (mask, repeatTime, srcRepStride), both with a sharedTmpBuffer sized by the API page's
//    formula; ReduceMax/ReduceMin can also return the index of the winner (calIndex).
//  * WholeReduceSum/Max/Min (CANN 9.1: ReduceRepeat<ReduceType>): one result per repeat.
//  * BlockReduceSum/Max/Min (CANN 9.1: ReduceDataBlock<ReduceType>): one result per 32-B block.
//  * Brcb: 8 source elements per repeat, each broadcast over one 32-B block.
//
// Sums follow the hardware's order, so half results match the device bit for bit: inside a
// repeat (or a block) adjacent pairs are added in a binary tree, every partial sum rounded to
// the element type (non-saturating: overflow gives inf, the default register mode).  Across
// repeats the whole-tensor ReduceSum on 2201 (A2/A3) adds the per-repeat sums in order; every
// other form and chip reduces the per-repeat sums again with the same tree ("方式一/方式二" of
// the ReduceSum page).  Max/min are exact in any order; ties report the smallest index.
#pragma once

#include <vector>

#include "vector.h"

namespace AscendC {

enum class ReduceType : uint8_t { SUM = 0, MAX, MIN };

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::ReduceType;

enum class ReduceKind { kSum, kMax, kMin };

inline ReduceKind KindOf(ReduceType t) {
    return t == ReduceType::SUM ? ReduceKind::kSum : t == ReduceType::MAX ? ReduceKind::kMax : ReduceKind::kMin;
}

// x rounded to T's precision (half or float); the exact sum of two such values fits a double.
template <typename T>
inline double RoundTo(double x) {
    return static_cast<double>(static_cast<float>(static_cast<T>(x)));
}

// The device's pairwise tree: (v0+v1), (v2+v3), ... then the same on the partial sums.
template <typename T>
inline double TreeSum(std::vector<double> v) {
    if (v.empty()) {
        return 0.0;
    }
    while (v.size() > 1) {
        size_t half_n = (v.size() + 1) / 2;
        for (size_t i = 0; i < half_n; ++i) {
            v[i] = 2 * i + 1 < v.size() ? RoundTo<T>(v[2 * i] + v[2 * i + 1]) : v[2 * i];
        }
        v.resize(half_n);
    }
    return v[0];
}

// Max/min over values with NaN propagation (like numpy) and the first index of the winner.
inline std::pair<double, uint32_t> Extreme(ReduceKind kind, const std::vector<double>& v) {
    double best = v[0];
    uint32_t at = 0;
    for (uint32_t i = 1; i < v.size() && !std::isnan(best); ++i) {
        bool better = std::isnan(v[i]) || (kind == ReduceKind::kMax ? v[i] > best : v[i] < best);
        if (better) {
            best = v[i];
            at = i;
        }
    }
    return {best, at};
}

// The index of a max/min is stored as the bit pattern of an unsigned int of T's width.
template <typename T>
inline T IndexAsValue(uint32_t index) {
    T v;
    if constexpr (sizeof(T) == 2) {
        auto u = static_cast<uint16_t>(index);
        std::memcpy(&v, &u, 2);
    } else {
        std::memcpy(&v, &index, sizeof(T));
    }
    return v;
}

inline uint64_t DivCeil(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

// The lanes one repeat of a mask/repeat-form reduction reads.  Inactive lanes hold the sum's
// identity 0 (the tree still has all lanes), `active` lists the selected lane numbers.
struct RepeatLanes {
    std::vector<double> all;
    std::vector<double> vals;
    std::vector<uint32_t> active;
};

template <typename T>
inline RepeatLanes ReadRepeat(const char* api, const LocalTensor<T>& src, uint32_t s, const Mask& m, uint64_t r,
                              uint64_t blk, uint64_t rep) {
    constexpr uint32_t lanes = LanesOf<T>();
    constexpr uint32_t per_block = 32 / sizeof(T);
    const uint8_t* ub = CurCore().ub.data();
    RepeatLanes out;
    out.all.assign(lanes, 0.0);
    for (uint32_t j = 0; j < lanes; ++j) {
        if (!((m.bits[j / 64] >> (j % 64)) & 1)) {
            continue;
        }
        uint64_t a = (r * rep + (j / per_block) * blk) * 32 + (j % per_block) * sizeof(T);
        if (a + sizeof(T) > src.GetLength()) {
            Fail("%s: repeat %llu, lane %u reads byte %llu of a %u-byte src LocalTensor; the mask/repeat parameters "
                 "run past the end of the tensor", api, static_cast<unsigned long long>(r), j,
                 static_cast<unsigned long long>(a + sizeof(T)), src.GetLength());
        }
        CheckWritten(api, "src", static_cast<uint32_t>(s + a), sizeof(T));
        double v = static_cast<double>(ToCompute(LoadAs<T>(ub + s + a)));
        out.all[j] = v;
        out.vals.push_back(v);
        out.active.push_back(j);
    }
    return out;
}

// A dst operand of a reduction: in UB, aligned to `align` bytes (ReduceRepeat table 3), and
// large enough for `need` bytes.
template <typename T>
inline uint32_t ReduceDst(const char* api, const LocalTensor<T>& dst, uint64_t need, uint32_t align) {
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), need, sizeof(T), false);
    if (d % align != 0) {
        Fail("%s: dst starts at UB offset %u, which is not %u-byte aligned as this reduction's output needs", api, d,
             align);
    }
    return d;
}

inline void CheckRepeatTime(const char* api, int64_t repeatTime, int64_t limit) {
    if (repeatTime < 0 || repeatTime > limit) {
        Fail("%s: repeatTime = %lld is outside [0, %lld]", api, static_cast<long long>(repeatTime),
             static_cast<long long>(limit));
    }
}

inline void CheckStride(const char* api, const char* name, int64_t v) {
    if (v < 0 || v > 65535) {
        Fail("%s: %s = %lld is outside [0, 65535]", api, name, static_cast<long long>(v));
    }
}

// mask = 0 (no lane) or repeatTime = 0: a no-op on 2201 per the API pages; the other chips do
// not document it, so it is reported rather than guessed.
inline bool EmptyReduce(const char* api, const Mask& m, int64_t repeatTime) {
    if (m.counter != 0) {
        return false;
    }
    bool empty = repeatTime == 0 || (m.bits[0] == 0 && m.bits[1] == 0);
    if (empty && Target().arch != 2201 && repeatTime != 0) {
        Fail("%s: the mask selects no lane; %s does not document this case (2201 treats it as a no-op)", api,
             Target().name);
    }
    return empty;
}

template <typename T>
inline Mask ReduceMask(const char* api, int64_t mask) {
    constexpr uint32_t lanes = LanesOf<T>();
    if (CurCore().counter_mode) {   // counter mode: mask is the element count
        return PickMask<true>(api, static_cast<uint64_t>(mask), lanes);
    }
    if (mask < 0 || mask > static_cast<int64_t>(lanes)) {
        Fail("%s: mask = %lld is out of range; with %u lanes per repeat it must be in [0, %u]", api,
             static_cast<long long>(mask), lanes, lanes);
    }
    auto u = static_cast<uint64_t>(mask);
    return Mask{{u >= 64 ? ~0ull : (1ull << u) - 1, u > 64 ? (u >= 128 ? ~0ull : (1ull << (u - 64)) - 1) : 0}};
}

template <typename T, bool isSetMask>
inline Mask ReduceMaskOf(const char* api, int64_t mask) {
    if constexpr (!isSetMask) {
        return PickMask<false>(api, uint64_t{0}, LanesOf<T>());
    } else {
        return ReduceMask<T>(api, mask);
    }
}

template <typename T, bool isSetMask>
inline Mask ReduceMaskOf(const char* api, const uint64_t* mask) {
    if constexpr (!isSetMask) {
        return PickMask<false>(api, uint64_t{0}, LanesOf<T>());
    } else {
        if (CurCore().counter_mode) {
            return PickMask<true>(api, mask[0], LanesOf<T>());
        }
        return Mask{{mask[0], LanesOf<T>() > 64 ? mask[1] : 0}};
    }
}

// ---- per repeat (WholeReduce* / ReduceRepeat) ---------------------------------------------

inline const char* OrderName(ReduceOrder o) {
    switch (o) {
        case ReduceOrder::ORDER_VALUE_INDEX: return "ORDER_VALUE_INDEX";
        case ReduceOrder::ORDER_INDEX_VALUE: return "ORDER_INDEX_VALUE";
        case ReduceOrder::ORDER_ONLY_VALUE: return "ORDER_ONLY_VALUE";
        case ReduceOrder::ORDER_ONLY_INDEX: return "ORDER_ONLY_INDEX";
    }
    return "?";
}

// ReduceRepeat.md: 2201 supports every order, 310P value+index in either order, 910A only
// ORDER_VALUE_INDEX.
inline void CheckOrder(const char* api, ReduceOrder order) {
    int arch = Target().arch;
    bool ok = arch == 2201 || order == ReduceOrder::ORDER_VALUE_INDEX ||
              (arch == 2002 && order == ReduceOrder::ORDER_INDEX_VALUE);
    if (!ok) {
        Fail("%s: ReduceOrder::%s is not supported on %s (supported: %s)", api, OrderName(order), Target().name,
             arch == 2002 ? "ORDER_VALUE_INDEX, ORDER_INDEX_VALUE" : "ORDER_VALUE_INDEX");
    }
}

template <typename T>
inline void RepeatReduce(const char* api, const char* family, ReduceKind kind, const LocalTensor<T>& dst,
                         const LocalTensor<T>& src, const Mask& m, int32_t repeatTime, int32_t dstRepStride,
                         int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order) {
    CheckApi(family, TypeName<T>());
    CheckRepeatTime(api, repeatTime, 255);
    CheckStride(api, "dstRepStride", dstRepStride);
    CheckStride(api, "srcBlkStride", srcBlkStride);
    CheckStride(api, "srcRepStride", srcRepStride);
    if (kind != ReduceKind::kSum) {
        CheckOrder(api, order);
    } else {
        order = ReduceOrder::ORDER_ONLY_VALUE;
    }
    if (dstRepStride == 0 && Target().arch == 1001) {
        Fail("%s: dstRepStride = 0 is not supported on %s", api, Target().name);
    }
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 0, sizeof(T));
    if (EmptyReduce(api, m, repeatTime)) {
        return;
    }
    // Output unit (ReduceRepeat table 3): value+index pairs take 2 elements; an index alone is
    // a uint32 on 2201 and an element-wide integer elsewhere.
    repeatTime = static_cast<int32_t>(EffectiveRepeats(m, LanesOf<T>(), static_cast<uint64_t>(repeatTime)));
    bool pair = order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE;
    bool wide_index = order == ReduceOrder::ORDER_ONLY_INDEX && Target().arch == 2201;
    uint32_t unit = pair ? 2 * sizeof(T) : wide_index ? 4 : sizeof(T);
    uint64_t last = static_cast<uint64_t>(repeatTime - 1) * dstRepStride * unit + unit;
    uint32_t d = ReduceDst(api, dst, last, unit);
    uint8_t* ub = CurCore().ub.data();
    std::vector<std::pair<double, uint32_t>> results;
    for (int32_t r = 0; r < repeatTime; ++r) {
        RepeatLanes l = ReadRepeat(api, src, s, RepeatMask(m, LanesOf<T>(), r), r, srcBlkStride, srcRepStride);
        if (kind == ReduceKind::kSum) {
            results.push_back({TreeSum<T>(l.all), 0});
        } else {
            auto e = Extreme(kind, l.vals);
            results.push_back({e.first, l.active[e.second]});
        }
    }
    if (kind != ReduceKind::kSum && !results.empty()) {   // the special register keeps the overall winner
        std::vector<double> vals;
        for (auto& r : results) {
            vals.push_back(r.first);
        }
        auto e = Extreme(kind, vals);
        CurCore().spr_value = e.first;
        CurCore().spr_index = results[e.second].second;
    }
    // Results are written after every read, as one instruction does; dst may overlap src.
    for (int32_t r = 0; r < repeatTime; ++r) {
        uint64_t out = d + static_cast<uint64_t>(r) * dstRepStride * unit;
        T value = FromCompute<T>(results[r].first);
        T index = IndexAsValue<T>(results[r].second);
        switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX:
                StoreAs(ub + out, value);
                StoreAs(ub + out + sizeof(T), index);
                break;
            case ReduceOrder::ORDER_INDEX_VALUE:
                StoreAs(ub + out, index);
                StoreAs(ub + out + sizeof(T), value);
                break;
            case ReduceOrder::ORDER_ONLY_VALUE:
                StoreAs(ub + out, value);
                break;
            case ReduceOrder::ORDER_ONLY_INDEX:
                if (wide_index) {
                    StoreAs(ub + out, results[r].second);
                } else {
                    StoreAs(ub + out, index);
                }
                break;
        }
        MarkWritten(static_cast<uint32_t>(out), unit);
    }
    St().vector_instructions += 1;
    St().vector_repeats += static_cast<uint64_t>(repeatTime);
}

// ---- per block (BlockReduce* / ReduceDataBlock) -------------------------------------------

// Each repeat writes 8 results (one per 32-B block) contiguously; dstRepStride counts those
// 8-result groups.  A block with no selected lane is not written (2201; the other chips do not
// document it and are modelled the same way).
template <typename T>
inline void BlockReduce(const char* api, const char* family, ReduceKind kind, const LocalTensor<T>& dst,
                        const LocalTensor<T>& src, const Mask& m_all, int32_t repeatTime, int32_t dstRepStride,
                        int32_t srcBlkStride, int32_t srcRepStride) {
    CheckApi(family, TypeName<T>());
    CheckRepeatTime(api, repeatTime, 255);
    CheckStride(api, "dstRepStride", dstRepStride);
    CheckStride(api, "srcBlkStride", srcBlkStride);
    CheckStride(api, "srcRepStride", srcRepStride);
    if (dstRepStride == 0 && Target().arch == 1001) {
        Fail("%s: dstRepStride = 0 is not supported on %s", api, Target().name);
    }
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 0, sizeof(T));
    if (EmptyReduce(api, m_all, repeatTime)) {
        return;
    }
    constexpr uint32_t per_block = 32 / sizeof(T);
    const uint32_t group = 8 * sizeof(T);   // bytes of one repeat's 8 results
    repeatTime = static_cast<int32_t>(EffectiveRepeats(m_all, LanesOf<T>(), static_cast<uint64_t>(repeatTime)));
    uint64_t last = static_cast<uint64_t>(repeatTime - 1) * dstRepStride * group + group;
    // ReduceDataBlock.md: dst aligned to 16 B for half, 32 B for float (one result group).
    uint32_t d = ReduceDst(api, dst, last, group);
    uint8_t* ub = CurCore().ub.data();
    struct Out {
        uint64_t at;
        double v;
    };
    std::vector<Out> outs;
    for (int32_t r = 0; r < repeatTime; ++r) {
        const Mask m = RepeatMask(m_all, LanesOf<T>(), r);
        RepeatLanes l = ReadRepeat(api, src, s, m, r, srcBlkStride, srcRepStride);
        for (uint32_t b = 0; b < 8; ++b) {
            std::vector<double> all(l.all.begin() + b * per_block, l.all.begin() + (b + 1) * per_block);
            std::vector<double> vals;
            for (size_t k = 0; k < l.active.size(); ++k) {
                if (l.active[k] / per_block == b) {
                    vals.push_back(l.vals[k]);
                }
            }
            if (vals.empty()) {
                continue;
            }
            double v = kind == ReduceKind::kSum ? TreeSum<T>(all) : Extreme(kind, vals).first;
            outs.push_back({d + static_cast<uint64_t>(r) * dstRepStride * group + b * sizeof(T), v});
        }
    }
    for (const Out& o : outs) {
        StoreAs(ub + o.at, FromCompute<T>(o.v));
        MarkWritten(static_cast<uint32_t>(o.at), sizeof(T));
    }
    St().vector_instructions += 1;
    St().vector_repeats += static_cast<uint64_t>(repeatTime);
}

// ---- whole tensor (ReduceSum / ReduceMax / ReduceMin) -------------------------------------

// sharedTmpBuffer elements the API page asks for, given the first pass's repeat count.
template <typename T>
inline uint64_t TmpElements(ReduceKind kind, uint64_t first_repeats, bool calIndex) {
    const uint64_t epb = 32 / sizeof(T);
    const uint64_t epr = 256 / sizeof(T);
    if (kind == ReduceKind::kSum) {
        return DivCeil(first_repeats, epb) * epb;
    }
    // The max/min instruction always writes (value, index) pairs.
    uint64_t iter1 = first_repeats * 2;
    uint64_t start2 = DivCeil(iter1, epb) * epb;
    if (!calIndex) {
        return start2;
    }
    uint64_t iter2 = DivCeil(iter1, epr) * 2;
    uint64_t end2 = DivCeil(iter2, epb) * epb;
    uint64_t need = start2 + end2;
    if (iter2 > 2) {
        uint64_t iter3 = DivCeil(iter2, epr) * 2;
        need = start2 + end2 + DivCeil(iter3, epb) * epb;
    }
    return need;
}

inline const char* ReduceName(ReduceKind k) {
    return k == ReduceKind::kSum ? "ReduceSum" : k == ReduceKind::kMax ? "ReduceMax" : "ReduceMin";
}

// Reduces the per-repeat partial sums with the same tree, repeat by repeat, until one is left.
template <typename T>
inline double TreeOfRepeats(std::vector<double> partial) {
    constexpr uint32_t lanes = LanesOf<T>();
    while (partial.size() > 1) {
        std::vector<double> next;
        for (size_t i = 0; i < partial.size(); i += lanes) {
            std::vector<double> chunk(lanes, 0.0);
            for (size_t k = 0; k < lanes && i + k < partial.size(); ++k) {
                chunk[k] = partial[i + k];
            }
            next.push_back(TreeSum<T>(chunk));
        }
        partial.swap(next);
    }
    return partial.empty() ? 0.0 : partial[0];
}

// `repeats` repeats of `m` over src (repeat r starts at r * srcRepStride blocks).  `count_form`
// selects the whole-tensor call: the last repeat then takes only the count's tail.
template <typename T>
inline void WholeReduce(ReduceKind kind, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                        const LocalTensor<T>& tmp, bool count_form, int64_t count, const Mask& mask_in,
                        int64_t repeats, int64_t srcRepStride, bool calIndex) {
    const char* api = ReduceName(kind);
    CheckApi(api, TypeName<T>());
    constexpr uint32_t lanes = LanesOf<T>();
    if (count_form) {
        if (!CheckCount(api, count)) {
            return;
        }
        repeats = static_cast<int64_t>(DivCeil(count, lanes));
        srcRepStride = 8;
    } else {
        CheckRepeatTime(api, repeats, INT32_MAX);
        CheckStride(api, "srcRepStride", srcRepStride);
        if (EmptyReduce(api, mask_in, repeats)) {
            return;
        }
    }
    bool with_index = calIndex && kind != ReduceKind::kSum;
    uint32_t outs = with_index ? 2 : 1;
    uint32_t d = ReduceDst(api, dst, outs * sizeof(T), outs * sizeof(T));
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), count_form ? count * sizeof(T) : 0, sizeof(T));
    // ReduceSum on 2201 in the count form keeps a running sum and never touches the scratch
    // ("方式一"); every other case parks the first pass's results in sharedTmpBuffer.
    bool sequential = kind == ReduceKind::kSum && count_form && Target().arch == 2201;
    uint64_t tmp_elems = sequential ? 0 : TmpElements<T>(kind, static_cast<uint64_t>(repeats), with_index);
    uint32_t t = CheckUb(api, "sharedTmpBuffer", tmp.fs_addr, tmp.GetLength(), 0, sizeof(T));
    if (tmp_elems * sizeof(T) > tmp.GetLength()) {
        Fail("%s: sharedTmpBuffer has %u bytes but this call needs %llu (%llu elements of %s for %lld repeats of "
             "the first pass%s; see the formula on the API page)", api, tmp.GetLength(),
             static_cast<unsigned long long>(tmp_elems * sizeof(T)), static_cast<unsigned long long>(tmp_elems),
             TypeName<T>(), static_cast<long long>(repeats), with_index ? ", with the index" : "");
    }
    uint64_t tmp_bytes = tmp_elems * sizeof(T);
    // The scratch may be src itself (the page allows reusing src) or hold dst, but must not
    // partly overlap src.
    uint64_t src_bytes = count_form ? count * sizeof(T) : 0;
    if (tmp_bytes != 0 && src_bytes != 0 && t != s && t < s + src_bytes && s < t + tmp_bytes) {
        Fail("%s: sharedTmpBuffer UB [%u, %llu) partially overlaps src UB [%u, %llu); use a separate buffer or "
             "src itself", api, t, static_cast<unsigned long long>(t + tmp_bytes), s,
             static_cast<unsigned long long>(s + src_bytes));
    }
    Mask m = mask_in;
    std::vector<double> partial;
    std::vector<double> values;   // max/min: every selected value, in index order
    std::vector<uint32_t> index;
    for (int64_t r = 0; r < repeats; ++r) {
        if (count_form) {
            int64_t left = count - r * lanes;
            m = ReduceMask<T>(api, left >= lanes ? lanes : left);
        }
        RepeatLanes l = ReadRepeat(api, src, s, m, static_cast<uint64_t>(r), 1, static_cast<uint64_t>(srcRepStride));
        if (kind == ReduceKind::kSum) {
            partial.push_back(TreeSum<T>(l.all));
        } else {
            for (size_t k = 0; k < l.vals.size(); ++k) {
                values.push_back(l.vals[k]);
                index.push_back(static_cast<uint32_t>(r * lanes + l.active[k]));
            }
        }
    }
    double value = 0.0;
    uint32_t at = 0;
    if (kind == ReduceKind::kSum) {
        if (sequential) {
            value = partial[0];
            for (size_t i = 1; i < partial.size(); ++i) {
                value = RoundTo<T>(value + partial[i]);
            }
        } else {
            value = TreeOfRepeats<T>(partial);
        }
    } else {
        auto e = Extreme(kind, values);
        value = e.first;
        at = index[e.second];
        if (with_index && sizeof(T) == 2 && at > 65535) {
            Fail("%s: the index %u of the result does not fit the 16 bits a half index has; reduce at most 65536 "
                 "half elements per call when calIndex is set", api, at);
        }
    }
    if (kind == ReduceKind::kSum) {
        CurCore().spr_sum = value;
    } else {
        CurCore().spr_value = value;
        CurCore().spr_index = at;
    }
    // The library overwrites its scratch; model that so nothing relies on it surviving.
    if (tmp_bytes != 0) {
        std::memset(CurCore().ub.data() + t, 0xFF, tmp_bytes);
        MarkWritten(t, tmp_bytes);
    }
    uint8_t* ub = CurCore().ub.data();
    StoreAs(ub + d, FromCompute<T>(value));
    if (with_index) {
        StoreAs(ub + d + sizeof(T), IndexAsValue<T>(at));
    }
    MarkWritten(d, outs * sizeof(T));
    St().vector_instructions += 1;
    St().vector_repeats += static_cast<uint64_t>(repeats);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// ---- ReduceSum / ReduceMax / ReduceMin ----------------------------------------------------

template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::WholeReduce(fusedsl_cpu::ReduceKind::kSum, dst, src, sharedTmpBuffer, true, count,
                             fusedsl_cpu::Mask{{~0ull, ~0ull}}, 0, 8, false);
}

#define FUSEDSL_CPU_REDUCE_L0(NAME, KIND, IDX_PARAM, IDX)                                                      \
    template <typename T>                                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                     const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride IDX_PARAM,       \
                     FUSEDSL_CPU_SITE) {                                                                       \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::WholeReduce(KIND, dst, src, sharedTmpBuffer, false, 0,                                    \
                                 fusedsl_cpu::ReduceMask<T>(#NAME, mask), repeatTime, srcRepStride, IDX);      \
    }                                                                                                          \
    template <typename T>                                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                     const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride IDX_PARAM,    \
                     FUSEDSL_CPU_SITE) {                                                                       \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::WholeReduce(KIND, dst, src, sharedTmpBuffer, false, 0,                                    \
                                 fusedsl_cpu::ReduceMaskOf<T, true>(#NAME, mask), repeatTime, srcRepStride, IDX); \
    }

#define FUSEDSL_CPU_CALINDEX , bool calIndex = false
FUSEDSL_CPU_REDUCE_L0(ReduceSum, fusedsl_cpu::ReduceKind::kSum, , false)
FUSEDSL_CPU_REDUCE_L0(ReduceMax, fusedsl_cpu::ReduceKind::kMax, FUSEDSL_CPU_CALINDEX, calIndex)
FUSEDSL_CPU_REDUCE_L0(ReduceMin, fusedsl_cpu::ReduceKind::kMin, FUSEDSL_CPU_CALINDEX, calIndex)
#undef FUSEDSL_CPU_CALINDEX
#undef FUSEDSL_CPU_REDUCE_L0

template <typename T, bool isSetMask = true>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = false, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::WholeReduce(fusedsl_cpu::ReduceKind::kMax, dst, src, sharedTmpBuffer, true, count,
                             fusedsl_cpu::Mask{{~0ull, ~0ull}}, 0, 8, calIndex);
}

template <typename T, bool isSetMask = true>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = false, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::WholeReduce(fusedsl_cpu::ReduceKind::kMin, dst, src, sharedTmpBuffer, true, count,
                             fusedsl_cpu::Mask{{~0ull, ~0ull}}, 0, 8, calIndex);
}

// ---- WholeReduceSum/Max/Min and their CANN 9.1 name ReduceRepeat ----------------------------

#define FUSEDSL_CPU_WHOLE_REDUCE(NAME, KIND, ORDER_PARAM, ORDER)                                             \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,       \
                     const int32_t srcRepStride ORDER_PARAM, FUSEDSL_CPU_SITE) {                              \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::RepeatReduce(#NAME, #NAME, KIND, dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>(#NAME, mask), \
                                  repeatTime, dstRepStride, srcBlkStride, srcRepStride, ORDER);               \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],             \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,       \
                     const int32_t srcRepStride ORDER_PARAM, FUSEDSL_CPU_SITE) {                              \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::RepeatReduce(#NAME, #NAME, KIND, dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>(#NAME, mask), \
                                  repeatTime, dstRepStride, srcBlkStride, srcRepStride, ORDER);               \
    }

#define FUSEDSL_CPU_ORDER_PARAM , ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX
FUSEDSL_CPU_WHOLE_REDUCE(WholeReduceSum, fusedsl_cpu::ReduceKind::kSum, , ReduceOrder::ORDER_ONLY_VALUE)
FUSEDSL_CPU_WHOLE_REDUCE(WholeReduceMax, fusedsl_cpu::ReduceKind::kMax, FUSEDSL_CPU_ORDER_PARAM, order)
FUSEDSL_CPU_WHOLE_REDUCE(WholeReduceMin, fusedsl_cpu::ReduceKind::kMin, FUSEDSL_CPU_ORDER_PARAM, order)
#undef FUSEDSL_CPU_WHOLE_REDUCE

// ReduceRepeat.md: T (dst) and U (src) must be the same type on every chip but 950.
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                         FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    static_assert(std::is_same_v<T, U>, "ReduceRepeat: dst and src must have the same element type on A2/A3/310P/910");
    fusedsl_cpu::RepeatReduce("ReduceRepeat", "ReduceRepeat", fusedsl_cpu::KindOf(reduceType), dst, src,
                              fusedsl_cpu::ReduceMaskOf<T, isSetMask>("ReduceRepeat", mask), repeatTime,
                              dstRepStride, srcBlkStride, srcRepStride, order);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                         FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    static_assert(std::is_same_v<T, U>, "ReduceRepeat: dst and src must have the same element type on A2/A3/310P/910");
    fusedsl_cpu::RepeatReduce("ReduceRepeat", "ReduceRepeat", fusedsl_cpu::KindOf(reduceType), dst, src,
                              fusedsl_cpu::ReduceMaskOf<T, isSetMask>("ReduceRepeat", mask), repeatTime,
                              dstRepStride, srcBlkStride, srcRepStride, order);
}

// ---- BlockReduceSum/Max/Min (repeatTime before mask) and ReduceDataBlock (mask first) --------

#define FUSEDSL_CPU_BLOCK_REDUCE(NAME, KIND)                                                                  \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,          \
                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,              \
                     const int32_t srcRepStride, FUSEDSL_CPU_SITE) {                                          \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::BlockReduce(#NAME, #NAME, KIND, dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>(#NAME, mask), \
                                 repeatTime, dstRepStride, srcBlkStride, srcRepStride);                       \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,          \
                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,           \
                     const int32_t srcRepStride, FUSEDSL_CPU_SITE) {                                          \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::BlockReduce(#NAME, #NAME, KIND, dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>(#NAME, mask), \
                                 repeatTime, dstRepStride, srcBlkStride, srcRepStride);                       \
    }

FUSEDSL_CPU_BLOCK_REDUCE(BlockReduceSum, fusedsl_cpu::ReduceKind::kSum)
FUSEDSL_CPU_BLOCK_REDUCE(BlockReduceMax, fusedsl_cpu::ReduceKind::kMax)
FUSEDSL_CPU_BLOCK_REDUCE(BlockReduceMin, fusedsl_cpu::ReduceKind::kMin)
#undef FUSEDSL_CPU_BLOCK_REDUCE

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    static_assert(std::is_same_v<T, U>, "ReduceDataBlock: dst and src must have the same element type");
    fusedsl_cpu::BlockReduce("ReduceDataBlock", "ReduceDataBlock", fusedsl_cpu::KindOf(reduceType), dst, src,
                             fusedsl_cpu::ReduceMaskOf<T, isSetMask>("ReduceDataBlock", mask), repeatTime,
                             dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    static_assert(std::is_same_v<T, U>, "ReduceDataBlock: dst and src must have the same element type");
    fusedsl_cpu::BlockReduce("ReduceDataBlock", "ReduceDataBlock", fusedsl_cpu::KindOf(reduceType), dst, src,
                             fusedsl_cpu::ReduceMaskOf<T, isSetMask>("ReduceDataBlock", mask), repeatTime,
                             dstRepStride, srcBlkStride, srcRepStride);
}

// ---- Brcb ---------------------------------------------------------------------------------

// Each repeat takes 8 consecutive source elements and fills one 32-byte block of dst with each.
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Brcb";
    CheckApi(api, TypeName<T>());
    if (repeatParams.dstBlkStride == 0) {
        Fail("Brcb: dstBlkStride = 0 is undefined behaviour on the device");
    }
    if (repeatTime == 0) {
        return;
    }
    uint64_t src_bytes = 8ull * repeatTime * sizeof(T);
    uint64_t dst_span = ((repeatTime - 1ull) * repeatParams.dstRepStride + 7ull * repeatParams.dstBlkStride + 1) * 32;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), dst_span, sizeof(T));
    uint32_t s = SrcOperand(api, "src", src, 8ull * repeatTime);
    if (d < s + src_bytes && s < d + dst_span) {
        Fail("Brcb: dst UB [%u, %llu) overlaps src UB [%u, %llu); Brcb needs separate buffers", d,
             static_cast<unsigned long long>(d + dst_span), s, static_cast<unsigned long long>(s + src_bytes));
    }
    uint8_t* ub = CurCore().ub.data();
    for (uint32_t r = 0; r < repeatTime; ++r) {
        for (uint32_t k = 0; k < 8; ++k) {
            T v = LoadAs<T>(ub + s + (r * 8 + k) * sizeof(T));
            uint64_t block = d + (static_cast<uint64_t>(r) * repeatParams.dstRepStride + k * repeatParams.dstBlkStride) * 32;
            for (uint32_t e = 0; e < 32 / sizeof(T); ++e) {
                StoreAs(ub + block + e * sizeof(T), v);
            }
            MarkWritten(static_cast<uint32_t>(block), 32);
        }
    }
    St().vector_instructions += 1;
    St().vector_repeats += repeatTime;
}

}  // namespace AscendC

// ---- PairReduceSum / ReducePairElem, the reduction special registers -------------------------

namespace fusedsl_cpu {

// Each repeat adds lanes (2k, 2k+1) into result k (lanes/2 results, 128 bytes); dstRepStride
// counts those 128-byte groups.  A pair with no selected lane is not written (2201, 2002).
template <typename T>
inline void PairReduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const Mask& m_all,
                       int32_t repeatTime, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
    CheckApi("ReducePairElem", TypeName<T>());
    CheckRepeatTime(api, repeatTime, 255);
    CheckStride(api, "dstRepStride", dstRepStride);
    CheckStride(api, "srcBlkStride", srcBlkStride);
    CheckStride(api, "srcRepStride", srcRepStride);
    if (dstRepStride == 0 && Target().arch == 1001) {
        Fail("%s: dstRepStride = 0 is not supported on %s", api, Target().name);
    }
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 0, sizeof(T));
    if (EmptyReduce(api, m_all, repeatTime)) {
        return;
    }
    constexpr uint32_t lanes = LanesOf<T>();
    repeatTime = static_cast<int32_t>(EffectiveRepeats(m_all, lanes, static_cast<uint64_t>(repeatTime)));
    uint64_t last = static_cast<uint64_t>(repeatTime - 1) * dstRepStride * 128 + 128;
    uint32_t d = ReduceDst(api, dst, last, sizeof(T));
    std::vector<std::pair<uint64_t, double>> outs;
    for (int32_t r = 0; r < repeatTime; ++r) {
        const Mask m = RepeatMask(m_all, lanes, r);
        RepeatLanes l = ReadRepeat(api, src, s, m, r, srcBlkStride, srcRepStride);
        for (uint32_t k = 0; k < lanes / 2; ++k) {
            bool a = (m.bits[(2 * k) / 64] >> ((2 * k) % 64)) & 1;
            bool b = (m.bits[(2 * k + 1) / 64] >> ((2 * k + 1) % 64)) & 1;
            if (a || b) {
                outs.push_back({d + static_cast<uint64_t>(r) * dstRepStride * 128 + k * sizeof(T),
                                RoundTo<T>(l.all[2 * k] + l.all[2 * k + 1])});
            }
        }
    }
    uint8_t* ub = CurCore().ub.data();
    for (auto& o : outs) {
        StoreAs(ub + o.first, FromCompute<T>(o.second));
        MarkWritten(static_cast<uint32_t>(o.first), sizeof(T));
    }
    St().vector_instructions += 1;
    St().vector_repeats += static_cast<uint64_t>(repeatTime);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// Mixed operand types are common (DivCeil(n * sizeof(T), 32)): the result is their common type.
template <typename T, typename U>
constexpr std::common_type_t<T, U> DivCeil(T a, U b) {
    using C = std::common_type_t<T, U>;
    return (static_cast<C>(a) + static_cast<C>(b) - 1) / static_cast<C>(b);
}

template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::PairReduce("PairReduceSum", dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>("PairReduceSum", mask),
                            repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::PairReduce("PairReduceSum", dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>("PairReduceSum", mask),
                            repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

// ReducePairElem.md: sums only (ReduceType::SUM), mask before repeatTime.
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true, typename M>
inline void ReducePairElemImpl(const LocalTensor<T>& dst, const LocalTensor<U>& src, M mask, const int32_t repeatTime,
                               const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    static_assert(std::is_same_v<T, U>, "ReducePairElem: dst and src must have the same element type");
    fusedsl_cpu::PairReduce("ReducePairElem", dst, src, fusedsl_cpu::ReduceMaskOf<T, isSetMask>("ReducePairElem", mask),
                            repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    ReducePairElemImpl<reduceType, T, U, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                                                    srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    ReducePairElemImpl<reduceType, T, U, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                                                    srcRepStride);
}

// The last whole-tensor ReduceSum's result.
template <typename T>
inline T GetReduceRepeatSumSpr(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    return fusedsl_cpu::FromCompute<T>(fusedsl_cpu::CurCore().spr_sum);
}

// The last ReduceRepeat MAX/MIN winner over all repeats (value, index within its repeat), or
// the last ReduceMax/ReduceMin value.  The (value, index) form is 2201's, the value form 2002's.
template <typename T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if (fusedsl_cpu::Target().arch != 2201) {
        fusedsl_cpu::Fail("GetReduceRepeatMaxMinSpr(value, index) is not available on %s", fusedsl_cpu::Target().name);
    }
    maxMinValue = fusedsl_cpu::FromCompute<T>(fusedsl_cpu::CurCore().spr_value);
    maxMinIndex = fusedsl_cpu::IndexAsValue<T>(fusedsl_cpu::CurCore().spr_index);
}

template <typename T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if (fusedsl_cpu::Target().arch != 2002) {
        fusedsl_cpu::Fail("GetReduceRepeatMaxMinSpr(value) is not available on %s", fusedsl_cpu::Target().name);
    }
    maxMinValue = fusedsl_cpu::FromCompute<T>(fusedsl_cpu::CurCore().spr_value);
}

}  // namespace AscendC
