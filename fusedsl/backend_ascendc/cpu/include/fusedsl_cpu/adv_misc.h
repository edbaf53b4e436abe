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

// Fill: `size` elements of GM set to `value` (the API page: workspace or output zeroing); the
// same DMA write as InitGlobalMemory, with its checks.
template <typename T>
inline void Fill(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value) {
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

}  // namespace AscendC
