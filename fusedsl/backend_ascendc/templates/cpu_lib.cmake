# RUN_MODE=cpu: the kernel runs in-process on the host.  With CANN installed it links CANN's
# CPU debug library (tikicpulib); with FUSEDSL_INCLUDE_DIR set (`fusedsl include-dir`) it
# builds against fusedsl's CPU implementation of the Ascend C API instead (no CANN needed).
if(FUSEDSL_INCLUDE_DIR)
    add_library(ascendc_kernels_${RUN_MODE} STATIC ${KERNEL_FILES})
    target_include_directories(ascendc_kernels_${RUN_MODE} PUBLIC ${FUSEDSL_INCLUDE_DIR})
    target_compile_definitions(ascendc_kernels_${RUN_MODE} PUBLIC ASCENDC_CPU_DEBUG
                               __NPU_ARCH__=${NPU_ARCH})
else()
    if(NOT DEFINED ENV{CMAKE_PREFIX_PATH})
        set(CMAKE_PREFIX_PATH ${ASCEND_CANN_PACKAGE_PATH}/tools/tikicpulib/lib/cmake)
    endif()
    find_package(tikicpulib REQUIRED)
    add_library(ascendc_kernels_${RUN_MODE} SHARED ${KERNEL_FILES})
    target_link_libraries(ascendc_kernels_${RUN_MODE} PUBLIC tikicpulib::${SOC_VERSION})
    target_compile_definitions(ascendc_kernels_${RUN_MODE} PUBLIC ASCENDC_CPU_DEBUG)
endif()
target_compile_options(ascendc_kernels_${RUN_MODE} PRIVATE -g -O0 -std=c++17)
