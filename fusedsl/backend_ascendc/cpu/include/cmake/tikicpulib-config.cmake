# fusedsl stands in for CANN's CPU debug library (tikicpulib) in the classic kernel-launch
# samples (Ascend/samples operator/ascendc/*_kernellaunch): their cmake/cpu_lib.cmake does
#
#     if(NOT DEFINED ENV{CMAKE_PREFIX_PATH})  ... CANN's tools/tikicpulib/lib/cmake ...  endif()
#     find_package(tikicpulib REQUIRED)
#     target_link_libraries(ascendc_kernels_${RUN_MODE} PUBLIC tikicpulib::${SOC_VERSION})
#
# so the same one environment variable as for asc-devkit's samples selects fusedsl:
#
#     export CMAKE_PREFIX_PATH=$(fusedsl include-dir)
#     bash run.sh -r cpu -v Ascend910B1
#
# tikicpulib::<SOC> carries fusedsl's headers (kernel_operator.h, tikicpulib.h, ...),
# ASCENDC_CPU_DEBUG and the SoC's __NPU_ARCH__, which picks the chip whose rules are checked.
# The kernels run in-process (ICPU_RUN_KF); there is no library to link but the thread library.
# The samples build main.cpp with -D_GLIBCXX_USE_CXX11_ABI=0 (CANN's libraries use the old
# std::string ABI); fusedsl's runtime is header-only, so the kernel library must see the same
# std::string layout as main.cpp or the two would disagree about the runtime's fields.
# FUSEDSL_CCE_AUTO_SYNC=1: these kernels are built for the NPU by the project's
# ascendc_library (cmake/npu_lib.cmake), where bisheng's --cce-auto-sync is on by default for
# kernel-launch projects (asc-devkit 同步控制/核内同步/关键特性说明), so the flags between PIPE_S
# and the V/MTE pipes are the compiler's, as in fusedsl's ASC driver (runtime.h, AutoSync).
# FUSEDSL_CPU_DEFAULT_KERNEL_MODE=MIX_MODE: tikicpulib runs a launch in MIX_MODE unless the host
# called SetKernelMode (asc-tools cpudebug stub_base.cpp: g_kernelMode = KernelMode::MIX_MODE);
# the Matmul samples rely on it, the vector ones set AIV_MODE themselves.
if(_FUSEDSL_TIKICPULIB_LOADED)
    return()
endif()
set(_FUSEDSL_TIKICPULIB_LOADED TRUE)

get_filename_component(_FUSEDSL_TIKICPU_INCLUDE "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
find_package(Threads REQUIRED)

# SoC names of CANN's run.sh VERSION_LIST -> __NPU_ARCH__ (asc-devkit docs: 编程指南 > 概念原理 >
# 硬件架构, the dav-XXXX of each product line).  A SoC of a chip fusedsl has no target for
# (Ascend310B: dav-3002) stops the build with the chip named.
set(_fusedsl_socs
    Ascend910A:1001 Ascend910B:1001 Ascend910ProA:1001 Ascend910ProB:1001 Ascend910PremiumA:1001
    Ascend910B1:2201 Ascend910B2:2201 Ascend910B2C:2201 Ascend910B3:2201 Ascend910B4:2201
    Ascend910B4-1:2201 Ascend910_9391:2201 Ascend910_9392:2201 Ascend910_9381:2201
    Ascend910_9382:2201 Ascend910_9372:2201 Ascend910_9362:2201
    Ascend310P1:2002 Ascend310P3:2002 Ascend310P5:2002 Ascend310P7:2002)
foreach(_entry IN LISTS _fusedsl_socs)
    string(REPLACE ":" ";" _pair "${_entry}")
    list(GET _pair 0 _soc)
    list(GET _pair 1 _arch)
    if(NOT TARGET tikicpulib::${_soc})
        add_library(tikicpulib::${_soc} INTERFACE IMPORTED GLOBAL)
        set_target_properties(tikicpulib::${_soc} PROPERTIES
            INTERFACE_INCLUDE_DIRECTORIES "${_FUSEDSL_TIKICPU_INCLUDE}"
            INTERFACE_COMPILE_DEFINITIONS "ASCENDC_CPU_DEBUG;__NPU_ARCH__=${_arch};_GLIBCXX_USE_CXX11_ABI=0;FUSEDSL_CCE_AUTO_SYNC=1;FUSEDSL_CPU_DEFAULT_KERNEL_MODE=MIX_MODE"
            INTERFACE_COMPILE_OPTIONS "-std=c++17"
            INTERFACE_LINK_LIBRARIES Threads::Threads)
    endif()
endforeach()

if(SOC_VERSION AND NOT TARGET tikicpulib::${SOC_VERSION})
    message(FATAL_ERROR "fusedsl's CPU implementation of the Ascend C API has no target for "
                        "SOC_VERSION=${SOC_VERSION}; it models Ascend910B (dav-2201), Ascend310P "
                        "(dav-2002) and Ascend910A (dav-1001): pass one of those with run.sh -v")
endif()

# The host program links CANN's runtime and host libraries (ascendcl, tiling_api, platform,
# ascendalog, ...) in CPU mode too; fusedsl's are headers, so the names become empty targets.
include("${CMAKE_CURRENT_LIST_DIR}/fusedsl-host-libs.cmake")
set(tikicpulib_FOUND TRUE)
