// fusedsl CPU implementation of the Ascend C API: AscendC::Std (the device-side standard library
// subset: type traits, tuple, index sequences), the high-level Fill (GM initialisation) and
// Broadcast ([m, 1] -> [m, k], [1, k] -> [m, k], [1] -> [k]).
#pragma once

#include <tuple>
#include <utility>

#include "adv_common.h"
#include "adv_tmp_sizes.h"

namespace AscendC {
namespace Std {
// The device's std:: subset is the C++ standard's: on the CPU it is the host library's.
using std::add_const;
using std::add_const_t;
using std::add_cv;
using std::add_cv_t;
using std::add_lvalue_reference;
using std::add_lvalue_reference_t;
using std::add_pointer;
using std::add_pointer_t;
using std::add_rvalue_reference;
using std::add_rvalue_reference_t;
using std::add_volatile;
using std::add_volatile_t;
using std::conditional;
using std::conditional_t;
using std::decay;
using std::decay_t;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::forward;
using std::get;
using std::index_sequence;
using std::integral_constant;
using std::is_arithmetic;
using std::is_arithmetic_v;
using std::is_array;
using std::is_array_v;
using std::is_base_of;
using std::is_base_of_v;
using std::is_const;
using std::is_const_v;
using std::is_convertible;
using std::is_convertible_v;
using std::is_floating_point;
using std::is_floating_point_v;
using std::is_integral;
using std::is_integral_v;
using std::is_pointer;
using std::is_pointer_v;
using std::is_reference;
using std::is_reference_v;
using std::is_same;
using std::is_same_v;
using std::is_signed;
using std::is_signed_v;
using std::is_unsigned;
using std::is_unsigned_v;
using std::is_void;
using std::is_void_v;
using std::is_volatile;
using std::is_volatile_v;
using std::make_index_sequence;
using std::make_tuple;
using std::max;
using std::min;
using std::move;
using std::remove_const;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_pointer;
using std::remove_pointer_t;
using std::remove_reference;
using std::remove_reference_t;
using std::remove_volatile;
using std::remove_volatile_t;
using std::true_type;
using std::tuple;
using std::tuple_element;
using std::tuple_element_t;
using std::tuple_size;
using std::tuple_size_v;
// C++20's remove_cvref, which the device library has and C++17 lacks.
template <typename T>
struct remove_cvref {
    using type = std::remove_cv_t<std::remove_reference_t<T>>;
};
template <typename T>
using remove_cvref_t = typename remove_cvref<T>::type;
}  // namespace Std

// The basic API's coordinates and layouts (asc-devkit kernel_operator_coord.h / kernel_operator_layout.h): Coord,
// Shape and Stride are tuples; Layout(shape, stride)(coord) is the element offset, the sum over the (possibly
// nested) modes of coordinate x stride.
template <typename... Coords>
using Coord = Std::tuple<Coords...>;
template <typename... Shapes>
using Shape = Std::tuple<Shapes...>;
template <typename... Strides>
using Stride = Std::tuple<Strides...>;

template <typename... Ts>
constexpr Coord<Ts...> MakeCoord(const Ts&... t) {
    return {t...};
}
template <typename... Ts>
constexpr Shape<Ts...> MakeShape(const Ts&... t) {
    return {t...};
}
template <typename... Ts>
constexpr Stride<Ts...> MakeStride(const Ts&... t) {
    return {t...};
}

template <typename T>
struct FsIsTuple : std::false_type {};
template <typename... Ts>
struct FsIsTuple<Std::tuple<Ts...>> : std::true_type {};

// coordinate -> offset, mode by mode
template <typename C, typename D>
constexpr auto Crd2Idx(const C& coord, const D& stride) {
    if constexpr (FsIsTuple<C>::value) {
        static_assert(FsIsTuple<D>::value && std::tuple_size_v<C> == std::tuple_size_v<D>,
                      "Layout: the coordinate and the stride must have the same modes");
        return std::apply([&](const auto&... c) {
            return std::apply([&](const auto&... d) { return (static_cast<int64_t>(0) + ... + Crd2Idx(c, d)); },
                              stride);
        }, coord);
    } else {
        static_assert(!FsIsTuple<D>::value, "Layout: a single coordinate for a nested mode is not modelled");
        return static_cast<int64_t>(coord) * static_cast<int64_t>(stride);
    }
}

template <typename T, typename U>
struct Layout {
    static_assert(FsIsTuple<T>::value && FsIsTuple<U>::value, "Shape or Stride is not tuple!");
    constexpr Layout(const T& shape = {}, const U& stride = {}) : fs_shape(shape), fs_stride(stride) {}
    constexpr const T& GetShape() const { return fs_shape; }
    constexpr const U& GetStride() const { return fs_stride; }
    template <typename S>
    constexpr auto operator()(const S& coord) const {
        return Crd2Idx(coord, fs_stride);
    }
    T fs_shape;
    U fs_stride;
};

template <typename T, typename U>
constexpr auto MakeLayout(const T& shape, const U& stride) {
    return Layout<T, U>(shape, stride);
}

// TransData (张量变换/TransData, Atlas A2/A3; int16_t, uint16_t, half, bfloat16_t): NCDHW <-> NDC1HWC0 and
// NCDHW <-> FRACTAL_Z_3D with C0 = N0 = 16, C padded to C1 x 16 (and N to N1 x 16) with zeros; the shapes
// come from the layouts' shapes (NCDHW (n, c, d, h, w), NDC1HWC0 (n, d, c1, h, w, c0), FRACTAL_Z_3D
// (d, c1, h, w, n1, n0, c0)); the NCDHW side's h x w planes are 32-byte padded in UB.
struct TransDataConfig {
    DataFormat srcFormat;
    DataFormat dstFormat;
};

template <typename T, typename U>
struct TransDataParams {
    T srcLayout;
    U dstLayout;
};

// tmp: the kernel's sharedTmpBuffer, or null for the framework-allocated form (its size is not checked: the
// GetTransDataMaxMinTmpSize values are not modelled)
template <const TransDataConfig& config, typename T, typename U, typename S>
inline void FsTransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>* tmp, const TransDataParams<U, S>& params) {
    using namespace fusedsl_cpu;
    const char* api = "TransData";
    CheckAdvApi(api, kChipA2A3, TypeName<T>(), " int16_t uint16_t half bfloat16_t ");
    constexpr DataFormat sf = config.srcFormat, df = config.dstFormat;
    constexpr bool ok = (sf == DataFormat::NCDHW && (df == DataFormat::NDC1HWC0 || df == DataFormat::FRACTAL_Z_3D)) ||
                        (df == DataFormat::NCDHW && (sf == DataFormat::NDC1HWC0 || sf == DataFormat::FRACTAL_Z_3D));
    static_assert(ok, "TransData converts NCDHW <-> NDC1HWC0 and NCDHW <-> FRACTAL_Z_3D");
    // the NCDHW side's shape gives n, c, d, h, w
    constexpr bool to_blocked = sf == DataFormat::NCDHW;
    const auto& nc = [&]() -> decltype(auto) {
        if constexpr (to_blocked) {
            return params.srcLayout.GetShape();
        } else {
            return params.dstLayout.GetShape();
        }
    }();
    const auto& other = [&]() -> decltype(auto) {
        if constexpr (to_blocked) {
            return params.dstLayout.GetShape();
        } else {
            return params.srcLayout.GetShape();
        }
    }();
    const int64_t n = std::get<0>(nc), c = std::get<1>(nc), d = std::get<2>(nc), h = std::get<3>(nc),
                  w = std::get<4>(nc);
    const int64_t c1 = (c + 15) / 16, n1 = (n + 15) / 16;
    const bool fz = sf == DataFormat::FRACTAL_Z_3D || df == DataFormat::FRACTAL_Z_3D;
    // the blocked side's shape must agree
    bool agree;
    if constexpr (sf == DataFormat::FRACTAL_Z_3D || df == DataFormat::FRACTAL_Z_3D) {
        agree = std::tuple_size_v<std::decay_t<decltype(other)>> == 7 && std::get<0>(other) == d &&
                std::get<1>(other) == c1 && std::get<2>(other) == h && std::get<3>(other) == w &&
                std::get<4>(other) == n1 && std::get<5>(other) == 16 && std::get<6>(other) == 16;
    } else {
        agree = std::tuple_size_v<std::decay_t<decltype(other)>> == 6 && std::get<0>(other) == n &&
                std::get<1>(other) == d && std::get<2>(other) == c1 && std::get<3>(other) == h &&
                std::get<4>(other) == w && std::get<5>(other) == 16;
    }
    if (!agree) {
        Fail("%s: the %s layout's shape does not match the NCDHW shape (%lld, %lld, %lld, %lld, %lld) with C0 = N0 "
             "= 16", api, fz ? "FRACTAL_Z_3D" : "NDC1HWC0", static_cast<long long>(n), static_cast<long long>(c),
             static_cast<long long>(d), static_cast<long long>(h), static_cast<long long>(w));
    }
    // the NCDHW operand in UB: each (n, c, d) plane of h x w elements padded to 32 bytes (CANN's transdata sample
    // moves it with DataCopyPad, its UB size n * c * d * RoundUp(h * w, 16))
    const int64_t hw_pad = (h * w + 32 / static_cast<int64_t>(sizeof(T)) - 1) / (32 / sizeof(T)) * (32 / sizeof(T));
    const int64_t plain = n * c * d * hw_pad;
    const int64_t blocked = fz ? d * c1 * h * w * n1 * 256 : n * d * c1 * h * w * 16;
    const uint32_t so = AdvIn(api, "srcTensor", srcTensor, static_cast<uint64_t>(to_blocked ? plain : blocked));
    const uint32_t dso = AdvOut(api, "dstTensor", dstTensor, static_cast<uint64_t>(to_blocked ? blocked : plain));
    if (tmp != nullptr) {
        CheckUb(api, "sharedTmpBuffer", tmp->fs_addr, tmp->GetLength(), 0, 1);
    }
    AdvNoOverlap(api, AdvSpan{"dstTensor", dso, static_cast<uint64_t>(to_blocked ? blocked : plain) * sizeof(T)},
                 AdvSpan{"srcTensor", so, static_cast<uint64_t>(to_blocked ? plain : blocked) * sizeof(T)});
    const T* src = srcTensor.fs_addr;
    std::vector<T> out(static_cast<size_t>(to_blocked ? blocked : plain), T(0));
    // the blocked index of (n, c, d, h, w)
    auto at = [&](int64_t ni, int64_t ci, int64_t di, int64_t hi, int64_t wi) {
        return fz ? ((((di * c1 + ci / 16) * h + hi) * w + wi) * n1 * 16 + ni) * 16 + ci % 16
                  : ((((ni * d + di) * c1 + ci / 16) * h + hi) * w + wi) * 16 + ci % 16;
    };
    for (int64_t ni = 0; ni < n; ++ni) {
        for (int64_t ci = 0; ci < c; ++ci) {
            for (int64_t di = 0; di < d; ++di) {
                for (int64_t hi = 0; hi < h; ++hi) {
                    for (int64_t wi = 0; wi < w; ++wi) {
                        const int64_t p = ((ni * c + ci) * d + di) * hw_pad + hi * w + wi;
                        const int64_t b = at(ni, ci, di, hi, wi);
                        if constexpr (to_blocked) {
                            out[b] = src[p];
                        } else {
                            out[p] = src[b];
                        }
                    }
                }
            }
        }
    }
    std::memcpy(dstTensor.fs_addr, out.data(), out.size() * sizeof(T));
    MarkWritten(dso, out.size() * sizeof(T));
    CountVector(out.size() * sizeof(T));
}

