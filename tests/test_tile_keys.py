"""The walk's per-tile keys computed by generated Python code (tile/tile_keys.py) equal the keys
walked from the stages (tile/kernel_cost._tile_keys' walk), and so do the walks' figures."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl.lower.kinds import KERNEL_IR, kernel_words
from fusedsl.tile import kernel_cost
from fusedsl.tile.kernel import If, Let, Set, Stage, assign, evaluate, print_kernel
from fusedsl.tile.kernel_cost import kernel_work
from fusedsl.tile.parse import parse_kernel
from fusedsl.tile.tile_keys import compile_tile_keys

from conftest import fuzz_settings


def _run(body, env):
    for node in body:
        if type(node) is If:
            _run(node.then if evaluate(node.cond, env) else node.orelse, env)
            continue
        v = evaluate(node.expr, env)
        if type(node) is Let:
            env[node.var] = v
        elif v or node.op != "/=":
            assign(env, node, v)


def _walked_keys(plan, env, tiles):
    """The keys as the walk computes them: each stage's sets and lets evaluated tile by tile (the
    walk's `set_var`: a division by 0 is skipped), a memoised stage's names read after them."""
    out = []
    for tile in tiles:
        key = []
        for stage, names in plan:
            if stage.param:
                env[stage.param] = tile
            if names is None:
                _run(stage.body, env)
            elif names:
                key.append(tuple(env.get(n) for n in names))
        out.append(tuple(key))
    return out


NAMES = ["tile", "row0", "nrows", "t.R", "t.tileRows"]
OPS = ["+", "-", "*", "/", "%", "min", "pad", "fmax", "fmin", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]


def _exprs():
    leaf = st.one_of(st.sampled_from(NAMES), st.integers(0, 70), st.integers(2**32 - 3, 2**32 + 3))
    return st.recursive(
        leaf, lambda e: st.one_of(st.tuples(st.sampled_from(OPS), e, e), st.tuples(st.just("neg"), e),
                                  st.tuples(st.just("sel"), e, e, e),
                                  st.tuples(st.just("[]"), st.just("t.dims"), st.integers(0, 3))),
        max_leaves=6)


def _statements():
    sets = st.builds(lambda op, var, e: Let(var, e) if op == "let" else Set(var, e, op),
                     st.sampled_from(["let", "=", "+=", "/="]), st.sampled_from(["row0", "nrows"]), _exprs())
    branch = st.builds(If, _exprs(), st.lists(sets, max_size=2).map(tuple), st.lists(sets, max_size=2).map(tuple))
    return st.lists(st.one_of(sets, sets, branch), min_size=1, max_size=4).map(tuple)


@fuzz_settings(2.0)
@given(body=_statements(),
       keyed=st.lists(st.sampled_from(NAMES + ["absent"]), max_size=3),
       env=st.fixed_dictionaries({"t.R": st.integers(0, 100), "t.tileRows": st.integers(0, 9),
                                  "row0": st.integers(0, 9), "nrows": st.integers(0, 9)}),
       span=st.tuples(st.integers(0, 6), st.integers(0, 6)))
def test_generated_keys_equal_the_walked_ones(body, keyed, env, span):
    plan = [(Stage("Geometry", "tile", body), None), (Stage("Compute", None, ()), tuple(keyed))]
    code = compile_tile_keys(plan)
    assert code is not None
    env = dict(env, **{"t.dims": [3, 5, 7]})
    tiles = range(*span)
    try:
        want = _walked_keys(plan, dict(env), tiles)
    except (ArithmeticError, IndexError) as exc:
        with pytest.raises(type(exc)):
            code(dict(env), tiles.start, tiles.stop)
        return
    assert code(dict(env), tiles.start, tiles.stop) == want
    if code.stateless:   # one pass over every tile gives each core's keys (_every_key: unless it raises)
        try:
            whole = code(dict(env), 0, tiles.stop)
        except (ArithmeticError, IndexError):
            return
        assert whole[tiles.start:] == want


def test_values_the_code_does_not_assume_fall_back_to_the_walk():
    geometry = Stage("Geometry", "tile", (Set("row0", ("*", "tile", "t.tileRows")),
                                          Set("nrows", ("min", "t.tileRows", ("-", "t.R", "row0")))))
    plan = [(geometry, None), (Stage("Compute", None, ()), ("nrows",))]
    code = compile_tile_keys(plan)
    assert code({"t.tileRows": 4, "t.R": 10}, 0, 3) == [((4,),), ((4,),), ((2,),)]
    assert code.stateless
    assert code({"t.tileRows": np.int64(4), "t.R": 10}, 0, 3) is None   # (evaluate's numpy path)
    assert code({"t.tileRows": 4}, 0, 3) is None                        # (the walk's KeyError)
    # an expression outside the integer forms (a float literal: a numpy float32) is not compiled
    assert compile_tile_keys([(Stage("G", "tile", (Set("x", ("+", "tile", 0.5)),)), None)]) is None
    # a tile reading what the tile before it set: each core starts from the prologue's values
    carried = Stage("G", "tile", (Set("row0", "t.tileRows", "+="),))
    code = compile_tile_keys([(carried, None), (Stage("C", None, ()), ("row0",))])
    assert not code.stateless
    assert code({"t.tileRows": 4, "row0": 0}, 0, 3) == [((4,),), ((8,),), ((12,),)]


PROGRAMS = {
    "row": (lambda x, y: fs.softmax(x + y), (np.ones((40, 300), np.float32), np.ones((1, 300), np.float32))),
    "row-odd": (lambda x, g, b: fs.layer_norm(x, g, b),
                (np.ones((203, 77), np.float32), np.ones(77, np.float32), np.zeros(77, np.float32))),
    "row-long": (lambda x, m: fs.softmax(x + m), (np.ones((3, 70001), np.float32), np.ones((1, 70001), np.float32))),
    "vector": (lambda a, b: fs.exp(a) * b + 1.0, (np.ones((37, 1001), np.float16), np.ones((1, 1001), np.float16))),
    "column": (lambda x: fs.sum(x, axis=0), (np.ones((513, 97), np.float32),)),
    "vector-wide": (lambda a: fs.sigmoid(a) * a, (np.ones((3, 70001), np.float32),)),
}


@pytest.mark.parametrize("case", sorted(PROGRAMS))
def test_walks_with_generated_keys_equal_walks_with_walked_keys(case, monkeypatch):
    """Every candidate's figures, walked with the generated keys and with the keys walked from the
    stages (the code not generated), are equal -- bit for bit: the same cores are taken for others
    (both kernels walked with the candidates in the same order: the walks of one kernel share loop
    passes) -- and equal to a walk of every core and tile (no core taken for another: within a
    rounding, the float tallies summed in another order)."""
    fn, args = PROGRAMS[case]
    (plan,) = fs.fused_kernel(fn).compile(*args, target="ascend910b").kernels
    text = print_kernel(KERNEL_IR[type(plan.lowered)](plan.lowered))
    generated, walked = parse_kernel(text), parse_kernel(text)
    every = (generated.words, *generated.candidates) if generated.words else \
        (kernel_words(plan.lowered, plan.tiling),)   # (an elementwise kernel: the launch's words)
    with monkeypatch.context() as m:
        m.setattr(kernel_cost, "compile_tile_keys", lambda plan: None)
        by_walk = [kernel_work(walked, words) for words in every]
    assert [kernel_work(generated, words) for words in every] == by_walk
    assert generated.__dict__["_tile_keys_code"] is not None   # (the kernel's cores were keyed by the code)
    for words, work in zip(every, by_walk):
        alone = parse_kernel(text)
        alone.__dict__["_tile_plan"] = None   # (every core and tile walked)
        alone = kernel_work(alone, words)
        assert (work.gm_bytes, work.block_dim) == (alone.gm_bytes, alone.block_dim)
        for f in ("mte2", "vec", "mte3", "head", "cycles"):
            assert getattr(work, f) == pytest.approx(getattr(alone, f), rel=1e-12), f
