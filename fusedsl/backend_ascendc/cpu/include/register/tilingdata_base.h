// Op-project tiling data on the CPU: BEGIN_TILING_DATA_DEF / TILING_DATA_FIELD_DEF(_ARR) /
// END_TILING_DATA_DEF / REGISTER_TILING_DATA_CLASS for op_host, GET_TILING_DATA for op_kernel.
//
// A tiling data class is a plain standard-layout struct: its fields in declaration order,
// set_<field>/get_<field> accessors, SaveToBuffer and GetDataSize; a TCubeTiling struct field
// is the kernel's TCubeTiling (see CubeTilingField).  The kernel side reads the
// same bytes.  CANN's build hands op_kernel the tiling type of its op; fusedsl's CPU build
// does the same by compiling op_kernel/<op>.cpp with `-include op_host/<op>_tiling.h`, and
// GET_TILING_DATA takes the class registered there.  Tiling definitions live in namespace
// optiling (CANN's convention), and one op is registered per kernel translation unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernel_tiling/kernel_tiling.h"   // the kernel-side TCubeTiling a struct field holds

#ifndef __aicore__
#define __aicore__
#endif

namespace optiling {
class TCubeTiling;   // the host class of tiling/tiling_api.h
}  // namespace optiling

namespace fusedsl_cpu {
// A TCubeTiling field of op tiling data (`TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData)`
// in CANN's MatmulLeakyRelu op).  In op_host, TCubeTiling names the host class
// optiling::TCubeTiling (set_/get_ per field); for op_kernel CANN generates the tiling struct
// with AscendC's TCubeTiling in its place, so the kernel hands &tilingData.cubeTilingData to
// REGIST_MATMUL_OBJ.  fusedsl compiles one class for both sides, so the field is the kernel's
// struct (the same 50 int32 words: SaveToBuffer writes what the kernel reads) with the host
// class's accessors.
struct CubeTilingField : ::AscendC::tiling::TCubeTiling {
#define FUSEDSL_CUBE_FIELD_ACCESSORS(name)                                         \
    void set_##name(int32_t value) { this->name = value; }                         \
    int32_t get_##name() const { return this->name; }
    FUSEDSL_CUBE_TILING_FIELDS(FUSEDSL_CUBE_FIELD_ACCESSORS)
#undef FUSEDSL_CUBE_FIELD_ACCESSORS
};
static_assert(sizeof(CubeTilingField) == sizeof(::AscendC::tiling::TCubeTiling),
              "a TCubeTiling field is exactly the kernel's TCubeTiling words");

// The type a struct field of tiling data is stored as: a plain struct as declared, TCubeTiling
// (host or kernel spelling) as CubeTilingField.
template <typename T>
struct TilingStructField {
    using type = T;
};
template <>
struct TilingStructField<::optiling::TCubeTiling> {
    using type = CubeTilingField;
};
template <>
struct TilingStructField<::AscendC::tiling::TCubeTiling> {
    using type = CubeTilingField;
};
}  // namespace fusedsl_cpu

#define BEGIN_TILING_DATA_DEF(class_name)                                          \
    struct class_name {                                                            \
        size_t GetDataSize() const { return sizeof(*this); }                       \
        void SaveToBuffer(void* dst, size_t capacity) const {                      \
            if (capacity >= sizeof(*this)) {                                       \
                std::memcpy(dst, this, sizeof(*this));                             \
            }                                                                      \
        }

#define TILING_DATA_FIELD_DEF(type, field)                                         \
        type field{};                                                              \
        void set_##field(type value) { field = value; }                            \
        type get_##field() const { return field; }

#define TILING_DATA_FIELD_DEF_ARR(type, count, field)                              \
        type field[count]{};                                                       \
        void set_##field(const type* values) { std::memcpy(field, values, sizeof(field)); } \
        const type* get_##field() const { return field; }

// A struct field holds the struct's kernel-side layout (fusedsl_cpu::TilingStructField below).
#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field)                           \
        ::fusedsl_cpu::TilingStructField<struct_type>::type field{};               \
        ::fusedsl_cpu::TilingStructField<struct_type>::type& get_##field() { return field; }

#define END_TILING_DATA_DEF }

// Records the op's tiling class; op_kernel's GET_TILING_DATA declares a variable of it.
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                            \
    using FusedslRegisteredTilingData = class_name;                                \
    [[maybe_unused]] inline constexpr const char* fusedsl_tiling_op_##op_type = #op_type;

namespace fusedsl_cpu {
// Copies the tiling bytes from GM the way the kernel-side GET_TILING_DATA does.
template <typename T>
inline T LoadTilingData(const void* gm) {
    T value;
    std::memcpy(static_cast<void*>(&value), gm, sizeof(T));
    return value;
}
}  // namespace fusedsl_cpu

#define GET_TILING_DATA(var, tiling)                                                        \
    ::optiling::FusedslRegisteredTilingData var =                                           \
        ::fusedsl_cpu::LoadTilingData<::optiling::FusedslRegisteredTilingData>(tiling)
#define GET_TILING_DATA_WITH_STRUCT(struct_type, var, tiling)                               \
    struct_type var = ::fusedsl_cpu::LoadTilingData<struct_type>(tiling)
