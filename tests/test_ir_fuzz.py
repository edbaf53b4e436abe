"""parse_ir over mutated texts raises only FusedslError (issue 10).

Malformed IR is user input: deep nesting, bad string escapes, huge integers, attributes of
the wrong kind, a `scalar` parameter with a shape... must each give an IRParseError naming
the place, never a RecursionError/ValueError/TypeError, and a text that parses must also run
in the reference interpreter without a raw exception.  FUSEDSL_FUZZ_EXAMPLES scales the count.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import FUZZ_EXAMPLES

import fusedsl as fs
from fusedsl.errors import FusedslError
from fusedsl.reference import run_module

SEEDS = [
    '''func @f(%a: f32[128], %b: f32[M,128]) -> (f32[M,128]) loc("k.py":3) {
  %0 = abs(%a) : f32[128] loc("k.py":4)
  %1 = add(%0, %b) : f32[M,128] loc("k.py":4)
  %2 = leaky_relu(%1) {alpha = 0.1} : f32[M,128] loc("k.py":5)
  return %2
}
''',
    '''func @k(%x: f32[4,8], %s: f32[] scalar) -> (f32[4], f32[4,8]) loc("a.py":1) {
  %0 = constant() {dtype = "float32", value = 2.0} : f32[] loc("a.py":2)
  %1 = mul(%x, %0) : f32[4,8] loc("a.py":2)
  %2 = add(%1, %s) : f32[4,8] loc("a.py":3)
  %3 = reduce_sum(%2) {axes = [1], keepdims = false} : f32[4] loc("a.py":4)
  return %3, %2
}
func @main(%x: f32[4,8], %s: f32[] scalar) -> (f32[4], f32[4,8]) loc("a.py":1) {
  %0, %1 = call(%x, %s) {callee = "k"} : f32[4], f32[4,8] loc("a.py":1)
  return %0, %1
}
''',
]



def _traced_seeds() -> list[str]:
    """Texts of traced kernels: reductions, casts, where, reshape/transpose, concat, matmul, int8."""
    f32 = lambda *shape: np.ones(shape, np.float32)   # noqa: E731
    cases = [
        (lambda x, y: (fs.cast(fs.where(x > y, x * 3, y - 1), "float16"), fs.max(x, axis=1),
                       fs.exp(x).sum(axis=0)), (f32(4, 8), f32(4, 8))),
        (lambda x, w: fs.softmax(fs.matmul(x, w) + 1.0, axis=-1), (f32(4, 8), f32(8, 3))),
        (lambda x: fs.concatenate([fs.transpose(fs.reshape(x, (8, 4))), x], axis=0), (f32(4, 8),)),
        (lambda q, s: fs.cast(q, "float32") * s + fs.leaky_relu(fs.cast(q, "float32"), 0.2),
         (np.ones((2, 16), np.int8), np.float32(0.5))),
        (lambda x, g: fs.layer_norm(x, g), (f32(3, 16), f32(16))),
    ]
    return [str(fs.fused_kernel(fn).trace(*args)) for fn, args in cases]


SEEDS += _traced_seeds()
TOKEN = __import__("re").compile(r'"(?:\\.|[^"\\])*"|[%@]\w+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\w+\[[^\]]*\]|\w+|\s+|.')

NASTY = ["[" * 3000 + "]" * 3000, '"\\q"', "9" * 4301, "-" + "9" * 5000, "[1]", '"str"', "scalar",
         "f32[3] scalar", "%x", "%0", "{", "}", "(", ")", ",", ":", "=", '"', "\\", "é", "Ñ",
         "f32[]", "i8[N]", "i1[2,3]", "1e999", "nan", "-inf", "true", "[[1, 2], [3]]", "1.5",
         "loc(\"\\ud800\":1)", "call", "constant", "@main", "@k", "\x00", "\n", "func", "return",
         "value = \"x\"", "value = [1, 2]", "axes = [5]", "axes = [\"a\"]", "dtype = \"int4\"",
         "callee = [1]", "callee = 3", "keepdims = [1]", "0" * 30, "f32[99999999999999999999]",
         "-1", "f32[-1]", "where", "cast", "select", "matmul", "reduce_max", "transpose"]


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        n = len(text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.choice([0, 1, 2, 4, 8, 30]))   # short spans: most texts stay near-valid
        kind = rng.randrange(7)
        if kind >= 5:                                  # replace one token (keeps the text near-valid)
            toks = TOKEN.findall(text)
            k = rng.randrange(len(toks))
            toks[k] = rng.choice(NASTY + toks) if kind == 5 else rng.choice(toks)
            text = "".join(toks)
        elif kind == 0:                                  # delete a span
            text = text[:i] + text[j:]
        elif kind == 1:                                # duplicate a span
            text = text[:i] + text[i:j] + text[i:]
        elif kind == 2:                                # insert a nasty token
            text = text[:i] + rng.choice(NASTY) + text[i:]
        elif kind == 3:                                # replace a span by a nasty token
            text = text[:i] + rng.choice(NASTY) + text[j:]
        else:                                          # change one character
            if n:
                text = text[:i] + chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x3000)])) \
                    + text[i + 1:]
    return text


def inputs_for(fn):
    args = []
    for p in fn.params:
        shape = tuple(d if isinstance(d, int) else 2 for d in p.value.type.shape)
        args.append(np.ones(shape, p.value.type.dtype.np) if p.kind == "tensor"
                    else p.value.type.dtype.np.type(1))
    return args


def check_text(text: str) -> str:
    """'error' (a FusedslError), 'ok' (parsed and ran), or raises what is not a FusedslError."""
    try:
        module = fs.parse_ir(text)
        if module.functions:
            run_module(module, inputs_for(module.main))
    except FusedslError:
        return "error"
    return "ok"


def fuzz(count: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    tally = {"ok": 0, "error": 0}
    bad = []
    for _ in range(count):
        text = mutate(rng, rng.choice(SEEDS))
        try:
            tally[check_text(text)] += 1
        except Exception as exc:   # noqa: BLE001 - the point is to catch anything else
            bad.append((type(exc).__name__, str(exc)[:200], text[:400]))
    tally["other"] = len(bad)
    return {"tally": tally, "bad": bad}


@pytest.mark.parametrize("text", [
    '''func @f(%a: f32[2]) -> (f32[2]) loc("\\q":2) {\n  return %a\n}\n''',
    '''func @f(%a: f32[2]) -> (f32[2]) loc("k.py":''' + "9" * 4301 + ''') {\n  return %a\n}\n''',
    '''func @f(%a: f32[2]) -> (f32[2]) loc("k.py":1) {\n  %0 = leaky_relu(%a) {alpha = ''' + "[" * 5000 + "]" * 5000
    + '''} : f32[2] loc("k.py":1)\n  return %0\n}\n''',
    '''func @f(%a: f32[2]) -> (f32[2]) loc("k.py":1) {\n  return %a\n}\n'''
    '''func @main(%a: f32[2]) -> (f32[2]) loc("k.py":1) {\n  %0 = call(%a) {callee = [1]} : f32[2] loc("k.py":1)\n  return %0\n}\n''',
    '''func @f(%a: f32[2], %s: f32[3] scalar) -> (f32[2]) loc("k.py":1) {\n  %0 = add(%a, %s) : f32[2] loc("k.py":1)\n  return %0\n}\n''',
    '''func @f(%a: f32[2]) -> (f32[2]) loc("k.py":1) {\n  %0 = constant() {dtype = "float32", value = "x"} : f32[] loc("k.py":1)\n  %1 = add(%a, %0) : f32[2] loc("k.py":1)\n  return %1\n}\n''',
    '''func @f(%a: f32[2]) -> (f32[2]) loc("k.py":1) {\n  %0 = constant() {dtype = "float32", value = [1, 2]} : f32[] loc("k.py":1)\n  %1 = add(%a, %0) : f32[2] loc("k.py":1)\n  return %1\n}\n''',
], ids=["bad-escape", "4301-digits", "deep-nesting", "callee-list", "scalar-with-shape", "const-str", "const-list"])
def test_known_malformed_texts_raise_irparseerror(text):
    with pytest.raises(fs.errors.IRParseError, match=r"<ir>:\d+:\d+: "):
        fs.parse_ir(text)


def test_unicode_dimension_names_round_trip():
    text = '''func @f(%a: f32[Länge,2]) -> (f32[Länge,2]) loc("k.py":1) {\n  %0 = abs(%a) : f32[Länge,2] loc("k.py":1)\n  return %0\n}\n'''
    module = fs.parse_ir(text)
    assert module.main.params[0].value.type.shape == ("Länge", 2)
    assert str(module) == text


def test_mutated_ir_texts_raise_only_fusedsl_errors():
    result = fuzz(max(200, 2 * FUZZ_EXAMPLES))
    assert not result["bad"], f"{result['tally']}; first: {result['bad'][:3]}"
    assert result["tally"]["error"] > 0 and result["tally"]["ok"] > 0   # the mutator reaches both


if __name__ == "__main__":   # python tests/test_ir_fuzz.py 10000: the figure for the closing note
    import sys
    res = fuzz(int(sys.argv[1]) if len(sys.argv) > 1 else 10000, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    print(res["tally"])
    from collections import Counter
    print(Counter(b[0] for b in res["bad"]))
    for b in res["bad"][:10]:
        print(b)


def test_unicode_dimension_names_of_a_compiled_kernel_round_trip():
    k = fs.fused_kernel(lambda x: fs.abs(x) + 1).compile(fs.spec(("Länge", 8), "float32"))
    text = str(k.module)
    assert "Länge" in text and str(fs.parse_ir(text)) == text
    np.testing.assert_array_equal(k(-np.ones((3, 8), np.float32)), np.full((3, 8), 2, np.float32))