template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const TransDataParams<U, S>& params,
                      FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    FsTransData<config>(dstTensor, srcTensor, &sharedTmpBuffer, params);
}

template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const TransDataParams<U, S>& params, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AtSite at(fs_site);
    FsTransData<config>(dstTensor, srcTensor, static_cast<const LocalTensor<uint8_t>*>(nullptr), params);
}

// Fill: `size` elements of GM set to `value` (the API page: workspace or output zeroing); the
// same DMA write as InitGlobalMemory, with its checks.
template <typename T>
inline void Fill(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    InitGlobalMemory(gmWorkspaceAddr, size, value);
}

}  // namespace AscendC

namespace fusedsl_cpu {

// Broadcast along `axis` of a dim-1 or dim-2 shape.
template <typename T, int32_t dim, int32_t axis>
inline void BroadcastRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t* dst_shape,
                         const uint32_t* src_shape, const LocalTensor<uint8_t>* tmp) {
    static_assert(dim == 1 || dim == 2, "Broadcast: dim must be 1 or 2 on these chips");
    static_assert(axis == 0 || (dim == 2 && axis == 1), "Broadcast: axis must be 0 (dim 1 or 2) or 1 (dim 2)");
    const char* api = "Broadcast";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " int8_t uint8_t half float int16_t uint16_t int32_t uint32_t ");
    uint32_t m = dim == 2 ? dst_shape[0] : 1;
    uint32_t k = dst_shape[dim - 1];
    // the source is 1 along the broadcast axis and equal to dst on the other
    for (int32_t d = 0; d < dim; ++d) {
        bool ok = d == axis ? src_shape[d] == 1 : src_shape[d] == dst_shape[d];
        if (!ok) {
            Fail("%s: srcShape[%d] = %u does not broadcast to dstShape[%d] = %u along axis %d (the source must be 1 "
                 "on the broadcast axis and equal to the destination elsewhere)", api, d, src_shape[d], d,
                 dst_shape[d], axis);
        }
    }
    uint64_t src_n = static_cast<uint64_t>(src_shape[0]) * (dim == 2 ? src_shape[1] : 1);
    uint64_t dst_n = static_cast<uint64_t>(m) * k;
    uint32_t s = AdvIn(api, "srcLocal", src, src_n);
    uint32_t d = AdvOut(api, "dstLocal", dst, dst_n);
    AdvSpan ss{"srcLocal", s, src_n * sizeof(T)};
    AdvSpan sd{"dstLocal", d, dst_n * sizeof(T)};
    AdvNoOverlap(api, sd, ss);
    adv::TmpRange need = dim == 2 && axis == 1 ? adv::BroadcastRows(m, k, sizeof(T)) : adv::TmpRange{0, 0};
    AdvScratch(api, tmp, need.min, need.max, {sd, ss}, "GetBroadCastMaxMinTmpSize");
    std::vector<T> v(src_n);
    std::memcpy(v.data(), Bytes(src), src_n * sizeof(T));
    for (uint32_t r = 0; r < m; ++r) {
        for (uint32_t j = 0; j < k; ++j) {
            uint64_t from = dim == 1 ? 0 : (axis == 1 ? r : j);
            StoreAs(Bytes(dst) + (static_cast<uint64_t>(r) * k + j) * sizeof(T), v[from]);
        }
    }
    MarkWritten(d, dst_n * sizeof(T));
    CountVector(dst_n * sizeof(T));
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::BroadcastRun<T, dim, axis>(fs_site, dstLocal, srcLocal, dstShape, srcShape, &sharedTmpBuffer);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], FUSEDSL_CPU_SITE) {
    fusedsl_cpu::BroadcastRun<T, dim, axis>(fs_site, dstLocal, srcLocal, dstShape, srcShape, nullptr);
}
// BroadCast: the spelling Broadcast forwards to in CANN (impl broadcast_common_impl.h), which kernels call too
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::BroadcastRun<T, dim, axis>(fs_site, dstLocal, srcLocal, dstShape, srcShape, &sharedTmpBuffer);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], FUSEDSL_CPU_SITE) {
    fusedsl_cpu::BroadcastRun<T, dim, axis>(fs_site, dstLocal, srcLocal, dstShape, srcShape, nullptr);
}

}  // namespace AscendC
