// fusedsl CPU implementation of the Ascend C API: cache control, GM initialisation, kernel
// assertions and tensor dumps (the utilities CANN's vector samples use).
#pragma once

#include "reduce.h"

namespace AscendC {

enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

}  // namespace AscendC

namespace fusedsl_cpu {

// Clean (write back) and invalidate this core's data-cache lines: one line (the one holding
// `p`) or the whole cache.  DataCacheCleanAndInvalid.md: not on 910A (Atlas 训练系列).
inline void CleanCache(const char* api, const uint8_t* p, bool entire) {
    if (Target().arch == 1001) {
        Fail("%s is not available on %s; keep GlobalTensor::SetValue writes away from GM that DMA or other "
             "cores touch", api, Target().name);
    }
    std::vector<uintptr_t>& dirty = CurCore().dirty_lines;
    if (entire) {
        dirty.clear();
        return;
    }
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        return;
    }
    uintptr_t line = LineOf(b, p);
    dirty.erase(std::remove(dirty.begin(), dirty.end(), line), dirty.end());
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    const char* api = "DataCacheCleanAndInvalid";
    if (fusedsl_cpu::Target().arch == 2002) {
        fusedsl_cpu::Fail("%s<T, CacheLine, DcciDst>: %s supports only the form without DcciDst "
                          "(DataCacheCleanAndInvalid<T, CacheLine>)", api, fusedsl_cpu::Target().name);
    }
    if (dcciDst == DcciDst::CACHELINE_UB) {
        fusedsl_cpu::Fail("%s: DcciDst::CACHELINE_UB keeps the cache coherent with UB, not GM; pass a LocalTensor "
                          "for that, or CACHELINE_OUT for a GlobalTensor", api);
    }
    fusedsl_cpu::CleanCache(api, reinterpret_cast<const uint8_t*>(dst.fs_addr),
                            entireType == CacheLine::ENTIRE_DATA_CACHE);
}

template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    fusedsl_cpu::CleanCache("DataCacheCleanAndInvalid", reinterpret_cast<const uint8_t*>(dst.fs_addr),
                            entireType == CacheLine::ENTIRE_DATA_CACHE);
}

// The UB form keeps the scalar cache coherent with UB; the CPU has no such cache.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>& dst) {
    fusedsl_cpu::CheckUb("DataCacheCleanAndInvalid", "dst", dst.fs_addr, dst.GetLength(), 0, sizeof(T), false);
    if (fusedsl_cpu::Target().arch != 2201) {
        fusedsl_cpu::Fail("DataCacheCleanAndInvalid(LocalTensor) is not available on %s", fusedsl_cpu::Target().name);
    }
}

}  // namespace AscendC
