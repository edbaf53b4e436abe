// A small host-side ACL for CPU mode: device memory is host memory, streams are no-ops.
// Device buffers from aclrtMalloc are registered as GM buffers, so kernels that receive them
// get the same bounds checks as GmAlloc'ed ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../fusedsl_cpu/runtime.h"

using aclError = int;
using aclrtStream = void*;
using aclrtContext = void*;
using aclFloat16 = uint16_t;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_NONE = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;

enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
};

enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
};

inline aclFloat16 aclFloatToFloat16(float value) {
    _Float16 h = static_cast<_Float16>(value);
    aclFloat16 bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
}

inline float aclFloat16ToFloat(aclFloat16 value) {
    _Float16 h;
    std::memcpy(&h, &value, sizeof h);
    return static_cast<float>(h);
}

inline aclError aclInit(const char* /*configPath*/) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t /*deviceId*/) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t /*deviceId*/) { return ACL_SUCCESS; }

inline aclError aclrtCreateStream(aclrtStream* stream) {
    if (stream == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    static int token;
    *stream = &token;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream /*stream*/) { return ACL_SUCCESS; }
// One host process is one device context on the CPU.
inline aclError aclrtCreateContext(aclrtContext* context, int32_t /*deviceId*/) {
    if (context == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    static int token;
    *context = &token;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyContext(aclrtContext /*context*/) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream /*stream*/) { return ACL_SUCCESS; }

inline aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy /*policy*/) {
    if (devPtr == nullptr || size == 0) {
        return ACL_ERROR_INVALID_PARAM;
    }
    size_t rounded = static_cast<size_t>(fusedsl_cpu::RoundUp(size, 4096));
    void* p = std::aligned_alloc(4096, rounded);
    if (p == nullptr) {
        return ACL_ERROR_BAD_ALLOC;
    }
    std::memset(p, 0, rounded);
    fusedsl_cpu::RT().gm_alloc_count += 1;
    fusedsl_cpu::RegisterGm(p, size, fusedsl_cpu::Format("aclrtMalloc#%llu",
                                                         static_cast<unsigned long long>(fusedsl_cpu::RT().gm_alloc_count)));
    *devPtr = p;
    return ACL_SUCCESS;
}

inline aclError aclrtFree(void* devPtr) {
    if (devPtr != nullptr) {
        fusedsl_cpu::UnregisterGm(devPtr);
        std::free(devPtr);
    }
    return ACL_SUCCESS;
}

inline aclError aclrtMallocHost(void** hostPtr, size_t size) {
    if (hostPtr == nullptr || size == 0) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *hostPtr = std::calloc(1, size);
    return *hostPtr != nullptr ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}

inline aclError aclrtFreeHost(void* hostPtr) {
    std::free(hostPtr);
    return ACL_SUCCESS;
}

inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind /*kind*/) {
    if (dst == nullptr || src == nullptr || count > destMax) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

inline aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == nullptr || count > maxCount) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}
