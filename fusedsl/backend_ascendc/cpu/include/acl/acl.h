// A small host-side ACL for CPU mode: device memory is host memory, streams are no-ops.
// Device buffers from aclrtMalloc are registered as GM buffers, so kernels that receive them
// get the same bounds checks as GmAlloc'ed ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../fusedsl_cpu/runtime.h"
#include "../securec.h"

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

namespace fusedsl_cpu {
// Device memory is host memory here; a device-side pointer must still lie in an aclrtMalloc'ed
// (or GmAlloc'ed) buffer with `count` bytes to spare, as the device would insist.
inline bool AclDeviceRange(const void* p, size_t count, const char* api, const char* side) {
    GmBuffer* b = FindGm(static_cast<const uint8_t*>(p));
    if (b != nullptr && static_cast<const uint8_t*>(p) + count <= b->base + b->bytes) {
        return true;
    }
    std::fflush(stdout);
    std::fprintf(stderr, "[ERROR] fusedsl CPU acl: %s: the %s (%p, %zu bytes) is not inside device memory from "
                         "aclrtMalloc\n", api, side, p, count);
    return false;
}
}  // namespace fusedsl_cpu

inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
    if (dst == nullptr || src == nullptr || count > destMax) {
        return ACL_ERROR_INVALID_PARAM;
    }
    bool dstDevice = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    bool srcDevice = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    if ((dstDevice && !fusedsl_cpu::AclDeviceRange(dst, count, "aclrtMemcpy", "destination")) ||
        (srcDevice && !fusedsl_cpu::AclDeviceRange(src, count, "aclrtMemcpy", "source"))) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

// Streams run nothing asynchronously on the CPU: the copy is done when the call returns.
inline aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream /*stream*/) {
    return aclrtMemcpy(dst, destMax, src, count, kind);
}

inline aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == nullptr || count > maxCount) {
        return ACL_ERROR_INVALID_PARAM;
    }
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStreamWithTimeout(aclrtStream /*stream*/, int32_t /*timeout*/) { return ACL_SUCCESS; }
inline aclError aclrtGetDeviceCount(uint32_t* count) {
    if (count == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *count = 1;
    return ACL_SUCCESS;
}
inline aclError aclrtGetLastError(int32_t /*level*/ = 0) { return ACL_SUCCESS; }
inline const char* aclGetRecentErrMsg() { return "fusedsl CPU acl: no error recorded"; }

// Events: every stream operation has completed when its call returns, so events are tokens.
using aclrtEvent = void*;
inline aclError aclrtCreateEvent(aclrtEvent* event) {
    if (event == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    static int token;
    *event = &token;
    return ACL_SUCCESS;
}
inline aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t /*flag*/) { return aclrtCreateEvent(event); }
inline aclError aclrtCreateEventExWithFlag(aclrtEvent* event, uint32_t /*flag*/) { return aclrtCreateEvent(event); }
inline aclError aclrtRecordEvent(aclrtEvent /*event*/, aclrtStream /*stream*/) { return ACL_SUCCESS; }
inline aclError aclrtStreamWaitEvent(aclrtStream /*stream*/, aclrtEvent /*event*/) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeEvent(aclrtEvent /*event*/) { return ACL_SUCCESS; }
inline aclError aclrtDestroyEvent(aclrtEvent /*event*/) { return ACL_SUCCESS; }
inline aclError aclrtEventElapsedTime(float* ms, aclrtEvent /*start*/, aclrtEvent /*end*/) {
    if (ms == nullptr) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *ms = 0.0f;   // no device timeline on the CPU
    return ACL_SUCCESS;
}
