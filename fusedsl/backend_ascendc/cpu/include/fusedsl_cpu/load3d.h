// LoadData (卷积数据搬运) v2: LoadData(dst, src, LoadData3DParamsV2<T>) on Ascend910B and Ascend310P
// (asc-devkit docs: 矩阵计算的搬入/LoadData_3D, and the pseudo-code its page links,
// examples/.../load_data_l12l0/scripts/load3d.py, read for the layouts).
//
// src is an NC1HWC0 feature map in L1 (C1 = channelSize / C0 blocks of l1H x l1W pixels of C0 =
// 32 B / sizeof(T) channels).  The instruction unfolds it (image to column): row m of the matrix
// is output pixel (m / Wout, m % Wout), column k is (c1, kh, kw, c0) in that order, k = ((c1 * Kh
// + kh) * Kw + kw) * C0 + c0; the value is the input pixel (oh * strideH + kh * dilationH - top,
// ow * strideW + kw * dilationW - left) of channel c1 * C0 + c0, or padValue outside the map.  The
// mExtension x kExtension block at (mStartPt, kStartPt) goes to:
//   L0A:                 "Zz": fractal (m / 16, k / C0) is number (m / 16) * K1 + k / C0, 16 rows
//                        of C0, row-major (K1 = kExtension / C0);
//   L0A with enTranspose the block holds A^T (rows = the cube's K, columns its M) and L0A gets A
//                        in Zz: 2-byte types transpose each 16 x 16 fractal, 4-byte ones build
//                        16 x 8 fractals from two 8-row halves;
//   L0B:                 "Zn" (always transposed): the block is B (rows K, columns N); fractal
//                        (k / C0, n / 16) holds 16 n-rows of C0 k values.
// Rows past mExtension up to the next 16 and the 4-byte forms' columns past kExtension up to the
// next 16 are written as zeros (their results are never moved out).  L1 bytes nothing wrote may be
// unfolded: the L0 elements they give stay "never written" for the next reader (Mmad) to check.  Small-channel layouts
// (channelSize not a multiple of C0), int4b_t, fMatrixCtrl and enSmallK are not modelled and are
// refused by name; so are the forms the page excludes on Ascend910B (b8 into L0B, b8 transposed
// into L0A).  The load runs in program order like the rest of the cube API.
//
// The load's registers (矩阵搬入辅助配置接口): SetFmatrix sets the feature map (l1H, l1W, padList) a load
// with IsResetLoad3dConfig::isSetFMatrix false, and every LoadData3DParamsV2Pro load, reads (a load with
// isSetFMatrix true sets it from its parameters); SetLoadDataPaddingValue the pad value likewise
// (isSetPadding); SetLoadDataBoundary an L1 boundary past which source reads wrap to L1's start (its page:
// the source must start inside it, at least 1024 bytes, 0 = none); SetLoadDataRepeat's repeat count, of
// which 1 is modelled.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "fusedsl_cpu/cube.h"

namespace AscendC {

constexpr int32_t PAD_SIZE = 4;   // padList: left, right, top, bottom

struct IsResetLoad3dConfig {
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

template <typename T>
struct LoadData3DParamsV2 {
    LoadData3DParamsV2() = default;
    LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], uint16_t l1HIn, uint16_t l1WIn, uint16_t channelSizeIn,
                       uint16_t kExtensionIn, uint16_t mExtensionIn, uint16_t kStartPtIn, uint16_t mStartPtIn,
                       uint8_t strideWIn, uint8_t strideHIn, uint8_t filterWIn, uint8_t filterHIn,
                       uint8_t dilationFilterWIn, uint8_t dilationFilterHIn, bool enTransposeIn, bool enSmallKIn,
                       T padValueIn, bool filterSizeWIn = false, bool filterSizeHIn = false, bool fMatrixCtrlIn = false)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn) {
        for (int i = 0; i < PAD_SIZE; ++i) {
            padList[i] = padListIn[i];
        }
    }
    uint8_t padList[PAD_SIZE] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue{};
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

