"""Every hardware rule the CPU API implementation enforces, broken on purpose
(tests/ascendc_kernels/broken_kernels.cpp), plus the runner's build errors and cache."""
import os
import re
import warnings

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import (ArgumentError, AscendCCheckError, AscendCCompileError, AscendCWarning, FusedslWarning,
                            GmCacheLineWarning, TargetError)

KERNELS = ASCENDC_KERNELS
TILE = 256


pytestmark = pytest.mark.usefixtures("private_cache_dir")


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(KERNELS, "broken_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="broken_kernels")


def run(lib, entry, target="ascend910b", blocks=4):
    x = np.arange(blocks * TILE, dtype=np.float32)
    y = np.ones(blocks * TILE, np.float32)
    z = np.zeros(blocks * TILE, np.float32)
    stats = lib.launch(entry, blocks, [("x", x), ("y", y), ("z", z)], target=target)
    return stats, x, z


def fails(lib, entry, pattern, target="ascend910b", block=0):
    with pytest.raises(AscendCCheckError) as exc:
        run(lib, entry, target)
    msg = str(exc.value)
    prefix = f"fusedsl CPU check ({target}, block {block}): "
    assert msg.startswith(prefix), msg
    at_the_call(msg[len(prefix):])
    assert pattern in msg, f"{pattern!r} not in {msg!r}"
    return msg


def at_the_call(text):
    """Every check names the kernel line of the call it is about: the message starts with
    broken_kernels.cpp:N: and the API it names (`Add:`, `DataCopy(GM->UB):`, `LocalTensor::GetValue:`,
    `SetFlag<...>`), and line N of the kernel calls that API."""
    m = re.match(r"broken_kernels\.cpp:(\d+): (?:\w+::)?(\w+)", text)
    assert m, f"no kernel file:line at the start of {text!r}"
    with open(os.path.join(KERNELS, "broken_kernels.cpp"), encoding="utf-8") as f:
        line = f.read().splitlines()[int(m.group(1)) - 1]
    assert m.group(2) in line, f"line {m.group(1)} ({line.strip()!r}) does not call {m.group(2)}: {text!r}"


def test_good_kernel_passes_everywhere(lib):
    for target in ("ascend910b", "ascend910b4", "ascend310p", "ascend910"):
        stats, x, z = run(lib, "good", target)
        np.testing.assert_array_equal(z, x + 1)
        assert stats.gm_bytes_read == 2 * 4 * TILE * 4 and stats.gm_bytes_written == 4 * TILE * 4


def test_ub_overflow(lib):
    fails(lib, "ub_overflow", "InitBuffer: UB plan needs 211072 bytes, ascend910b has 196608")
    run(lib, "ub_overflow", "ascend310p")   # 256 KB of UB there


def test_too_many_buffers(lib):
    fails(lib, "too_many_buffers", "InitBuffer: this TPipe would hold 65 buffers; at most 64")


def test_outstanding_queue_buffers_per_position(lib):
    run(lib, "too_many_outstanding", "ascend910b")
    fails(lib, "too_many_outstanding", "AllocTensor: 5 queue buffers of position VECIN would be allocated at once; "
          "ascend910 allows 4", target="ascend910")


def test_unaligned_sub_tensor(lib):
    fails(lib, "unaligned_subtensor", "Add: src0 starts at UB offset 12, which is not 32-byte aligned")


def test_datacopy_32_byte_rule_names_the_block(lib):
    fails(lib, "datacopy_not_32b", "DataCopy(GM->UB): count*sizeof(float) = 100 bytes is not a multiple of 32; "
          "the NPU would silently copy only 96 bytes — use DataCopyPad or pad the length", block=3)
    msg = fails(lib, "datacopy_not_32b", "not a multiple of 32", target="ascend310p", block=3)
    assert "DataCopyPad is not available" in msg


def test_deque_on_empty_queue(lib):
    fails(lib, "deque_empty", "DeQue: TQue<VECIN> (UB [0, 2048), 2 x 1024 bytes) is empty")


def test_alloc_beyond_queue_capacity(lib):
    fails(lib, "alloc_beyond_capacity", "AllocTensor: all 2 buffers of TQue<VECOUT>")


def test_double_free(lib):
    fails(lib, "double_free", "FreeTensor: double free of the tensor at UB offset 0 in TQue<VECOUT>")


def test_free_of_a_tensor_from_another_queue(lib):
    fails(lib, "free_foreign", "FreeTensor: the tensor at UB offset 0 was not allocated from this TQue<VECIN>")


def test_enque_twice(lib):
    fails(lib, "enque_twice", "EnQue: the tensor at UB offset 0 is already in TQue<VECIN>")


def _ascendc_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, AscendCWarning)]


