# The ASC "compiler" is fusedsl's driver (asc.py `cc`) in front of g++; CMake records g++ as
# the compiler and calls the driver from the compile rule (CMakeASCInformation.cmake).
if(NOT CMAKE_ASC_COMPILER)
    find_program(CMAKE_ASC_COMPILER NAMES g++ c++ REQUIRED)
endif()
mark_as_advanced(CMAKE_ASC_COMPILER)
set(CMAKE_ASC_COMPILER_ID "GNU")
set(CMAKE_ASC_COMPILER_ENV_VAR "ASC")
configure_file("${CMAKE_CURRENT_LIST_DIR}/CMakeASCCompiler.cmake.in"
               "${CMAKE_PLATFORM_INFO_DIR}/CMakeASCCompiler.cmake" @ONLY)