// The v2 load with its block and filter packed (the LoadData page, table 5): the feature map's size and
// padding come from SetFmatrix, the pad value from SetLoadDataPaddingValue.
struct LoadData3DParamsV2Pro {
    LoadData3DParamsV2Pro() = default;
    LoadData3DParamsV2Pro(uint16_t channelSizeIn, bool enTransposeIn, bool enSmallKIn, bool filterSizeWIn,
                          bool filterSizeHIn, bool fMatrixCtrlIn, uint64_t extConfigIn, uint64_t filterConfigIn)
        : channelSize(channelSizeIn), enTranspose(enTransposeIn), enSmallK(enSmallKIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn), extConfig(extConfigIn),
          filterConfig(filterConfigIn) {}
    uint16_t channelSize = 0;
    bool enTranspose = false;
    bool enSmallK = false;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    uint64_t extConfig = 0;   // mStartPt << 48 | kStartPt << 32 | mExtension << 16 | kExtension
    uint64_t filterConfig = 0X10101010101;   // dilationH << 40 | dilationW << 32 | filterH << 24 | filterW << 16 |
                                             // strideH << 8 | strideW
};

enum class FmatrixMode : uint8_t {
    FMATRIX_LEFT = 0,
    FMATRIX_RIGHT = 1,
};