def test_leaks_at_kernel_end_are_reported_once_per_launch(lib):
    # a warning, not an error: CANN's CPU debug mode does not check it (its layernorm sample ends holding one);
    # an AscendCWarning (a FusedslWarning) that warnings filters can silence or turn into an error
    for entry, what in (("leak", "1 tensor(s) allocated but never freed"),
                        ("leak_enqueued", "1 tensor(s) enqueued but never dequeued")):
        with pytest.warns(AscendCWarning) as record:
            run(lib, entry)
        texts = _ascendc_warnings(record)
        assert len(texts) == 1 and f"leak — at the end of the kernel {what}" in texts[0], texts
        assert "the TQue FreeTensor page: AllocTensor and FreeTensor are used in pairs" in texts[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FusedslWarning)
        with pytest.raises(AscendCWarning, match="leak"):
            run(lib, "leak")


def test_dtype_not_supported_on_target(lib):
    run(lib, "relu_float", "ascend910b")
    fails(lib, "relu_float", "Relu<float> is not supported on ascend910 (supported: half)", target="ascend910")


def test_datacopypad_not_on_310p(lib):
    run(lib, "datacopypad", "ascend910b")
    fails(lib, "datacopypad", "DataCopyPad is not available on ascend310p", target="ascend310p")


def test_cast_round_mode_per_target(lib):
    run(lib, "cast_rint", "ascend910b")
    fails(lib, "cast_rint", "Cast: float -> half with CAST_RINT is not supported on ascend310p "
          "(supported: CAST_NONE CAST_ODD)", target="ascend310p")


def test_uninitialised_read(lib):
    fails(lib, "uninit_read", "Exp: reads 64 bytes of UB at offset 512 that were never written")
    # a UB->UB DataCopy carries the marks along (no error for the move itself, as memory checkers treat copies)
    fails(lib, "moved_uninit_read", "Exp: reads 64 bytes of UB at offset 1536 that were never written")


def test_gm_out_of_bounds_names_the_buffer(lib):
    fails(lib, "gm_out_of_bounds", "DataCopy(GM->UB): accesses 1024 bytes starting 0 bytes past the end of "
          "GM buffer 'x' (4096 bytes)")


def test_gm_access_past_set_global_buffer_length_is_allowed_inside_the_buffer(lib):
    # CANN's CPU debug mode checks only the alignment of a DataCopy's GM side, and its samples read
    # past a GlobalTensor's length on purpose (ReduceMinKernelInvocation): one warning, no error;
    # leaving the GM buffer itself still fails (test_gm_out_of_bounds_names_the_buffer).
    with pytest.warns(AscendCWarning) as record:
        run(lib, "gm_past_length")
    texts = _ascendc_warnings(record)
    assert len(texts) == 1 and texts[0].endswith(
        "DataCopy(GM->UB) accesses 1024 bytes from a GlobalTensor whose SetGlobalBuffer length is 128 elements "
        "(512 bytes); allowed, it stays inside GM buffer 'x' (reported once per launch)"), texts


def test_two_cores_writing_the_same_bytes(lib):
    fails(lib, "overlapping_writes", "DataCopy(UB->GM): block 0 and block 1 both write byte 2 of GM buffer 'z'",
          block=1)


def test_cores_writing_the_same_values_is_a_benign_race(lib):
    # CANN's create_vec_index sample: every core writes the same table to the same bytes
    _, x, z = run(lib, "same_value_writes")
    np.testing.assert_array_equal(z[:TILE], x[:TILE])


def test_atomic_add_allows_shared_writes(lib):
    stats, x, z = run(lib, "atomic_writes")
    np.testing.assert_array_equal(z[:TILE], 4 * x[:TILE])
    np.testing.assert_array_equal(z[TILE:], 0)


def test_flag_pairing(lib):
    fails(lib, "wait_without_set", "WaitFlag<HardEvent::MTE2_V>(1): no SetFlag with the same event and id")
    fails(lib, "set_never_waited", "SetFlag<HardEvent::MTE3_MTE2>(2) was never waited")


def test_compare_count_must_cover_whole_repeats(lib):
    fails(lib, "compare_not_256b", "Compares: count*sizeof(float) = 160 bytes is not a multiple of 256")


def test_scalar_gm_access_is_counted(lib):
    stats, x, z = run(lib, "scalar_gm")
    np.testing.assert_array_equal(z[:64:16], 2 * x[:64:16])
    assert stats.scalar_gm_accesses == 8
    assert stats.gm_bytes_read == 16 and stats.gm_bytes_written == 16


