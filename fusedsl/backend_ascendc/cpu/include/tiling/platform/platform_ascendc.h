// Host-side platform queries (CANN's platform_ascendc::PlatformAscendC), answered from
// fusedsl's target table (fusedsl/targets.py -> fusedsl_cpu/targets.inc) instead of the
// toolkit's platform_config/<SoC>.ini files.
//
//   auto* p = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B2");
//   p->GetCoreNumAic();  p->GetCoreMemSize(platform_ascendc::CoreMemType::L1, bytes);
//   size_t sysWs = p->GetLibApiWorkSpaceSize();
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fusedsl_cpu/runtime.h"

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, FB = 7, BT = 8, RESERVED };

enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND310P, ASCEND310B, ASCEND950, RESERVED_VERSION = 99999 };

enum class ReservedSize { RESERVED_SIZE_8K = 0, RESERVED_SIZE_16K, RESERVED_SIZE_32K };

class PlatformAscendC {
public:
    // The chip the CPU implementation runs kernels for (see fusedsl_cpu::Target()).
    PlatformAscendC() : target_(&::fusedsl_cpu::Target()) {}
    explicit PlatformAscendC(const ::fusedsl_cpu::TargetInfo* target) : target_(target) {}

    // Separated chips (AIC + 2 AIV per group): the vector core count; coupled: AI cores.
    uint32_t GetCoreNum() const {
        return static_cast<uint32_t>(target_->separated ? target_->aiv_cores : target_->aic_cores);
    }
    // On a coupled chip cube and vector share one AI core, so both counts are the AI cores.
    uint32_t GetCoreNumAic() const { return static_cast<uint32_t>(target_->aic_cores); }
    uint32_t GetCoreNumAiv() const {
        return static_cast<uint32_t>(target_->separated ? target_->aiv_cores : target_->aic_cores);
    }
    // ASCENDC.md §4.2: 310P3 has 7 stand-alone Vector Cores beside its 8 AI cores.
    uint32_t GetCoreNumVector() const { return target_->arch == 2002 ? 7u : 0u; }

    // Bytes of one core's buffer.  910B keeps 256 B of UB and L1 for the cube/vector message
    // queue (ASCENDC.md §4.1; fusedsl's UB figure already excludes it), and a
    // ReserveLocalMemory() amount comes off UB.
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const {
        const bool kfc = target_->arch == 2201;
        switch (memType) {
            case CoreMemType::UB: size = target_->ub_bytes - reserved_; break;
            case CoreMemType::L1: size = target_->l1_bytes - (kfc ? 256u : 0u); break;
            case CoreMemType::L0_A: size = target_->l0a_bytes; break;
            case CoreMemType::L0_B: size = target_->l0b_bytes; break;
            case CoreMemType::L0_C: size = target_->l0c_bytes; break;
            case CoreMemType::BT: size = kfc ? 1024u : 0u; break;   // §4.1 BiasTable
            case CoreMemType::FB: size = kfc ? 2048u : 0u; break;   // §4.1 Fixpipe FB0
            default: size = 0; break;   // L2/HBM sizes are not in fusedsl's target table
        }
    }

    SocVersion GetSocVersion() const {
        switch (target_->arch) {
            case 2201: return SocVersion::ASCEND910B;
            case 2002: return SocVersion::ASCEND310P;
            case 1001: return SocVersion::ASCEND910;
            default: return SocVersion::RESERVED_VERSION;
        }
    }

    // System workspace the high-level APIs (Matmul) need in front of the user's workspace:
    // 16 MB on arch 2201, 2 MB elsewhere (CANN's platform_ascendc.cpp constants).
    uint32_t GetLibApiWorkSpaceSize() const { return target_->arch == 2201 ? 16u * 1024 * 1024 : 2u * 1024 * 1024; }

