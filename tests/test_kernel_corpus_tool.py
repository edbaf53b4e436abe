"""tools/kernel_corpus.py's `closeness`: how far a changed result lies from numpy's reference.

The corpus tool judges compiler changes that alter results on purpose (another summation order,
a fix); these tests pin its measure on hand-made records, without compiling anything."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "tools", "kernel_corpus.py")
_spec = importlib.util.spec_from_file_location("kernel_corpus", _PATH)
kc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kc)


def test_distance_counts_units_in_the_last_place_at_the_largest_reference_magnitude():
    ref = np.array([4.0, 1e-6, -2.0], np.float32)
    assert kc.distance(ref.copy(), ref) == 0.0
    one = np.spacing(np.float32(4.0))
    got = ref.copy()
    got[1] += 3 * one               # near zero: measured against the largest magnitude, not its own ulp
    assert kc.distance(got, ref) == pytest.approx(3.0)
    half = np.array([1.0, 2.0], np.float16)
    assert kc.distance(half + np.float16(np.spacing(np.float16(2.0))), half) == pytest.approx(1.0)


def test_distance_of_nans_infinities_shapes_and_integers():
    ref = np.array([1.0, np.nan, np.inf], np.float32)
    assert kc.distance(ref.copy(), ref) == 0.0                                    # NaN where NaN: equal
    assert kc.distance(np.array([1.0, 0.0, np.inf], np.float32), ref) == float("inf")
    assert kc.distance(np.array([1.0, np.nan, -np.inf], np.float32), ref) == float("inf")
    assert kc.distance(np.zeros(2, np.float32), np.zeros(3, np.float32)) == float("inf")
    assert kc.distance(np.array([1, 2, 3], np.int32), np.array([1, 5, 4], np.int32)) == 2.0
    assert kc.distance(np.array([True, False]), np.array([True, True])) == 1.0


def _records(tmp_path, name, llvm_hash, result, ref):
    folder = tmp_path / name
    folder.mkdir()
    key = "row/sum|ascend910b|(3, 4):float32"
    kc._save(str(folder), key, {"llvm": (result,), "ref": (ref,)})
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([{"key": key, "llvm": llvm_hash}]))
    return str(path), str(folder)


def test_closeness_says_which_side_is_nearer_numpy(tmp_path, capsys):
    ref = np.array([1.0, 2.0, 4.0], np.float32)
    step = np.spacing(np.float32(4.0))
    before = _records(tmp_path, "before", "aaaa", ref + 2 * step, ref)
    after = _records(tmp_path, "after", "bbbb", ref + step, ref)
    assert kc.closeness(before[0], after[0], before[1], after[1]) == 0
    out = capsys.readouterr().out
    assert "| row | llvm | 1 | 1 | 0 | 0 | 2 | 1 |" in out
    # the other way round it went farther, and says so by name
    kc.closeness(after[0], before[0], after[1], before[1])
    out = capsys.readouterr().out
    assert "farther llvm row/sum|ascend910b|(3, 4):float32: 1 -> 2 ulp" in out
    assert "| row | llvm | 1 | 0 | 0 | 1 | 1 | 2 |" in out