struct LoadDataRepeatParam {
    LoadDataRepeatParam() = default;
    LoadDataRepeatParam(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint8_t reserved = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

// The convolution load's registers are the A2/A3 and 310P AI Core's (their pages: not on 910A).
inline void CheckLoad3dRegisters(const char* api) {
    CheckHasCube(api);
    if (Target().arch != 2201 && Target().arch != 2002) {
        Fail("%s is not available on %s (its page: Atlas A2/A3 and the Atlas 推理系列 AI Core)", api, Target().name);
    }
}

// The element offset in dst of unfolded element (mi, ki) of the block (both from its corner);
// kp is kExtension rounded up to 16, m1 the number of 16-row groups.
template <size_t Size>
inline uint64_t Load3dDstIndex(bool l0b, bool transpose, uint64_t mi, uint64_t ki, uint64_t k1, uint64_t m1,
                               uint64_t kp) {
    constexpr uint64_t c0 = 32 / Size;
    if (!l0b && !transpose) {
        return ((mi / 16) * k1 + ki / c0) * 16 * c0 + (mi % 16) * c0 + ki % c0;
    }
    if constexpr (Size == 2) {
        // a 16 x 16 fractal per (m block, k block), transposed: rows follow k (the cube's M or N)
        uint64_t frac = l0b ? (mi / 16) * k1 + ki / 16 : (ki / 16) * m1 + mi / 16;
        return frac * 256 + (ki % 16) * 16 + mi % 16;
    } else {
        // 4-byte: 16 x 8 fractals, each half of a 16-row group (8 rows of the unfolded matrix) apart
        uint64_t half = (mi / 16) * 2 + (mi % 16) / 8;
        if (l0b) {
            return (half * kp + ki) * 8 + mi % 8;
        }
        return (((ki / 16) * m1 * 2 + half) * 16 + ki % 16) * 8 + mi % 8;
    }
}

template <typename T>
inline void LoadData3dV2Unfold(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                               const AscendC::LoadData3DParamsV2<T>& p, int mem, bool pad_known);

template <typename T>
inline void LoadData3dV2(const LocalTensor<T>& dst, const LocalTensor<T>& src, const AscendC::LoadData3DParamsV2<T>& p,
                         const AscendC::IsResetLoad3dConfig& cfg) {
    const char* api = "LoadData(L1->L0, LoadData3DParamsV2)";
    CheckHasCube(api);
    const TargetInfo& t = Target();
    if (t.arch != 2201 && t.arch != 2002) {
        Fail("%s: the v2 convolution load is not available on %s (the page: Atlas 训练系列 has v1 only)", api, t.name);
    }
    const int mem = MemOfPosition(dst.GetPosition());
    if (mem != kMemL0A && mem != kMemL0B) {
        Fail("%s: dst is a %s tensor; the load goes from L1 to A2 (L0A) or B2 (L0B)", api,
             PositionName(dst.GetPosition()));
    }
    const bool l0b = mem == kMemL0B;
    constexpr bool b8 = sizeof(T) == 1;
    constexpr bool b32 = sizeof(T) == 4;
    if (std::is_same_v<T, AscendC::int4b_t>) {
        Fail("%s: int4b_t feature maps are not modelled by fusedsl's CPU implementation", api);
    }
    if (b32 && t.arch == 2002) {
        Fail("%s: %s is not supported on %s (int8_t, uint8_t, half)", api, TypeName<T>(), t.name);
    }
    if (b8 && l0b) {
        Fail("%s: %s into L0B is not supported (the page: L1 Buffer->L0B Buffer does not take b4/b8 data)", api,
             TypeName<T>());
    }
    if (b8 && p.enTranspose && !l0b) {
        Fail("%s: enTranspose with %s into L0A is not supported (the page: the transposed L1->L0A path does not take "
             "b8 data)", api, TypeName<T>());
    }
    Core& core = CurCore();
    if (core.load3d_repeat != 1) {
        Fail("%s: SetLoadDataRepeat set repeatTime = %u; repeated convolution loads are not modelled by fusedsl's "
             "CPU implementation (set it back to 1)", api, core.load3d_repeat);
    }
    // The feature map and pad value: this load's own (which it also leaves in the registers), or the registers'
    // (IsResetLoad3dConfig false: what SetFmatrix / SetLoadDataPaddingValue set).
    AscendC::LoadData3DParamsV2<T> q_reg;
    const AscendC::LoadData3DParamsV2<T>* pp = &p;
    if (!cfg.isSetFMatrix || !cfg.isSetPadding) {
        q_reg = p;
        pp = &q_reg;
    }
    Core::Fmatrix& fm = core.fmatrix[p.fMatrixCtrl ? 1 : 0];
    if (cfg.isSetFMatrix) {
        fm.set = true;
        fm.h = p.l1H;
        fm.w = p.l1W;
        std::memcpy(fm.pad, p.padList, sizeof fm.pad);
    } else {
        if (!fm.set) {
            Fail("%s: IsResetLoad3dConfig::isSetFMatrix is false, so the feature map comes from SetFmatrix, which "
                 "this core never called", api);
        }
        q_reg.l1H = fm.h;
        q_reg.l1W = fm.w;
        std::memcpy(q_reg.padList, fm.pad, sizeof fm.pad);
    }
    bool pad_known = true;
    if (cfg.isSetPadding) {
        core.load3d_pad_set = true;
        std::memcpy(core.load3d_pad, &p.padValue, sizeof(T));
    } else if (core.load3d_pad_set) {
        std::memcpy(&q_reg.padValue, core.load3d_pad, sizeof(T));
    } else {
        pad_known = false;   // an error only if a padded position is read
    }
    const AscendC::LoadData3DParamsV2<T>& pr = *pp;
    LoadData3dV2Unfold(api, dst, src, pr, mem, pad_known);
}

template <typename T>
FUSEDSL_CPU_HOT inline void LoadData3dV2Unfold(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                               const AscendC::LoadData3DParamsV2<T>& p, int mem, bool pad_known) {
    const bool l0b = mem == kMemL0B;
    constexpr bool b32 = sizeof(T) == 4;
    if (p.fMatrixCtrl) {
        Fail("%s: fMatrixCtrl = true (the right matrix's feature map); the page allows only false", api);
    }
    if (p.enSmallK) {
        Fail("%s: enSmallK is no longer supported (the page)", api);
    }
    const uint32_t kh = p.filterH + (p.filterSizeH ? 256u : 0u);
    const uint32_t kw = p.filterW + (p.filterSizeW ? 256u : 0u);
    if (p.l1H == 0 || p.l1W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0 || kh == 0 ||
        kw == 0) {
        return;   // the page: any of these 0 makes the instruction a NOP
    }
    constexpr uint32_t c0 = 32 / sizeof(T);
    if (p.channelSize % c0 != 0) {
        Fail("%s: channelSize = %u is not a multiple of C0 = %u for %s; the small-channel layouts are not modelled",
             api, p.channelSize, c0, TypeName<T>());
    }
    if (p.kStartPt % c0 != 0) {
        Fail("%s: kStartPt = %u must be a multiple of %u for %s (the page)", api, p.kStartPt, c0, TypeName<T>());
    }
    if (p.strideW == 0 || p.strideH == 0 || p.dilationFilterW == 0 || p.dilationFilterH == 0) {
        Fail("%s: strideW/strideH/dilationFilterW/dilationFilterH must be at least 1 (got %u, %u, %u, %u)", api,
             p.strideW, p.strideH, p.dilationFilterW, p.dilationFilterH);
    }
    const uint32_t left = p.padList[0], right = p.padList[1], top = p.padList[2], bottom = p.padList[3];
    const int64_t hp = static_cast<int64_t>(p.l1H) + top + bottom, wp = static_cast<int64_t>(p.l1W) + left + right;
    const int64_t dkh = static_cast<int64_t>(kh - 1) * p.dilationFilterH + 1;
    const int64_t dkw = static_cast<int64_t>(kw - 1) * p.dilationFilterW + 1;
    if (hp < dkh || wp < dkw) {
        Fail("%s: the dilated %u x %u filter does not fit the padded %lld x %lld feature map", api, kh, kw,
             static_cast<long long>(hp), static_cast<long long>(wp));
    }
    const uint64_t hout = static_cast<uint64_t>((hp - dkh) / p.strideH + 1);
    const uint64_t wout = static_cast<uint64_t>((wp - dkw) / p.strideW + 1);
    const uint64_t rows = hout * wout;
    const uint64_t c1n = p.channelSize / c0;
    const uint64_t cols = c1n * kh * kw * c0;
    if (p.mStartPt + static_cast<uint64_t>(p.mExtension) > rows) {
        Fail("%s: rows [%u, %u) of the unfolded matrix, which has %llu (%llu x %llu output positions)", api,
             p.mStartPt, p.mStartPt + p.mExtension, static_cast<unsigned long long>(rows),
             static_cast<unsigned long long>(hout), static_cast<unsigned long long>(wout));
    }
    if (p.kStartPt + static_cast<uint64_t>(p.kExtension) > cols) {
        Fail("%s: columns [%u, %u) of the unfolded matrix, which has %llu (channels x filter)", api, p.kStartPt,
             p.kStartPt + p.kExtension, static_cast<unsigned long long>(cols));
    }
    if (p.kExtension % c0 != 0) {
        Fail("%s: kExtension = %u must be a multiple of %u for %s (the page)", api, p.kExtension, c0, TypeName<T>());
    }
    if (!b32 && p.mExtension % 16 != 0 && p.mStartPt + static_cast<uint64_t>(p.mExtension) != rows) {
        Fail("%s: mExtension = %u must be a multiple of 16 unless the block reaches the last row (the page)", api,
             p.mExtension);
    }
    const uint64_t m1 = (p.mExtension + 15u) / 16u;
    const uint64_t k1 = p.kExtension / c0;
    const uint64_t kp = (b32 && (p.enTranspose || l0b)) ? (p.kExtension + 15u) / 16u * 16u : p.kExtension;
    const uint64_t dst_elems = m1 * 16 * kp;
    const uint64_t src_bytes = c1n * p.l1H * p.l1W * c0 * sizeof(T);
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), src_bytes, kMemL1);
    // SetLoadDataBoundary: L1 bytes past the boundary are read from L1's start again
    const uint64_t boundary = CurCore().l1_boundary;
    const uint64_t src_l1 = s - CurCore().local_at[kMemL1];
    if (boundary != 0 && src_l1 >= boundary) {
        Fail("%s: src starts at L1 byte %llu, past the boundary SetLoadDataBoundary(%llu) set; the source must start "
             "inside it (its page)", api, static_cast<unsigned long long>(src_l1),
             static_cast<unsigned long long>(boundary));
    }
    // The layout's full extent is written, also past a LocalTensor declared shorter (WritableLength).
    const uint64_t need = dst_elems * sizeof(T);
    const uint64_t have = WritableLength(api, dst.fs_addr, dst.GetLength(), need, mem);
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, have, need, mem, 512);
    Core& c = CurCore();
    const bool transpose = l0b || p.enTranspose;
    std::vector<T> out(dst_elems, T{});
    // Written marks travel with the data (as for a UB->UB move): a unit that unfolds L1 bytes nothing
    // wrote (the padding rows an ND2NZ copy leaves, which CANN's mmad_load3dv2 reads along) gives L0
    // bytes a later Mmad may not read.
    std::vector<uint8_t> defined(dst_elems, 1);
    const uint8_t* l1 = c.local.data() + c.local_at[kMemL1];
    const uint8_t* l1_written = c.local_written.data() + c.local_at[kMemL1];
    for (uint64_t mi = 0; mi < p.mExtension; ++mi) {
        const uint64_t m = p.mStartPt + mi;
        const int64_t oh = static_cast<int64_t>(m / wout), ow = static_cast<int64_t>(m % wout);
        // kStartPt and kExtension are whole C0 blocks (checked above): one channel block's position per c0 columns
        for (uint64_t ki = 0; ki < p.kExtension; ++ki) {
            const uint64_t k = p.kStartPt + ki;
            const uint64_t kc = k / c0, cc = k % c0;
            const uint64_t c1 = kc / (kh * kw), fh = (kc % (kh * kw)) / kw, fw = kc % kw;
            const int64_t ih = oh * p.strideH + static_cast<int64_t>(fh) * p.dilationFilterH - top;
            const int64_t iw = ow * p.strideW + static_cast<int64_t>(fw) * p.dilationFilterW - left;
            const bool inside = ih >= 0 && iw >= 0 && ih < p.l1H && iw < p.l1W;
            if (inside && cc == 0 && boundary == 0) {   // the whole block: c0 consecutive elements of one L1 row
                const uint64_t at = ((c1 * p.l1H + static_cast<uint64_t>(ih)) * p.l1W + static_cast<uint64_t>(iw)) * c0;
                const uint64_t byte = src_l1 + at * sizeof(T);
                for (uint64_t e = 0; e < c0; ++e) {
                    T v;
                    std::memcpy(&v, l1 + byte + e * sizeof(T), sizeof(T));
                    uint8_t def = 1;
                    for (size_t q = 0; q < sizeof(T); ++q) {
                        def &= l1_written[byte + e * sizeof(T) + q] != 0 ? 1 : 0;
                    }
                    const uint64_t o = Load3dDstIndex<sizeof(T)>(l0b, transpose, mi, ki + e, k1, m1, kp);
                    out[o] = v;
                    defined[o] = def;
                }
                ki += c0 - 1;
                continue;
            }
            T v = p.padValue;
            uint8_t def = 1;
            if (ih >= 0 && iw >= 0 && ih < p.l1H && iw < p.l1W) {
                const uint64_t at = ((c1 * p.l1H + static_cast<uint64_t>(ih)) * p.l1W + static_cast<uint64_t>(iw)) * c0 + cc;
                uint64_t byte = src_l1 + at * sizeof(T);
                if (boundary != 0) {
                    byte %= boundary;
                }
                std::memcpy(&v, l1 + byte, sizeof(T));
                for (size_t q = 0; q < sizeof(T); ++q) {   // (not memchr: a call per element)
                    def &= l1_written[byte + q] != 0 ? 1 : 0;
                }
            } else if (!pad_known) {
                Fail("%s: the unfolded block reads the padding, and with IsResetLoad3dConfig::isSetPadding false its "
                     "value comes from SetLoadDataPaddingValue, which this core never called", api);
            }
            const uint64_t o = Load3dDstIndex<sizeof(T)>(l0b, transpose, mi, ki, k1, m1, kp);
            out[o] = v;
            defined[o] = def;
        }
    }
    std::memcpy(c.local.data() + d, out.data(), dst_elems * sizeof(T));
    uint8_t* written = c.local_written.data() + d;
    for (uint64_t i = 0; i < dst_elems * sizeof(T); ++i) {
        written[i] = defined[i / sizeof(T)];
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

// int4b_t: whole 64-element (32-byte) channel blocks unfold exactly as int8_t's 32-element ones, so the
// load runs as int8_t with the element counts along K halved (channelSize, kExtension, kStartPt; asc-devkit
// kernel_operator_mm_check.h counts an int4b_t block as 64 elements, ChannelSizeRemainder) and the pad
// value repeated in both nibbles.  Into L0A only, untransposed (the page: L1->L0B and the transposed L0A
// path take no b4/b8 data).
template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<T>& p,
                     FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    if constexpr (fusedsl_cpu::kIsB4<T>) {
        using namespace fusedsl_cpu;
        const char* api = "LoadData(L1->L0, LoadData3DParamsV2)";
        CheckHasCube(api);
        if (Target().arch != 2201) {
            Fail("%s: int4b_t feature maps are not supported on %s (Atlas A2/A3 only)", api, Target().name);
        }
        if (MemOfPosition(dst.GetPosition()) != kMemL0A || p.enTranspose) {
            Fail("%s: int4b_t loads into A2 (L0A) without enTranspose only (the page: L1->L0B and the transposed "
                 "L1->L0A path do not take b4 data)", api);
        }
        if (p.channelSize % 64 != 0 || p.kExtension % 2 != 0 || p.kStartPt % 2 != 0) {
            Fail("%s: int4b_t with channelSize = %u, kExtension = %u, kStartPt = %u: fusedsl models channelSize as a "
                 "multiple of 64 (whole 32-byte channel blocks) and even kExtension / kStartPt (the small-channel "
                 "layouts are not modelled)", api, p.channelSize, p.kExtension, p.kStartPt);
        }
        LoadData3DParamsV2<int8_t> q;
        for (int i = 0; i < PAD_SIZE; ++i) {
            q.padList[i] = p.padList[i];
        }
        q.l1H = p.l1H;
        q.l1W = p.l1W;
        q.channelSize = p.channelSize / 2;
        q.kExtension = p.kExtension / 2;
        q.mExtension = p.mExtension;
        q.kStartPt = p.kStartPt / 2;
        q.mStartPt = p.mStartPt;
        q.strideW = p.strideW;
        q.strideH = p.strideH;
        q.filterW = p.filterW;
        q.filterH = p.filterH;
        q.dilationFilterW = p.dilationFilterW;
        q.dilationFilterH = p.dilationFilterH;
        q.enTranspose = p.enTranspose;
        q.enSmallK = p.enSmallK;
        q.padValue = static_cast<int8_t>((p.padValue.storage & 0xF) * 0x11);
        q.filterSizeW = p.filterSizeW;
        q.filterSizeH = p.filterSizeH;
        q.fMatrixCtrl = p.fMatrixCtrl;
        LoadData3dV2(dst.template ReinterpretCast<int8_t>(), src.template ReinterpretCast<int8_t>(), q, defaultConfig);
    } else {
        fusedsl_cpu::LoadData3dV2(dst, src, p, defaultConfig);
    }
}

