// The bounds-checked copies of CANN's securec library (memcpy_s, memset_s) that every CANN
// sample's host code calls; acl/acl.h and kernel_operator.h bring them in as CANN's headers do.
// They return 0, or an error code without copying when the destination is null or too small
// (EINVAL for null pointers, ERANGE when count > destMax), like securec.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>

#ifndef FUSEDSL_SECUREC_DEFINED
#define FUSEDSL_SECUREC_DEFINED
typedef int errno_t;

inline errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
    if (count == 0) {
        return 0;
    }
    if (dest == nullptr || src == nullptr) {
        return EINVAL;
    }
    if (count > destMax) {
        std::memset(dest, 0, destMax);
        return ERANGE;
    }
    std::memmove(dest, src, count);
    return 0;
}

inline errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
    if (count == 0) {
        return 0;
    }
    if (dest == nullptr) {
        return EINVAL;
    }
    if (count > destMax) {
        std::memset(dest, c, destMax);
        return ERANGE;
    }
    std::memset(dest, c, count);
    return 0;
}
#endif
