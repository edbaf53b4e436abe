#!/bin/bash
# Build, run and verify {{name}}: bash run.sh -r cpu|sim|npu -v <soc>
#   cpu  the kernel runs on the host: with CANN's CPU debug library when ASCEND_HOME_PATH is
#        set, otherwise with fusedsl's CPU implementation of the Ascend C API (fusedsl include-dir)
#   sim  CANN's simulator for <soc>;  npu  the device
set -e
CURRENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$CURRENT_DIR"

RUN_MODE="cpu"
SOC_VERSION="{{soc}}"
usage() {
    echo "usage: bash run.sh -r cpu|sim|npu -v <soc>   (default: -r cpu -v {{soc}})"
}
while [[ $# -gt 0 ]]; do
    case "$1" in
        -r|--run-mode) RUN_MODE="$2"; shift 2 ;;
        -v|--soc-version) SOC_VERSION="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "[ERROR] unknown option $1"; usage; exit 1 ;;
    esac
done
case "$RUN_MODE" in cpu|sim|npu) ;; *) echo "[ERROR] -r must be cpu, sim or npu"; usage; exit 1 ;; esac

# __NPU_ARCH__ of the SoC: fusedsl's CPU implementation checks that chip's rules
case "$SOC_VERSION" in
    Ascend910B*|Ascend910_93*) NPU_ARCH=2201 ;;
    Ascend310P*) NPU_ARCH=2002 ;;
    Ascend910A|Ascend910ProA|Ascend910PremiumA|Ascend910ProB|Ascend910) NPU_ARCH=1001 ;;
    *) echo "[ERROR] unknown SoC $SOC_VERSION"; exit 1 ;;
esac

PYTHON=${PYTHON:-python3}
mkdir -p input output
"$PYTHON" scripts/gen_data.py

if [[ "$RUN_MODE" == "cpu" && -z "$ASCEND_HOME_PATH" ]]; then
    # no CANN: fusedsl's CPU implementation of the Ascend C API
    INCLUDE_DIR=${FUSEDSL_INCLUDE_DIR:-$("$PYTHON" -m fusedsl include-dir)}
    if command -v cmake > /dev/null; then
        cmake -S . -B build -DRUN_MODE=cpu -DSOC_VERSION="$SOC_VERSION" -DNPU_ARCH=$NPU_ARCH \
              -DFUSEDSL_INCLUDE_DIR="$INCLUDE_DIR" > build.log
        cmake --build build -j >> build.log
    else
        mkdir -p build
        g++ -std=c++17 -O0 -g -Wall -DASCENDC_CPU_DEBUG -D__NPU_ARCH__=$NPU_ARCH -I "$INCLUDE_DIR" -I . \
            {{name}}_kernel.cpp main.cpp -o build/{{name}}_main > build.log 2>&1
    fi
else
    if [[ -z "$ASCEND_HOME_PATH" ]]; then
        echo "[ERROR] -r $RUN_MODE needs the CANN toolkit: source <CANN>/set_env.sh (ASCEND_HOME_PATH)"
        exit 1
    fi
    cmake -S . -B build -DRUN_MODE="$RUN_MODE" -DSOC_VERSION="$SOC_VERSION" -DNPU_ARCH=$NPU_ARCH \
          -DASCEND_CANN_PACKAGE_PATH="$ASCEND_HOME_PATH" > build.log
    cmake --build build -j >> build.log
    if [[ "$RUN_MODE" == "sim" ]]; then
        export LD_LIBRARY_PATH=$ASCEND_HOME_PATH/tools/simulator/$SOC_VERSION/lib:$LD_LIBRARY_PATH
    fi
fi

./build/{{name}}_main
"$PYTHON" scripts/verify_result.py