    // numBlocks of a mixed kernel that splits its work into sliceNum vector slices: one
    // block per (1 AIC + ratio AIV) group; 0 when that exceeds the cube cores.
    uint32_t CalcTschBlockDim(uint32_t sliceNum, uint32_t aicCoreNum, uint32_t aivCoreNum) const {
        if (aicCoreNum == 0 || aivCoreNum == 0 || aicCoreNum > aivCoreNum) {
            return sliceNum;
        }
        uint32_t ratio = aivCoreNum / aicCoreNum;
        uint32_t blocks = (sliceNum + ratio - 1) / ratio;
        if (ratio == 2 && blocks > aicCoreNum) {
            std::fprintf(stderr, "[ERROR] CalcTschBlockDim: %u blocks exceed the %u cube cores\n", blocks, aicCoreNum);
            return 0;
        }
        return blocks;
    }
    uint32_t CalcTschNumBlocks(uint32_t sliceNum, uint32_t aicCoreNum, uint32_t aivCoreNum) const {
        return CalcTschBlockDim(sliceNum, aicCoreNum, aivCoreNum);
    }

    void ReserveLocalMemory(ReservedSize size) {
        static const uint32_t kBytes[] = {8 * 1024, 16 * 1024, 32 * 1024};
        reserved_ = kBytes[static_cast<int>(size)];
    }

    const char* GetSocName() const { return target_->chip; }
    const ::fusedsl_cpu::TargetInfo& fs_target() const { return *target_; }

private:
    const ::fusedsl_cpu::TargetInfo* target_;
    uint32_t reserved_ = 0;
};

namespace detail {

// CANN SoC version strings (and fusedsl's target names) -> fusedsl target.  910B1/B2 have
// 24 cube cores, 910B3/B4 20 (ASCENDC.md §4.2).
inline int SocTarget(const char* soc) {
    static const struct {
        const char* soc;
        const char* target;
    } kMap[] = {
        {"Ascend910B1", "ascend910b"},  {"Ascend910B2", "ascend910b"},  {"Ascend910B2C", "ascend910b"},
        {"Ascend910B3", "ascend910b4"}, {"Ascend910B4", "ascend910b4"}, {"Ascend910B4-1", "ascend910b4"},
        {"Ascend310P1", "ascend310p"},  {"Ascend310P3", "ascend310p"},  {"Ascend910A", "ascend910"},
        {"Ascend910ProA", "ascend910"}, {"Ascend910ProB", "ascend910"}, {"Ascend910PremiumA", "ascend910"},
    };
    for (const auto& m : kMap) {
        if (std::strcmp(m.soc, soc) == 0) {
            return ::fusedsl_cpu::FindTarget(m.target);
        }
    }
    return ::fusedsl_cpu::FindTarget(soc);
}

}  // namespace detail

class PlatformAscendCManager {
public:
    // The platform of the chip kernels run on (fusedsl_cpu::Target()).
    static PlatformAscendC* GetInstance() {
        static PlatformAscendC p;
        return &p;
    }

    // The platform of a named SoC ("Ascend910B2", "Ascend310P3", ... or "ascend910b").  An
    // unknown name is a host-program mistake: it is reported and the program exits, as a
    // null platform would only crash later.
    static PlatformAscendC* GetInstance(const char* customSocVersion) {
        int t = customSocVersion != nullptr ? detail::SocTarget(customSocVersion) : -1;
        if (t < 0) {
            std::fprintf(stderr, "[ERROR] PlatformAscendCManager::GetInstance(\"%s\"): unknown SoC version; fusedsl "
                         "knows Ascend910B1-B4, Ascend310P1/P3, Ascend910A (and %s)\n",
                         customSocVersion != nullptr ? customSocVersion : "(null)",
                         ::fusedsl_cpu::KnownTargets().c_str());
            std::exit(1);
        }
        static PlatformAscendC instances[::fusedsl_cpu::kNumTargets > 0 ? ::fusedsl_cpu::kNumTargets : 1];
        instances[t] = PlatformAscendC(&::fusedsl_cpu::kTargets[t]);
        return &instances[t];
    }
};

}  // namespace platform_ascendc