// The v2 load with packed parameters: the feature map from SetFmatrix (the left one: fMatrixCtrl must be
// false), the pad value from SetLoadDataPaddingValue.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2Pro& p,
                     FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    static_assert(!fusedsl_cpu::kIsB4<T>, "LoadData3DParamsV2Pro with int4b_t is not modelled by fusedsl's CPU API");
    LoadData3DParamsV2<T> q;
    q.channelSize = p.channelSize;
    q.kExtension = static_cast<uint16_t>(p.extConfig & 0xFFFF);
    q.mExtension = static_cast<uint16_t>((p.extConfig >> 16) & 0xFFFF);
    q.kStartPt = static_cast<uint16_t>((p.extConfig >> 32) & 0xFFFF);
    q.mStartPt = static_cast<uint16_t>((p.extConfig >> 48) & 0xFFFF);
    q.strideW = static_cast<uint8_t>(p.filterConfig & 0xFF);
    q.strideH = static_cast<uint8_t>((p.filterConfig >> 8) & 0xFF);
    q.filterW = static_cast<uint8_t>((p.filterConfig >> 16) & 0xFF);
    q.filterH = static_cast<uint8_t>((p.filterConfig >> 24) & 0xFF);
    q.dilationFilterW = static_cast<uint8_t>((p.filterConfig >> 32) & 0xFF);
    q.dilationFilterH = static_cast<uint8_t>((p.filterConfig >> 40) & 0xFF);
    q.enTranspose = p.enTranspose;
    q.enSmallK = p.enSmallK;
    q.filterSizeW = p.filterSizeW;
    q.filterSizeH = p.filterSizeH;
    q.fMatrixCtrl = p.fMatrixCtrl;
    static constexpr IsResetLoad3dConfig kFromRegisters = {false, false};
    fusedsl_cpu::LoadData3dV2(dst, src, q, kFromRegisters);
}