@pytest.mark.parametrize("target, block", [("ascend910b", "[Block_1][AIV_0]"), ("ascend310p", "[Core_1]")])
def test_kernel_log_prints_on_stdout_as_cpudebug_does(lib, capfd, target, block):
    run(lib, "kernel_log", target)
    out, err = capfd.readouterr()
    line = _kernel_line("kernel_log")
    pid = os.getpid()   # every block runs in this process (cpudebug: each core's child)
    assert out == (f"[WARN]{block}[broken_kernels.cpp:{line}][kernel_log][{pid}] tile 3 of 4\n"
                   f"[DEBUG]{block}[broken_kernels.cpp:{line + 1}][kernel_log][{pid}] no arguments\n"), out
    assert err == ""


def test_block_indices_and_kernel_printf(lib, capfd):
    stats, x, z = run(lib, "block_info")
    np.testing.assert_array_equal(z[:64].reshape(4, 16)[:, :4], [[b, 4, 0, 11] for b in range(4)])
    assert stats.scalar_gm_accesses == 16
    assert capfd.readouterr().out == "block 2 of 4: 1.500000\ndone\n"


def test_launch_argument_errors(lib):
    x = np.zeros((4, TILE * 2), np.float32)[:, ::2]
    with pytest.raises(ArgumentError, match="C-contiguous"):
        lib.launch("good", 1, [("x", x)])
    with pytest.raises(ArgumentError, match="fusedsl_launch_nope"):
        lib.launch("nope", 1, [])
    with pytest.raises(TargetError, match="known targets"):
        run(lib, "good", target="ascend000")
    with pytest.raises(AscendCCheckError, match=r"blockDim = 0"):
        run(lib, "good", blocks=0)


def test_compile_error_raises_with_compiler_output():
    src = '#include "kernel_operator.h"\nextern "C" void k() { AscendC::NoSuchApi(); }\n'
    with pytest.raises(AscendCCompileError) as exc:
        cpu_runner.build(src, name="broken_syntax")
    msg = str(exc.value)
    assert "g++ failed to compile broken_syntax.cpp" in msg
    assert "NoSuchApi" in msg


SMALL = """
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void twice(GM_ADDR x) {
    AscendC::GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)x);
    const int64_t i = AscendC::GetBlockIdx() * 16;   // a 64-byte line per block
    g.SetValue(i, g.GetValue(i) * 2.0f);
}
extern "C" int fusedsl_launch_twice(uint32_t blockDim, uint8_t** args) {
    return fusedsl_cpu::Launch(twice, blockDim, args[0]);
}
"""


def test_cache_hit_and_corrupted_cache_entry_is_rebuilt():
    path = cpu_runner.cache_path(SMALL)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"not a shared library")
    lib = cpu_runner.build(SMALL, name="twice")
    assert lib.path == path
    x = np.arange(128, dtype=np.float32)
    lib.launch("twice", 8, [("x", x)])
    np.testing.assert_array_equal(x[::16], 2 * np.arange(0, 128, 16, dtype=np.float32))
    mtime = os.stat(path).st_mtime_ns
    again = cpu_runner.build(SMALL, name="twice")
    assert again.path == path and os.stat(path).st_mtime_ns == mtime   # a cache hit, not a rebuild
    leftovers = [f for f in os.listdir(cpu_runner.cache_dir()) if f.startswith(".")]
    assert leftovers == []


# ---- issue 10 item 6: use after free, queue ownership, pipe order, the GM data cache -------

def test_use_after_free_three_forms(lib):
    fails(lib, "free_then_vector", "Exp: src uses UB offset 0 of a TQue buffer that is not allocated — the tensor "
          "was released with FreeTensor (use after free)")
    fails(lib, "free_then_copy_out", "DataCopy(UB->GM): src uses UB offset 0 of a TQue buffer that is not allocated")
    fails(lib, "free_then_get_value", "LocalTensor::GetValue: the tensor uses UB offset 0 of a TQue buffer that is "
          "not allocated")


def test_write_into_an_enqueued_tensor(lib):
    fails(lib, "write_after_enque", "Adds: dst uses UB offset 0 of a tensor that is in a TQue (after EnQue, before "
          "DeQue)")


def test_tbuf_needs_flags_between_pipes(lib):
    stats, x, z = run(lib, "tbuf_synced")
    np.testing.assert_array_equal(z, -x)
    fails(lib, "tbuf_no_mte2_v", "Muls: reads UB byte 0 that DataCopy(GM->UB) (pipe MTE2) wrote, with no "
          "synchronisation from MTE2 to V in between")
    fails(lib, "tbuf_no_v_mte3", "DataCopy(UB->GM): reads UB byte 0 that Muls (pipe V) wrote, with no "
          "synchronisation from V to MTE3")


