#!/bin/bash
# Run and verify the {{name}} op project on the CPU: bash run.sh -r cpu -v <soc>
# (on a CANN machine, build the op package with msopgen's scaffold instead; see README.md)
set -e
CURRENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$CURRENT_DIR"

RUN_MODE="cpu"
SOC_VERSION="{{soc}}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        -r|--run-mode) RUN_MODE="$2"; shift 2 ;;
        -v|--soc-version) SOC_VERSION="$2"; shift 2 ;;
        *) echo "usage: bash run.sh -r cpu -v <soc>"; exit 1 ;;
    esac
done
if [[ "$RUN_MODE" != "cpu" ]]; then
    echo "[ERROR] an op project runs on sim/npu through CANN's op package build (msopgen; see README.md)"
    exit 1
fi
case "$SOC_VERSION" in
    Ascend910B*|Ascend910_93*) NPU_ARCH=2201 ;;
    Ascend310P*) NPU_ARCH=2002 ;;
    Ascend910A|Ascend910ProA|Ascend910PremiumA|Ascend910ProB|Ascend910) NPU_ARCH=1001 ;;
    *) echo "[ERROR] unknown SoC $SOC_VERSION"; exit 1 ;;
esac

PYTHON=${PYTHON:-python3}
INCLUDE_DIR=${FUSEDSL_INCLUDE_DIR:-$("$PYTHON" -m fusedsl include-dir)}
mkdir -p input output build
"$PYTHON" scripts/gen_data.py
FLAGS="-std=c++17 -O0 -g -Wall -DASCENDC_CPU_DEBUG -D__NPU_ARCH__=$NPU_ARCH -I $INCLUDE_DIR -I ."
OBJECTS=""
for k in {{kernels}}; do
    g++ $FLAGS -include "op_host/${k}_tiling.h" -c "op_kernel/$k.cpp" -o "build/${k}_kernel.o"
    g++ $FLAGS -I op_host -c "op_host/$k.cpp" -o "build/${k}_host.o"
    OBJECTS="$OBJECTS build/${k}_kernel.o build/${k}_host.o"
done
g++ $FLAGS cpu_test/main.cpp $OBJECTS -o build/{{name}}_op_cpu
./build/{{name}}_op_cpu
"$PYTHON" scripts/verify_result.py
