"""benchmarks/samples.py reads each sample's SCENARIO_NUM values from its README's option table: lists and
ranges (`1`~`8`, `0`-`8`, 1-14) as asc-devkit's READMEs write them."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import samples  # noqa: E402


@pytest.mark.parametrize("cell, values", [
    ("`0`（默认）、`1`、`2` ", ["0", "1", "2"]),
    ("`1` / `2` ", ["1", "2"]),
    ("`1`~`8` ", [str(v) for v in range(1, 9)]),          # bank_conflict_ub read 1 and 8 only before
    ("`0`-`8` ", [str(v) for v in range(9)]),
    (" 1-14 ", [str(v) for v in range(1, 15)]),
    (" 场景编号 ", []),
])
def test_scenario_values_lists_and_ranges(tmp_path, cell, values):
    (tmp_path / "README.md").write_text(f"| 参数 | 取值 | 说明 |\n|---|---|---|\n| `SCENARIO_NUM` |{cell}| 场景 |\n",
                                        encoding="utf-8")
    assert samples.scenario_values(str(tmp_path)) == values
