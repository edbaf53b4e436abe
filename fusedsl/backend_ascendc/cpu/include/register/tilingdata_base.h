// Op-project tiling data on the CPU: BEGIN_TILING_DATA_DEF / TILING_DATA_FIELD_DEF(_ARR) /
// END_TILING_DATA_DEF / REGISTER_TILING_DATA_CLASS for op_host, GET_TILING_DATA for op_kernel.
//
// A tiling data class is a plain standard-layout struct: its fields in declaration order,
// set_<field>/get_<field> accessors, SaveToBuffer and GetDataSize.  The kernel side reads the
// same bytes.  CANN's build hands op_kernel the tiling type of its op; fusedsl's CPU build
// does the same by compiling op_kernel/<op>.cpp with `-include op_host/<op>_tiling.h`, and
// GET_TILING_DATA takes the class registered there.  Tiling definitions live in namespace
// optiling (CANN's convention), and one op is registered per kernel translation unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef __aicore__
#define __aicore__
#endif

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

#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field)                           \
        struct_type field{};                                                       \
        struct_type& get_##field() { return field; }

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
