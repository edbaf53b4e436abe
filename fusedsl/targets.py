"""Target descriptors: what each Ascend chip has, as data.

Every number and table here cites the section of shared/ASCENDC.md (written from the
CANN 8.5-9.x documentation) it comes from.  The C++ CPU implementation of the Ascend C
API reads the same table through `backend_ascendc/cpu/include/fusedsl_cpu/targets.inc`,
which `backend_ascendc/cpu/gen_targets.py` generates from this module; a test keeps the
two in step, so this file is the only place to edit.

Element types use the Ascend C spelling ("half", "float", "int32_t", "bfloat16_t"...),
the same as `fusedsl.dtypes.DType.ascendc`.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from fusedsl.errors import TargetError
from fusedsl.record import record

ROUND_MODES = ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC",
               "CAST_ODD", "CAST_HYBRID")


@record
class Target:
    name: str              # fusedsl's name, also the CANN OpDef AddConfig string
    chip: str
    arch: int              # __NPU_ARCH__
    soc_version: str       # CMake SOC_VERSION
    ub_bytes: int          # usable Unified Buffer bytes (fusedsl's own UB plans, the platform API's figure)
    aic_cores: int
    aiv_cores: int
    separated: bool        # AIC and AIV are different cores (arch 2201)
    vector_cores: int      # cores a vector-only kernel launches on
    max_queue_buffers_per_position: int
    max_buffers: int
    has_datacopypad: bool
    kernel_type_macro: bool  # print KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY)
    cann_version: str
    api_dtypes: Mapping[str, frozenset[str]]
    cast_modes: Mapping[tuple[str, str], frozenset[str]]
    # Select in VSEL_TENSOR_SCALAR/TENSOR_TENSOR mode uses this many bytes at the top of
    # UB as library scratch, so the kernel's own UB plan must stay below ub_bytes - this.
    select_scratch_bytes: int = 0
    max_event_ids: int = 8
    # Used by the cost model (fusedsl/cost.py) only:
    clock_mhz: int = 1800          # §4.2: 910B2 cube_freq 1800 MHz (secondary ini quote)
    l1_bytes: int = 524288         # §4.1: L1 512 KB on arch 2201
    cube_macs_per_cycle: int = 4096  # §4.2: 16x16x16 MACs per cycle per AI core (fp16/bf16)
    # §4.2: the chip's L2 (re-reads of a cube kernel's A/B by several cores are served there
    # while the operands fit it) and its HBM bandwidth (secondary sources, order of magnitude:
    # the bound on bytes that miss L2).  0: not known, every read is counted against HBM.
    l2_bytes: int = 201326592        # 910B2 l2_size (ini quote)
    hbm_gbps: int = 1600             # 910B1/B2 quoted 1.6-1.8 TB/s (secondary)
    # Cube buffers (§4.1), checked against a Matmul tiling by the CPU API implementation.
    l0a_bytes: int = 65536
    l0b_bytes: int = 65536
    l0c_bytes: int = 131072
    # §3.1: the Matmul high-level API's (A, B, Bias, C) element-type combinations; empty
    # where the chip has no Matmul API (910A).
    matmul_dtypes: tuple[tuple[str, str, str, str], ...] = ()
    # The whole UB a kernel's TPipe may plan (the CPU API's UB), when it differs from ub_bytes:
    # on 910B the platform API keeps 256 B back for the Matmul API's cube/vector messages, but
    # TPipe::InitBuffer/InitBufPool may plan all 192 KB (ASCENDC.md §4.1).  0: ub_bytes.
    ub_physical_bytes: int = 0

    def __hash__(self) -> int:
        # The tables are read-only mappings, which do not hash; the name is unique.
        return hash(self.name)

    def supports(self, api: str, dtype: str | None = None) -> bool:
        """Whether `api` exists on this target (and accepts element type `dtype`)."""
        dtypes = self.api_dtypes.get(api)
        if dtypes is None:
            return False
        return dtype is None or dtype in dtypes

    def cast_supported(self, src: str, dst: str, mode: str | None = None) -> bool:
        modes = self.cast_modes.get((src, dst))
        if modes is None:
            return False
        return mode is None or mode in modes


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


def _frozen_map(d: dict) -> Mapping:
    return MappingProxyType(dict(d))


# ---------------------------------------------------------------------------------------
# API -> element types.  ASCENDC.md §2.2 (data movement), §2.3 (arithmetic, table),
# §2.4 (Cast), §2.5 (Duplicate/Brcb/Compare/Select), §2.6 (reductions).
# ---------------------------------------------------------------------------------------

# §2.2: DataCopy moves every integer/float width; bfloat16_t only on A2/A3/310B.
_COPY_TYPES = _fs("int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
                  "uint64_t", "half", "float", "double")
_HALF_FLOAT = _fs("half", "float")
_ARITH = _fs("int16_t", "half", "int32_t", "float")          # §2.3 Add/Sub/Mul/Max/Min on A2, 310P
_DUP = _fs("int16_t", "uint16_t", "half", "int32_t", "uint32_t", "float")  # §2.5 Duplicate
_BRCB = _DUP                                                   # Brcb dtype list (DK Brcb.md)
# And/Or/Not are bitwise on 16-bit lanes only; ASCENDC.md does not list them, so only the
# 16-bit integer types are claimed (the conservative reading of the API pages).
_BITWISE = _fs("int16_t", "uint16_t")


def _cast_types(cast_modes: Mapping[tuple[str, str], frozenset[str]]) -> frozenset[str]:
    return frozenset(t for pair in cast_modes for t in pair)


_INT_MODES = _fs("CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC")
_ALL_BUT_ODD = _INT_MODES | {"CAST_NONE"}

# §2.4, the A2/A3 table (DK Cast.md).  Pairs whose types fusedsl's CPU API does not model
# (int4b_t, int64_t) are left out.  int32_t -> half is left out on purpose: its round mode
# is ignored and it needs SetDeqScale, so compilers should go int32 -> float -> half.
_CAST_2201 = {
    ("int8_t", "half"): _fs("CAST_NONE"),
    ("uint8_t", "half"): _fs("CAST_NONE"),
    ("int16_t", "half"): _ALL_BUT_ODD,
    ("int16_t", "float"): _fs("CAST_NONE"),
    ("half", "int8_t"): _ALL_BUT_ODD,
    ("half", "uint8_t"): _ALL_BUT_ODD,
    ("half", "int16_t"): _INT_MODES,
    ("half", "int32_t"): _INT_MODES,
    ("half", "float"): _fs("CAST_NONE"),
    ("bfloat16_t", "int32_t"): _INT_MODES,
    ("bfloat16_t", "float"): _fs("CAST_NONE"),
    ("int32_t", "int16_t"): _fs("CAST_NONE"),
    ("int32_t", "float"): _ALL_BUT_ODD,
    ("float", "int16_t"): _INT_MODES,
    ("float", "half"): _ALL_BUT_ODD | {"CAST_ODD"},
    ("float", "bfloat16_t"): _INT_MODES,      # CAST_NONE is not listed for float -> bf16
    ("float", "int32_t"): _INT_MODES,
    ("float", "float"): _INT_MODES,           # round to an integral float
}

# §2.4, the Atlas 推理系列 AI Core (310P) table.  Note float -> half has no RINT: CAST_NONE
# (which rounds to nearest even when lossy) is the portable choice.
_CAST_2002 = {
    ("int8_t", "half"): _fs("CAST_NONE"),
    ("uint8_t", "half"): _fs("CAST_NONE"),
    ("int16_t", "half"): _fs("CAST_NONE"),
    ("half", "int8_t"): _fs("CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_NONE"),
    ("half", "uint8_t"): _fs("CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_NONE"),
    ("half", "int16_t"): _fs("CAST_RINT"),
    ("half", "int32_t"): _INT_MODES,
    ("half", "float"): _fs("CAST_NONE"),
    ("int32_t", "int16_t"): _fs("CAST_NONE"),
    ("int32_t", "float"): _fs("CAST_NONE"),
    ("float", "half"): _fs("CAST_ODD", "CAST_NONE"),
}

# §2.4, the Atlas 训练系列 (910A) table: like 310P without half -> int16 and int32 -> int16.
_CAST_1001 = {
    ("int8_t", "half"): _fs("CAST_NONE"),
    ("uint8_t", "half"): _fs("CAST_NONE"),
    ("int16_t", "half"): _fs("CAST_NONE"),
    ("half", "int8_t"): _fs("CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_NONE"),
    ("half", "uint8_t"): _fs("CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_NONE"),
    ("half", "int32_t"): _INT_MODES,
    ("half", "float"): _fs("CAST_NONE"),
    ("int32_t", "float"): _fs("CAST_NONE"),
    ("float", "half"): _fs("CAST_ODD", "CAST_NONE"),
}


# §2.6: every reduction family (ReduceSum/Max/Min, the per-repeat WholeReduce* = CANN 9.1
# ReduceRepeat, the per-block BlockReduce* = ReduceDataBlock) takes the same element types on
# one chip: half and float, except 910A (Atlas 训练系列) where the API pages list half only.
_REDUCE_APIS = ("ReduceSum", "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin",
                "BlockReduceSum", "BlockReduceMax", "BlockReduceMin", "ReduceRepeat", "ReduceDataBlock",
                "ReducePairElem")


def _reduce_apis(dtypes: frozenset[str]) -> dict[str, frozenset[str]]:
    return {api: dtypes for api in _REDUCE_APIS}


def _vector_apis(*, bf16: bool, arith: frozenset[str], scalar_arith: frozenset[str],
                 relu: frozenset[str], compare: frozenset[str], compares: frozenset[str],
                 cast_modes: Mapping) -> dict[str, frozenset[str]]:
    """The API table shared by all targets; arguments carry the per-chip differences."""
    copy_types = _COPY_TYPES | ({"bfloat16_t"} if bf16 else set())
    dup_types = _DUP | ({"bfloat16_t"} if bf16 else set())
    return {
        "DataCopy": copy_types,
        "Add": arith, "Sub": arith, "Mul": arith, "Max": arith, "Min": arith,
        "Div": _HALF_FLOAT,
        "Adds": scalar_arith, "Muls": scalar_arith,
        "Exp": _HALF_FLOAT, "Ln": _HALF_FLOAT, "Sqrt": _HALF_FLOAT, "Rsqrt": _HALF_FLOAT,
        "Reciprocal": _HALF_FLOAT, "Abs": _HALF_FLOAT,
        "Relu": relu,
        "Duplicate": dup_types,
        "Copy": dup_types,            # UB -> UB on the vector unit (DK 数据搬运/Copy)
        "Cast": _cast_types(cast_modes),
        "Compare": compare,
        "Select": _HALF_FLOAT,
        **_reduce_apis(_HALF_FLOAT),
        **({"Compares": compares} if compares else {}),
    }


# Composite and shift ops (DK 复合计算/AddRelu.md, SubRelu.md; 逻辑计算/ShiftLeft.md, ShiftRight.md;
# 数据填充/CreateVecIndex.md): A2/A3 and 310P AI Core for AddRelu/SubRelu, A2/A3 only for the
# shifts; CreateVecIndex's 310P type list is not given in the page, so only A2/A3 is claimed.
_RELU_ARITH = _fs("int16_t", "half", "float")
_SHIFT = _fs("int16_t", "uint16_t", "int32_t", "uint32_t")
# Gather (DK 离散与聚合/Gather.md): A2/A3 add bfloat16_t; not on 910A.
_GATHER = _fs("int16_t", "uint16_t", "half", "int32_t", "uint32_t", "float")
_EXTRA_2201 = {"AddRelu": _RELU_ARITH, "SubRelu": _RELU_ARITH, "ShiftLeft": _SHIFT, "ShiftRight": _SHIFT,
               "CreateVecIndex": _fs("int16_t", "half", "int32_t", "float"), "Gather": _GATHER | {"bfloat16_t"},
               "Gatherb": _fs("uint16_t", "uint32_t")}   # Gatherb(ISASI).md: A2/A3 only
_EXTRA_2002 = {"AddRelu": _RELU_ARITH, "SubRelu": _RELU_ARITH, "Gather": _GATHER}

_APIS_2201 = _vector_apis(bf16=True, arith=_ARITH, scalar_arith=_ARITH,
                          relu=_fs("half", "int32_t", "float"),
                          compare=_fs("half", "float", "int32_t"),   # int32_t: CMPMODE::EQ only
                          compares=_fs("half", "float", "int32_t"),  # likewise
                          cast_modes=_CAST_2201) | {
    "DataCopyPad": _COPY_TYPES | {"bfloat16_t"},   # §2.2: A2/A3, 310B, 950 only
    "Maxs": _ARITH, "Mins": _ARITH,
    "LeakyRelu": _HALF_FLOAT,
    "Brcb": _BRCB | {"bfloat16_t"},
    "And": _BITWISE, "Or": _BITWISE, "Not": _BITWISE,
} | _EXTRA_2201

_APIS_2002 = _vector_apis(bf16=False, arith=_ARITH, scalar_arith=_ARITH,
                          relu=_fs("half", "int32_t", "float"),
                          compare=_HALF_FLOAT, compares=_HALF_FLOAT,   # Compares.md, 310P AI Core
                          cast_modes=_CAST_2002) | {
    "Maxs": _ARITH, "Mins": _ARITH,
    "LeakyRelu": _HALF_FLOAT,
    "Brcb": _BRCB,
    "And": _BITWISE, "Or": _BITWISE, "Not": _BITWISE,
} | _EXTRA_2002

# §2.3/§2.5/§6.6: 910A has no Maxs/Mins/LeakyRelu/Brcb, Relu on half only, Adds/Muls on
# half/float, Add... without int16.  Compares is "not supported" on 910A (Compares.md).
# And/Or/Not are not claimed: the sources consulted do not list them for 910A.
_APIS_1001 = _vector_apis(bf16=False, arith=_fs("half", "int32_t", "float"),
                          scalar_arith=_HALF_FLOAT, relu=_fs("half"),
                          compare=_HALF_FLOAT, compares=frozenset(),
                          cast_modes=_CAST_1001) | _reduce_apis(_fs("half"))


# §3.1 "Dtype combinations (A, B, Bias -> C)", read as one row per listed output type.
# int8 rows are restricted to an int32_t result: the dequantising outputs (half/int8) need
# SetQuantScalar, which the CPU implementation does not model.
_MATMUL_2201 = (
    ("half", "half", "float", "float"),
    ("half", "half", "half", "float"), ("half", "half", "half", "bfloat16_t"),
    ("half", "half", "half", "half"),   # asc-devkit Matmul使用说明 表2: half bias, half/bfloat16_t C on A2/A3
    ("bfloat16_t", "bfloat16_t", "float", "float"), ("bfloat16_t", "bfloat16_t", "float", "bfloat16_t"),
    ("bfloat16_t", "bfloat16_t", "float", "half"),
    ("float", "float", "float", "float"), ("float", "float", "float", "half"),
    ("float", "float", "float", "bfloat16_t"),
    ("float", "float", "half", "float"), ("float", "float", "half", "half"), ("float", "float", "half", "bfloat16_t"),
    ("int8_t", "int8_t", "int32_t", "int32_t"),
    ("int8_t", "int8_t", "int32_t", "half"),   # Matmul使用说明 表2: dequantised (SetQuantScalar/SetQuantVector)
)
# §3.1: the first combination is the one stated for Atlas 推理系列 (310P) AI Core; asc-devkit
# Matmul使用说明 表2 also lists int8_t x int8_t with an int32_t bias into int32_t C for it.
_MATMUL_2002 = (("half", "half", "float", "float"), ("int8_t", "int8_t", "int32_t", "int32_t"))


def _freeze_apis(d: dict[str, frozenset[str]]) -> Mapping[str, frozenset[str]]:
    return _frozen_map({k: frozenset(v) for k, v in sorted(d.items())})


_ASCEND910B = Target(
    name="ascend910b",
    chip="Ascend910B2",
    arch=2201,                       # ASCENDC.md §0 architecture table
    soc_version="Ascend910B2",
    ub_bytes=196352,                 # §4.1: 192 KB minus the 256-B reserve the platform API reports
    aic_cores=24, aiv_cores=48,      # §4.2, 910B2 ([PTO] ini quote, [HAMI])
    separated=True,                  # §0: AIC and AIV are separate cores, 1:2
    vector_cores=48,                 # §1.2: a vector-only kernel's numBlocks counts AIVs
    max_queue_buffers_per_position=8,  # §1.3 TQue
    max_buffers=64,                  # §1.3 InitBuffer
    has_datacopypad=True,            # §2.2
    kernel_type_macro=True,          # §1.1 / §6.8
    cann_version="8.5",
    api_dtypes=_freeze_apis(_APIS_2201),
    cast_modes=_frozen_map(_CAST_2201),
    select_scratch_bytes=8192,       # §2.5: TMP_UB_OFFSET = 184 KB, the top 8 KB of the 192 KB UB
    matmul_dtypes=_MATMUL_2201,
    # §4.1: DK TOTAL_UB_SIZE = 192 KB; CANN's CPU debug mode lets a TPipe plan all of it
    # (asc-devkit impl/basic_api/utils/kernel_utils_mode_cpu.h, ConstDefiner::bufferInitLen
    # UB = 192 KB for __NPU_ARCH__ 2201), and asc-devkit's tbufpool_management plans 192 KB.
    ub_physical_bytes=196608,
)

TARGETS: dict[str, Target] = {
    "ascend910b": _ASCEND910B,
    # §4.2: 910B4 has 20 AIC / 40 AIV; same arch and UB as 910B2.
    "ascend910b4": replace(_ASCEND910B, name="ascend910b4", chip="Ascend910B4",
                           soc_version="Ascend910B4", aic_cores=20, aiv_cores=40, vector_cores=40,
                           clock_mhz=1500,    # §4.2: 910B4 1500 MHz (secondary)
                           l2_bytes=100663296, hbm_gbps=800),   # §4.2: 910B4 l2_size, ~0.8 TB/s (secondary)
    "ascend310p": Target(
        name="ascend310p",
        chip="Ascend310P3",
        arch=2002,
        soc_version="Ascend310P3",
        ub_bytes=262144,             # §4.1: 256 KB (DK constant)
        aic_cores=8, aiv_cores=0,    # §4.2: 8 AI cores (the 7 separate Vector Cores are not used)
        separated=False,
        vector_cores=8,
        max_queue_buffers_per_position=8,
        max_buffers=64,
        has_datacopypad=False,       # §2.2: not on Atlas 推理系列
        kernel_type_macro=False,     # §1.1 says it is valid on 310P, but it changes nothing there
        cann_version="8.5",
        api_dtypes=_freeze_apis(_APIS_2002),
        cast_modes=_frozen_map(_CAST_2002),
        # §2.5: Select modes 1/2 need 8 KB of UB on 310P too; where it sits is not documented,
        # so the top 8 KB is assumed, as on 2201.
        select_scratch_bytes=8192,
        l1_bytes=1048576, l0c_bytes=262144,   # §4.1: arch 2002 L1 1 MB, L0C 256 KB
        l2_bytes=16777216,           # §4.2: 310P3 L2 16 MB (secondary ini quotes)
        hbm_gbps=204,                # LPDDR4X, Atlas 300I Pro's quoted 204.8 GB/s (secondary)
        matmul_dtypes=_MATMUL_2002,
    ),
    "ascend910": Target(
        name="ascend910",
        chip="Ascend910A",
        arch=1001,
        soc_version="Ascend910A",
        ub_bytes=262144,             # §4.1: 262144 (TOOLS ascend910_ini.h)
        # §4.2 (conflict): HAMi lists 30 usable AI cores, Huawei's Hot Chips 2019 talk 32 per
        # die; 30 is what a launch can use.
        aic_cores=30, aiv_cores=0,
        separated=False,
        vector_cores=30,
        max_queue_buffers_per_position=4,  # §1.3: 4 on Atlas 训练系列
        max_buffers=64,
        has_datacopypad=False,       # §2.2
        kernel_type_macro=False,     # §1.1: not supported on 910A
        cann_version="8.5",
        api_dtypes=_freeze_apis(_APIS_1001),
        cast_modes=_frozen_map(_CAST_1001),
        max_event_ids=4,             # §6.7: event ids 0-3 on 910A
        l1_bytes=1048576, l0c_bytes=262144,   # §4.1: arch 1001 (no Matmul API, §3.1)
        l2_bytes=0, hbm_gbps=1200,   # §4.2: L2 not in the sources; HBM ~1.2 TB/s (secondary)
    ),
}

DEFAULT_TARGET = "ascend910b"

# §0 / §5: the __NPU_ARCH__ value a CPU build is compiled with picks the default target.
ARCH_DEFAULT_TARGET = {2201: "ascend910b", 2002: "ascend310p", 1001: "ascend910"}


def get_target(name: str | Target) -> Target:
    """The target called `name`; unknown names raise TargetError listing the known ones."""
    if isinstance(name, Target):
        return name
    target = TARGETS.get(name)
    if target is None:
        known = ", ".join(TARGETS)
        raise TargetError(f"unknown target {name!r}", hint=f"known targets: {known}")
    return target


def with_cann_version(target: Target, version) -> Target:
    """`target` printing the API spelling of CANN `version` ("8.5", "9.0", "9.1", ...): from 9.1
    the per-repeat reductions are ReduceRepeat/ReduceDataBlock (ASCENDC.md 2.6)."""
    text = str(version).strip()
    parts = text.split(".")
    if not (1 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
        raise TargetError(f"cann_version={version!r} is not a CANN version",
                          hint='give it as "major.minor", e.g. cann_version="9.1"')
    return replace(target, cann_version=text)


def host_casts(target: Target) -> Target:
    """`target` with every Cast pair and mode legal: the CPU executor's view of a chip.

    The host converts between any two dtypes directly, so narrow-integer kernels run on the
    CPU with numpy's exact wrap-around instead of the chip's detours through float16.
    Everything else (UB size, cores, API table) is the chip's, so tiling is unchanged.
    """
    from fusedsl.dtypes import ALL
    names = {d.ascendc for d in ALL}
    every = frozenset(ROUND_MODES)
    return replace(target, cast_modes=_frozen_map({(a, b): every for a in names for b in names if a != b}))
