// AscendC::ReducePattern (which axes of a shape reduce: A keeps, R reduces; the host helpers and
// NormalizeConfig take it) and the kernel-side pattern tags AscendC::Pattern::Reduce::AR / RA of
// the pattern reductions (ReduceMax, ReduceMin).  Shared by host and kernel headers.
#pragma once

#include <cstdint>

namespace AscendC {

enum class ReducePattern : uint32_t {
    AR = 0,
    RA = 1,
    R,
    ARA,
    ARAR,
    ARARA,
    ARARAR,
    ARARARA,
    ARARARAR,
    ARARARARA,
    RAR,
    RARA,
    RARAR,
    RARARA,
    RARARAR,
    RARARARA,
};

namespace Pattern {
namespace Reduce {
struct AR {
    static constexpr ReducePattern value = ReducePattern::AR;
};
struct RA {
    static constexpr ReducePattern value = ReducePattern::RA;
};
}  // namespace Reduce
}  // namespace Pattern

}  // namespace AscendC
