"""The target table: lookups, errors, and the generated C++ copy staying in step."""
import pytest

from fusedsl.backend_ascendc.cpu import gen_targets
from fusedsl.errors import TargetError
from fusedsl.targets import DEFAULT_TARGET, TARGETS, get_target


def test_checked_in_targets_inc_matches_targets_py():
    with open(gen_targets.INC_PATH, encoding="utf-8") as f:
        checked_in = f.read()
    assert checked_in == gen_targets.generate(), (
        "include/fusedsl_cpu/targets.inc is stale: run python -m fusedsl.backend_ascendc.cpu.gen_targets")


def test_generated_table_lists_every_target_and_api():
    text = gen_targets.generate()
    for t in TARGETS.values():
        assert f'"{t.name}", "{t.chip}", {t.arch}, {t.ub_bytes}u' in text
        for api in t.api_dtypes:
            assert f'{{"{api}", ' in text


def test_default_target():
    t = get_target(DEFAULT_TARGET)
    assert (t.name, t.arch, t.ub_bytes, t.aic_cores, t.aiv_cores) == ("ascend910b", 2201, 196352, 24, 48)
    assert t.separated and t.vector_cores == 48 and t.kernel_type_macro and t.has_datacopypad
    # fusedsl's own plans (and the platform API) keep 256 B of the 192 KB back; a kernel's TPipe may plan all of it
    assert t.ub_physical_bytes == 196608 and get_target("ascend310p").ub_physical_bytes == 0


def test_unknown_target_lists_known_names():
    with pytest.raises(TargetError) as exc:
        get_target("ascend950")
    msg = str(exc.value)
    assert "unknown target 'ascend950'" in msg
    for name in TARGETS:
        assert name in msg


def test_get_target_passes_targets_through():
    t = get_target("ascend310p")
    assert get_target(t) is t


@pytest.mark.parametrize("name, api, dtype, ok", [
    ("ascend910b", "Add", "half", True),
    ("ascend910b", "Add", "bfloat16_t", False),      # bf16 is not arithmetic on A2
    ("ascend910b", "Duplicate", "bfloat16_t", True),
    ("ascend910b", "DataCopyPad", None, True),
    ("ascend310p", "DataCopyPad", None, False),
    ("ascend910", "DataCopyPad", None, False),
    ("ascend910", "Relu", "half", True),
    ("ascend910", "Relu", "float", False),
    ("ascend910", "LeakyRelu", None, False),
    ("ascend910", "Maxs", None, False),
    ("ascend910", "Brcb", None, False),
    ("ascend310p", "Brcb", "bfloat16_t", False),
    ("ascend910b4", "LeakyRelu", "float", True),
    ("ascend910b", "NoSuchApi", None, False),
])
def test_supports(name, api, dtype, ok):
    assert get_target(name).supports(api, dtype) is ok


def test_cast_tables():
    b, p, a = get_target("ascend910b"), get_target("ascend310p"), get_target("ascend910")
    assert b.cast_supported("float", "half", "CAST_RINT")
    assert not b.cast_supported("float", "bfloat16_t", "CAST_NONE")
    assert not b.cast_supported("half", "bfloat16_t")          # no direct half <-> bf16
    assert not p.cast_supported("float", "half", "CAST_RINT")  # 310P: only ODD/NONE
    assert p.cast_supported("float", "half", "CAST_ODD")
    assert not a.cast_supported("float", "int32_t")
    for t in TARGETS.values():
        for (src, dst) in t.cast_modes:
            assert t.supports("Cast", src) and t.supports("Cast", dst)


def test_targets_hash_and_differ():
    b, b4 = get_target("ascend910b"), get_target("ascend910b4")
    assert {b: 1, b4: 2}[b4] == 2
    assert (b4.arch, b4.ub_bytes, b4.aic_cores, b4.aiv_cores, b4.vector_cores) == (2201, 196352, 20, 40, 40)
    assert get_target("ascend910").max_queue_buffers_per_position == 4
    assert get_target("ascend310p").ub_bytes == 262144 and not get_target("ascend310p").separated