def test_scalar_read_after_vector_needs_a_barrier(lib):
    stats, x, z = run(lib, "get_value_synced")
    assert (z[::TILE] == 3).all()
    fails(lib, "get_value_no_barrier", "LocalTensor::GetValue: reads UB byte 0 that Duplicate (pipe V) wrote, with "
          "no synchronisation from V to S")


def test_cce_auto_sync_supplies_only_the_scalar_flags():
    # bisheng's default --cce-auto-sync inserts the flags between PIPE_S and V/MTE2/MTE3 (asc-devkit
    # 核内同步/关键特性说明); the ASC driver builds with FUSEDSL_CCE_AUTO_SYNC=1, the rest stays explicit
    with open(os.path.join(KERNELS, "broken_kernels.cpp"), encoding="utf-8") as f:
        auto = cpu_runner.build(f.read(), name="broken_kernels", extra_flags=["-DFUSEDSL_CCE_AUTO_SYNC=1"])
    stats, x, z = run(auto, "get_value_no_barrier")
    assert (z[::TILE] == 3).all()
    fails(auto, "tbuf_no_mte2_v", "Muls: reads UB byte 0 that DataCopy(GM->UB) (pipe MTE2) wrote, with no "
          "synchronisation from MTE2 to V in between")


def _kernel_line(marker):
    with open(os.path.join(KERNELS, "broken_kernels.cpp"), encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


def test_scalar_gm_writes_and_the_data_cache(lib):
    # different bytes of one 64-byte line from two cores' SetValue: kept, as CANN's CPU debug mode does, with a
    # GmCacheLineWarning at the kernel line (the device's whole-line write-backs may undo one core's bytes)
    with pytest.warns(GmCacheLineWarning) as record:
        stats, x, z = run(lib, "scalar_shared_line")
    assert (z[:4] == 1).all()
    texts = [str(w.message) for w in record if issubclass(w.category, GmCacheLineWarning)]
    assert len(texts) == 1, texts   # once per buffer
    line = _kernel_line("scalar_shared_line")
    assert re.match(rf"broken_kernels\.cpp:{line}: GlobalTensor::SetValue: block 1 writes bytes \[4, 8\) of GM buffer "
                    rf"'z' in the 64-byte line at byte 0, of which block 0 wrote other bytes, and block 0 wrote it "
                    rf"through its data cache \(GlobalTensor::SetValue at \S*broken_kernels\.cpp:{line}\)", texts[0]), texts
    assert issubclass(GmCacheLineWarning, FusedslWarning)
    # the same bytes: another value is refused (the last write-back wins; 1.0f and 2.0f differ first in byte 2),
    # the value already there is not
    msg = fails(lib, "scalar_same_bytes", "GlobalTensor::SetValue: block 1 writes byte 2 of GM buffer 'z' with another "
                "value than block 0 wrote there, in the 64-byte line at byte 0, and block 0 wrote it through its data "
                "cache", block=1)
    assert f"broken_kernels.cpp:{_kernel_line('scalar_same_bytes')}: GlobalTensor::SetValue" in msg, msg
    with pytest.warns(GmCacheLineWarning):
        stats, x, z = run(lib, "scalar_same_value")
    assert z[0] == 1
    run(lib, "scalar_then_dma_clean")
    fails(lib, "scalar_then_dma", "DataCopy(GM->UB): reads bytes of GM buffer 'z' that this core wrote with "
          "GlobalTensor::SetValue (the 64-byte line at byte 0 is still dirty")
    fails(lib, "scalar_then_dma_clean", "DataCacheCleanAndInvalid<T, CacheLine, DcciDst>: ascend310p supports only "
          "the form without DcciDst", target="ascend310p")
    fails(lib, "scalar_then_dma_clean", "DataCacheCleanAndInvalid is not available on ascend910", target="ascend910")


def test_datacopy_out_of_a_partly_written_block(lib):
    stats, x, z = run(lib, "one_block_partly_written")
    assert (z[::TILE] == 5).all()
    fails(lib, "second_block_unwritten", "DataCopy(UB->GM): reads 32 bytes of UB at offset 32 that were never written")


def test_flags_order_pipes_transitively(lib):
    stats, x, z = run(lib, "transitive_flags")
    want = x.reshape(4, TILE).copy()
    want[:, :TILE // 2] *= 2
    np.testing.assert_array_equal(z, want.ravel())