// SetFmatrix: the feature map (height, width, padding left/right/top/bottom) of the left or right matrix.
inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode,
                       FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    fusedsl_cpu::CheckLoad3dRegisters("SetFmatrix");
    fusedsl_cpu::Core::Fmatrix& fm = fusedsl_cpu::CurCore().fmatrix[fmatrixMode == FmatrixMode::FMATRIX_RIGHT ? 1 : 0];
    fm.set = true;
    fm.h = l1H;
    fm.w = l1W;
    std::memcpy(fm.pad, padList, sizeof fm.pad);
}

template <typename T>
inline void SetLoadDataPaddingValue(const T padValue, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    static_assert(sizeof(T) <= 4, "SetLoadDataPaddingValue takes a value of at most 4 bytes");
    fusedsl_cpu::CheckLoad3dRegisters("SetLoadDataPaddingValue");
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.load3d_pad_set = true;
    std::memset(c.load3d_pad, 0, sizeof c.load3d_pad);
    std::memcpy(c.load3d_pad, &padValue, sizeof(T));
}

// The L1 boundary in bytes (the v2 load's unit; 0 = none): source bytes past it are read from L1's start.
inline void SetLoadDataBoundary(uint32_t boundaryValue, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    const char* api = "SetLoadDataBoundary";
    fusedsl_cpu::CheckLoad3dRegisters(api);
    if (boundaryValue != 0 && boundaryValue < 1024) {
        fusedsl_cpu::Fail("%s(%u): a boundary is at least 1024 bytes (its page: 1-1023 is undefined behaviour; 0 "
                          "means none)", api, boundaryValue);
    }
    if (boundaryValue > fusedsl_cpu::LocalMemBytes(fusedsl_cpu::kMemL1)) {
        fusedsl_cpu::Fail("%s(%u): past the end of %s's %u-byte L1", api, boundaryValue, fusedsl_cpu::Target().name,
                          fusedsl_cpu::LocalMemBytes(fusedsl_cpu::kMemL1));
    }
    fusedsl_cpu::CurCore().l1_boundary = boundaryValue;
}

inline void SetLoadDataRepeat(const LoadDataRepeatParam& repeatParams, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    const char* api = "SetLoadDataRepeat";
    fusedsl_cpu::CheckLoad3dRegisters(api);
    if (repeatParams.repeatTime == 0 || repeatParams.repeatMode > 1) {
        fusedsl_cpu::Fail("%s: repeatTime = %u, repeatMode = %u; repeatTime is 1-255 and repeatMode 0 or 1 (the "
                          "LoadData page)", api, repeatParams.repeatTime, repeatParams.repeatMode);
    }
    fusedsl_cpu::CurCore().load3d_repeat = repeatParams.repeatTime;
}

}  // namespace AscendC
