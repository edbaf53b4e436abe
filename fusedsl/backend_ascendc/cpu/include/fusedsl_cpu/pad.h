// fusedsl CPU implementation of the Ascend C API: the Pad/UnPad high-level APIs (width of a
// [height, width] tensor padded to / unpadded from 32-byte rows), with PadTiling/UnPadTiling
// from the host helpers in tiling/pad_tiling.h.
#pragma once

#include "pad_tiling_fields.h"
#include "kernel_utils.h"

namespace AscendC {

struct PadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
    int32_t padValue = 0;
};

struct UnPadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
constexpr bool kPadType = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, half> ||
                          std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, float>;

// The scratch the API needs (GetPadMaxMinTmpSize's minimum): one 32-byte aligned row.
template <typename T>
inline void CheckPadScratch(const char* api, const LocalTensor<uint8_t>* tmp, uint32_t width) {
    if (tmp == nullptr) {
        return;
    }
    uint64_t need = RoundUp(static_cast<uint64_t>(width) * sizeof(T), 32);
    uint32_t t = CheckUb(api, "sharedTmpBuffer", tmp->fs_addr, tmp->GetLength(), 0, 1);
    if (tmp->GetLength() < need) {
        Fail("%s: sharedTmpBuffer has %u bytes; at least %llu are needed (GetPadMaxMinTmpSize/GetUnPadMaxMinTmpSize "
             "minValue)", api, tmp->GetLength(), static_cast<unsigned long long>(need));
    }
    std::memset(CurCore().ub.data() + t, 0xFF, need);   // the API's scratch is clobbered
    MarkWritten(t, need);
}

template <typename T>
inline void PadImpl(const LocalTensor<T>& dst, const LocalTensor<T>& src, const AscendC::PadParams& p,
                    const LocalTensor<uint8_t>* tmp, const AscendC::tiling::PadTiling& t) {
    static_assert(kPadType<T>, "Pad takes int16_t/uint16_t/half/int32_t/uint32_t/float");
    const char* api = "Pad";
    const uint64_t e = sizeof(T);
    if (p.leftPad * e >= 32 || p.rightPad * e >= 32) {
        Fail("Pad: leftPad %u / rightPad %u columns of %s take %llu / %llu bytes; each must be under 32", p.leftPad,
             p.rightPad, TypeName<T>(), static_cast<unsigned long long>(p.leftPad * e),
             static_cast<unsigned long long>(p.rightPad * e));
    }
    const uint32_t h = t.srcHeight;
    const uint32_t w = t.srcWidth;
    const bool aligned = w * e % 32 == 0;
    uint32_t out_w = w;
    if (aligned) {   // case 2: redundant columns past srcOriWidth are overwritten on the right
        if (w == t.srcOriWidth || p.leftPad != 0 || p.rightPad == 0 || t.srcOriWidth + p.rightPad > w) {
            Fail("Pad: the width %u is 32-byte aligned, so only redundant columns past srcOriWidth %u can be padded: "
                 "srcOriWidth < width, leftPad = 0 (got %u), rightPad >= 1 (got %u) and srcOriWidth + rightPad <= "
                 "width", w, t.srcOriWidth, p.leftPad, p.rightPad);
        }
    } else {
        out_w = w + p.leftPad + p.rightPad;
        if (out_w * e % 32 != 0) {
            Fail("Pad: width %u + leftPad %u + rightPad %u = %u columns of %s is not a whole number of 32-byte "
                 "blocks", w, p.leftPad, p.rightPad, out_w, TypeName<T>());
        }
    }
    uint64_t src_bytes = static_cast<uint64_t>(h) * w * e;
    if (src_bytes % 32 != 0) {
        Fail("Pad: the source holds %llu bytes (%u x %u %s); it must be a multiple of 32",
             static_cast<unsigned long long>(src_bytes), h, w, TypeName<T>());
    }
    CheckPadScratch<T>(api, tmp, out_w);
    uint64_t dst_bytes = static_cast<uint64_t>(h) * out_w * e;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), dst_bytes, e);
    uint32_t s = SrcOperand(api, "src", src, static_cast<uint64_t>(h) * w);
    CheckOverlap(api, "src", d, dst_bytes, s, src_bytes);
    T fill = static_cast<T>(p.padValue);
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out(dst_bytes);
    for (uint32_t r = 0; r < h; ++r) {
        for (uint32_t c = 0; c < out_w; ++c) {
            T v = fill;
            if (aligned ? (c < t.srcOriWidth || c >= t.srcOriWidth + p.rightPad)
                        : (c >= p.leftPad && c < p.leftPad + w)) {
                uint32_t sc = aligned ? c : c - p.leftPad;
                v = LoadAs<T>(ub + s + (static_cast<uint64_t>(r) * w + sc) * e);
            }
            StoreAs(out.data() + (static_cast<uint64_t>(r) * out_w + c) * e, v);
        }
    }
    std::memcpy(ub + d, out.data(), dst_bytes);
    MarkWritten(d, dst_bytes);
    CountVector(dst_bytes);
}

