// CANN 9's dump header for kernels: AscendC::DumpTensor and printf (kernel_operator.h), and the
// C-style asc_dump_gm / asc_dump_ubuf / asc_dump_l1buf / asc_dump_cbuf (asc-devkit's asc_dump page):
// print dumpSize elements from a GM address, or from an on-chip address (a LocalTensor's
// GetPhyAddr(): its offset in UB, L1 or L0C), with the tag `desc`, in DumpTensor's format.  The
// elements must lie in that memory; asc_dump_l1buf is an Atlas A2/A3 interface.
#pragma once

#include "kernel_operator.h"

namespace fusedsl_cpu {

// `addr` is what LocalTensor::GetPhyAddr() returns: the tensor's offset in its memory.
template <typename T>
inline void AscDumpLocal(const char* api, const char* where, int mem, const void* addr, uint32_t desc,
                         uint32_t dumpSize) {
    Core& c = CurCore();
    uint64_t off = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr));
    uint64_t cap = mem == -1 ? c.ub_bytes : c.local_at[mem + 1] - c.local_at[mem];
    if (off + static_cast<uint64_t>(dumpSize) * sizeof(T) > cap) {
        Fail("%s: %u elements from %s offset %llu run past the end of %s (%llu bytes); pass the tensor's "
             "GetPhyAddr()", api, dumpSize, where, static_cast<unsigned long long>(off), where,
             static_cast<unsigned long long>(cap));
    }
    const uint8_t* base = mem == -1 ? c.ub.data() : c.local.data() + c.local_at[mem];
    DumpValues<T>(where, off, base + off, desc, dumpSize, nullptr);
}

}  // namespace fusedsl_cpu

template <typename T>
inline void asc_dump_gm(__gm__ T* addr, uint32_t desc, uint32_t dumpSize, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CurCore();
    auto p = reinterpret_cast<const uint8_t*>(addr);
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        Fail("asc_dump_gm: the address is not in a GM buffer of this launch");
    }
    if (static_cast<uint64_t>(p - b->base) + static_cast<uint64_t>(dumpSize) * sizeof(T) > b->bytes) {
        Fail("asc_dump_gm: %u elements run past the end of GM buffer '%s' (%llu bytes)", dumpSize, b->name.c_str(),
             static_cast<unsigned long long>(b->bytes));
    }
    DumpValues<T>("GM", reinterpret_cast<uintptr_t>(addr), p, desc, dumpSize, nullptr);
}

template <typename T>
inline void asc_dump_ubuf(__ubuf__ T* addr, uint32_t desc, uint32_t dumpSize, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::AscDumpLocal<T>("asc_dump_ubuf", "UB", -1, addr, desc, dumpSize);
}

template <typename T>
inline void asc_dump_l1buf(__cbuf__ T* addr, uint32_t desc, uint32_t dumpSize, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if (!fusedsl_cpu::Target().separated) {
        fusedsl_cpu::Fail("asc_dump_l1buf is an Atlas A2/A3 interface, not available on %s", fusedsl_cpu::Target().name);
    }
    fusedsl_cpu::AscDumpLocal<T>("asc_dump_l1buf", "L1", fusedsl_cpu::kMemL1, addr, desc, dumpSize);
}

template <typename T>
inline void asc_dump_cbuf(__cc__ T* addr, uint32_t desc, uint32_t dumpSize, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::AscDumpLocal<T>("asc_dump_cbuf", "L0C", fusedsl_cpu::kMemL0C, addr, desc, dumpSize);
}
