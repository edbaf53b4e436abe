// fusedsl CPU implementation of the Ascend C API: the filters DropOut and Select with a bytes
// mask (asc-devkit docs 高阶API/数据过滤).
//
// DropOut over [firstAxis, srcLastAxis]: dst = mask ? src * (1 / keepProb) : 0.  The mask is
// read per byte (byte modes: a nonzero byte keeps the element) or per bit (bit modes: bit j % 8 of
// byte j / 8, least significant first), each mask row maskLastAxis bytes long of which the first
// srcLastAxis bytes / bits are valid (the rest "dirty" padding).  dropOutMode 0 infers the mode
// from the shape as the page says: equal last axes byte mode, a longer mask row byte mode with
// padding, srcLastAxis / 8 bytes bit mode, more bit mode with padding.
// Select(dst, src, scalar, mask, tmp, info): dst = mask == 0 ? src : scalar (and the mirrored
// form), mask rows maskLastAxis elements of which the first srcLastAxis count.
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"

namespace AscendC {

struct DropOutShapeInfo {
    DropOutShapeInfo() {}
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

struct SelectWithBytesMaskShapeInfo {
    SelectWithBytesMaskShapeInfo() {}
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
inline void DropOutRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                       const LocalTensor<uint8_t>& mask, const LocalTensor<uint8_t>* tmp, float keep_prob,
                       const AscendC::DropOutShapeInfo& info, uint32_t mode) {
    const char* api = "DropOut";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t rows = info.firstAxis, w = info.srcLastAxis, mw = info.maskLastAxis;
    if (rows == 0 || w == 0 || mw == 0) {
        Fail("%s: info firstAxis %u, srcLastAxis %u, maskLastAxis %u must all be non-zero", api, rows, w, mw);
    }
    if (!(keep_prob > 0.0f && keep_prob < 1.0f)) {
        Fail("%s: keepProb = %g; it must be in (0, 1) (the API page)", api, static_cast<double>(keep_prob));
    }
    if (mode == 0) {
        mode = mw == w ? 2 : mw > w ? 1 : mw * 8 == w ? 3 : 4;
    }
    if (mode > 4) {
        Fail("%s: dropOutMode = %u; it must be 0 (inferred) to 4", api, mode);
    }
    bool bits = mode >= 3;
    if ((bits && mw * 8 < w) || (!bits && mw < w)) {
        Fail("%s: maskLastAxis = %u bytes hold fewer than srcLastAxis = %u %s (mode %u)", api, mw, w,
             bits ? "bits" : "bytes", mode);
    }
    uint64_t n = static_cast<uint64_t>(rows) * w;
    AdvSpan ss{"srcLocal", AdvIn(api, "srcLocal", src, n), n * sizeof(T)};
    AdvSpan sm{"maskLocal", AdvIn(api, "maskLocal", mask, static_cast<uint64_t>(rows) * mw),
               static_cast<uint64_t>(rows) * mw};
    AdvSpan sd{"dstLocal", AdvOut(api, "dstLocal", dst, n), n * sizeof(T)};
    AdvNoOverlap(api, sd, sm);
    if (!(sd.off == ss.off && sd.bytes == ss.bytes)) {   // the page lets dst reuse src
        AdvNoOverlap(api, sd, ss);
    }
    std::vector<uint8_t> m(Bytes(mask), Bytes(mask) + sm.bytes);   // read before the scratch is clobbered
    adv::TmpRange need = adv::DropOut(n);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sm}, "GetDropOutMaxMinTmpSize");
    float scale = 1.0f / keep_prob;
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < w; ++j) {
            const uint8_t* row = m.data() + static_cast<uint64_t>(r) * mw;
            bool keep = bits ? ((row[j / 8] >> (j % 8)) & 1) != 0 : row[j] != 0;
            uint64_t i = static_cast<uint64_t>(r) * w + j;
            double v = keep ? AdvRound<T>(static_cast<double>(static_cast<float>(AdvLoad<T>(Bytes(src), i)) *
                                                              static_cast<float>(AdvRound<T>(scale))))
                            : 0.0;
            AdvStore<T>(Bytes(dst), i, v);
        }
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(sd.bytes);
}