template <typename T>
inline void UnPadImpl(const LocalTensor<T>& dst, const LocalTensor<T>& src, const AscendC::UnPadParams& p,
                      const LocalTensor<uint8_t>* tmp, const AscendC::tiling::UnPadTiling& t) {
    static_assert(kPadType<T>, "UnPad takes int16_t/uint16_t/half/int32_t/uint32_t/float");
    const char* api = "UnPad";
    const uint64_t e = sizeof(T);
    const uint32_t h = t.srcHeight;
    const uint32_t w = t.srcWidth;
    if (w * e % 32 != 0) {
        Fail("UnPad: the width %u of %s is not 32-byte aligned; UnPad removes columns from aligned rows", w,
             TypeName<T>());
    }
    if (p.rightPad == 0 || p.rightPad * e >= 32 || p.rightPad >= w) {
        Fail("UnPad: rightPad = %u; it must be at least 1 and take under 32 bytes (%llu here)", p.rightPad,
             static_cast<unsigned long long>(p.rightPad * e));
    }
    if (p.leftPad * e >= 32) {
        Fail("UnPad: leftPad = %u takes %llu bytes; it must be under 32", p.leftPad,
             static_cast<unsigned long long>(p.leftPad * e));
    }
    CheckPadScratch<T>(api, tmp, w);
    const uint32_t out_w = w - p.rightPad;   // leftPad is reserved (UnPad.md: 当前暂不生效)
    uint64_t src_bytes = static_cast<uint64_t>(h) * w * e;
    uint64_t dst_bytes = static_cast<uint64_t>(h) * out_w * e;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), dst_bytes, e);
    uint32_t s = SrcOperand(api, "src", src, static_cast<uint64_t>(h) * w);
    CheckOverlap(api, "src", d, dst_bytes, s, src_bytes);
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> out(dst_bytes);
    for (uint32_t r = 0; r < h; ++r) {
        std::memcpy(out.data() + static_cast<uint64_t>(r) * out_w * e, ub + s + static_cast<uint64_t>(r) * w * e,
                    out_w * e);
    }
    std::memcpy(ub + d, out.data(), dst_bytes);
    MarkWritten(d, dst_bytes);
    CountVector(src_bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                const LocalTensor<uint8_t>& sharedTmpBuffer, PadTiling& tiling, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::PadImpl(dstTensor, srcTensor, padParams, &sharedTmpBuffer, tiling);
}

template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                PadTiling& tiling, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::PadImpl<T>(dstTensor, srcTensor, padParams, nullptr, tiling);
}

template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  LocalTensor<uint8_t>& sharedTmpBuffer, UnPadTiling& tiling, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::UnPadImpl(dstTensor, srcTensor, unPadParams, &sharedTmpBuffer, tiling);
}

template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  UnPadTiling& tiling, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::UnPadImpl<T>(dstTensor, srcTensor, unPadParams, nullptr, tiling);
}

}  // namespace AscendC