template <typename T, typename U>
inline void SelectBytesMaskRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& src, double scalar,
                               bool tensor_on_zero, const LocalTensor<U>& mask, const LocalTensor<uint8_t>& tmp,
                               const AscendC::SelectWithBytesMaskShapeInfo& info, bool reuse_mask) {
    const char* api = "Select (bytes mask)";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t rows = info.firstAxis, w = info.srcLastAxis, mw = info.maskLastAxis;
    if (rows == 0 || w == 0 || mw < w) {
        Fail("%s: info firstAxis %u, srcLastAxis %u, maskLastAxis %u: the axes must be non-zero and the mask's last "
             "axis at least the source's (the API page)", api, rows, w, mw);
    }
    if (w * sizeof(T) % 32 != 0 || mw * sizeof(U) % 32 != 0 || mw % 16 != 0) {
        Fail("%s: srcLastAxis %u must be 32-byte aligned and maskLastAxis %u 32-byte aligned and a multiple of 16 "
             "elements (the API page)", api, w, mw);
    }
    uint64_t n = static_cast<uint64_t>(rows) * w;
    uint64_t mn = static_cast<uint64_t>(rows) * mw;
    AdvSpan ss{"src", AdvIn(api, "src", src, n), n * sizeof(T)};
    AdvSpan sm{"mask", AdvIn(api, "mask", mask, mn), mn * sizeof(U)};
    AdvSpan sd{"dst", AdvOut(api, "dst", dst, n), n * sizeof(T)};
    AdvNoOverlap(api, sd, sm);
    if (!(sd.off == ss.off && sd.bytes == ss.bytes)) {   // the page lets dst reuse the source
        AdvNoOverlap(api, sd, ss);
    }
    std::vector<uint8_t> m(Bytes(mask), Bytes(mask) + sm.bytes);
    adv::TmpRange need = adv::SelectBytesMask(n, mw != w, sizeof(U), reuse_mask);
    AdvScratch(api, &tmp, need.min, need.max, {sd, ss, sm}, "GetSelectMaxMinTmpSize");
    double s = AdvRound<T>(scalar);
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < w; ++j) {
            U mv;
            std::memcpy(&mv, m.data() + (static_cast<uint64_t>(r) * mw + j) * sizeof(U), sizeof(U));
            bool zero = mv == U(0);
            uint64_t i = static_cast<uint64_t>(r) * w + j;
            AdvStore<T>(Bytes(dst), i, zero == tensor_on_zero ? AdvLoad<T>(Bytes(src), i) : s);
        }
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(sd.bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                    const LocalTensor<uint8_t>& maskLocal, const float keepProb, const DropOutShapeInfo& info,
                    FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DropOutRun(fs_site, dstLocal, srcLocal, maskLocal, nullptr, keepProb, info, dropOutMode);
}
template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                    const LocalTensor<uint8_t>& maskLocal, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const float keepProb, const DropOutShapeInfo& info, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DropOutRun(fs_site, dstLocal, srcLocal, maskLocal, &sharedTmpBuffer, keepProb, info, dropOutMode);
}

template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, T src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info,
                   FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SelectBytesMaskRun(fs_site, dst, src0, fusedsl_cpu::ToCompute(src1), true, mask, sharedTmpBuffer,
                                    info, isReuseMask);
}
template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, T src0, const LocalTensor<T>& src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info,
                   FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SelectBytesMaskRun(fs_site, dst, src1, fusedsl_cpu::ToCompute(src0), false, mask, sharedTmpBuffer,
                                    info, isReuseMask);
}

}  // namespace AscendC
