"""Tests for mcpactor.server.schema: the compiled argument validators.

The central test is differential: for many signatures and many generated argument
objects, the compiled validator must accept exactly what ``jsonschema`` accepts for the
generated ``inputSchema``.
"""

import random
import time
from typing import Annotated, Any

import attrs
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from schema_support import (
    SIGNATURE_FNS,
    Box,
    Color,
    Level,
    Point,
    Tree,
    accepts,
    add,
    constrained,
    containers,
    echo,
    enums,
    literals,
    models,
    optionals,
    sig_of,
    unions,
)

from mcpactor.protocol.errors import INVALID_PARAMS, InvalidParams
from mcpactor.server.schema import Field, ToolSignature, build_signature

# --- validation and conversion ----------------------------------------------------------


def test_validate_returns_only_given_arguments() -> None:
    sig = sig_of(optionals)
    assert sig.validate({"a": 1}) == {"a": 1}
    assert sig.validate({"a": None, "c": 2, "zzz": 1}) == {"a": None, "c": 2}


def test_field_default_is_injected() -> None:
    async def f(n: Annotated[int, Field(default=7)]) -> None:
        pass

    sig = build_signature(f)
    assert "required" not in sig.input_schema
    assert sig.input_schema["properties"]["n"]["default"] == 7
    assert sig.validate({}) == {"n": 7}
    assert sig.validate(None) == {"n": 7}
    assert sig.validate({"n": 3}) == {"n": 3}


def test_integers() -> None:
    sig = sig_of(add)
    assert sig.validate({"a": 1, "b": -2}) == {"a": 1, "b": -2}
    got = sig.validate({"a": 1.0, "b": 2})  # JSON Schema: 1.0 is an integer
    assert got == {"a": 1, "b": 2} and type(got["a"]) is int
    assert not accepts(sig, {"a": True, "b": 2})
    assert not accepts(sig, {"a": 1.5, "b": 2})
    assert not accepts(sig, {"a": "1", "b": 2})


def test_conversion_into_declared_types() -> None:
    sig = sig_of(models)
    got = sig.validate(
        {
            "p": {"x": 1, "extra": "ignored"},
            "t": {"value": 1, "children": [{"value": 2.0}]},
            "o": {"mode": "fast", "junk": 1},
            "q": {},
            "box": {
                "label": "b",
                "corners": [{"x": 0, "y": 0}, {"x": 1.5}],
                "color": "green",
            },
        }
    )
    assert got["p"] == Point(x=1)
    assert got["t"] == Tree(value=1, children=[Tree(value=2)])
    assert type(got["t"].children[0].value) is int
    assert got["o"] == {"mode": "fast"}
    assert got["q"] == {}
    assert got["box"] == Box(
        label="b", corners=(Point(x=0, y=0), Point(x=1.5)), color=Color.GREEN, tags=[]
    )

    c = sig_of(containers).validate(
        {
            "xs": [1, 2.0],
            "pair": [1, "a"],
            "rest": [1, 2.5],
            "uniq": ["a", "a", "b"],
            "frozen": [1],
            "table": {"k": 1},
            "anything": [None, {}],
            "seq": [True],
            "mapping": {"k": ["v"]},
            "bare_list": [1, "x"],
            "bare_dict": {"a": [1]},
        }
    )
    assert c["pair"] == (1, "a")
    assert c["rest"] == (1, 2.5)
    assert c["uniq"] == {"a", "b"}
    assert c["frozen"] == frozenset({1})
    assert c["xs"] == [1, 2] and type(c["xs"][1]) is int

    e = sig_of(enums).validate({"color": "red", "level": 2.0})
    assert e == {"color": Color.RED, "level": Level.HIGH}
    lit = sig_of(literals).validate({"mode": "b", "mixed": True})
    assert lit["mixed"] is True
    assert sig_of(literals).validate({"mode": "b", "mixed": 1.0})["mixed"] == 1


def test_model_validators_become_invalid_params() -> None:
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    async def f(p: Positive) -> None:
        pass

    sig = build_signature(f)
    assert sig.validate({"p": {"n": 1}}) == {"p": Positive(n=1)}
    with pytest.raises(InvalidParams) as info:
        sig.validate({"p": {"n": 0}})
    assert info.value.data["path"] == "arguments.p"


@pytest.mark.parametrize(
    ("fn", "args", "path", "reason"),
    [
        (add, {"a": 1, "b": "x"}, "arguments.b", "expected integer, got string"),
        (add, {"a": 1}, "arguments.b", "required argument is missing"),
        (add, {"a": True, "b": 1}, "arguments.a", "expected integer, got boolean"),
        (
            models,
            {
                "p": {"x": 1},
                "t": {"value": 1, "children": [{"value": 1}, {"value": "x"}]},
                "o": {"mode": "fast"},
                "q": {},
            },
            "arguments.t.children[1].value",
            "expected integer, got string",
        ),
        (
            models,
            {"p": {"y": 1}, "t": {"value": 1}, "o": {"mode": "fast"}, "q": {}},
            "arguments.p.x",
            "required property is missing",
        ),
        (
            models,
            {"p": {"x": 1}, "t": {"value": 1}, "o": {"mode": "medium"}, "q": {}},
            "arguments.o.mode",
            'expected one of ["fast", "slow"], got "medium"',
        ),
        (constrained, {"n": 11}, "arguments.n", "must be <= 10, got 11"),
        (constrained, {"n": 1, "x": 0}, "arguments.x", "must be > 0, got 0"),
        (
            constrained,
            {"n": 1, "name": "ABC"},
            "arguments.name",
            "does not match pattern '^[a-z]+$'",
        ),
        (
            constrained,
            {"n": 1, "items": []},
            "arguments.items",
            "must have at least 1 items, got 0",
        ),
        (containers, {"xs": [1, "2"]}, "arguments.xs[1]", "expected integer, got string"),
        (
            containers,
            {"xs": [], "pair": [1]},
            "arguments.pair",
            "expected an array of 2 items, got 1",
        ),
        (
            containers,
            {"xs": [], "pair": [1, "a"], "rest": [], "uniq": [], "frozen": [], "table": {"k": "v"}},
            "arguments.table.k",
            "expected number, got string",
        ),
        (unions, {"v": None}, "arguments.v", "expected integer or string, got null"),
    ],
)
def test_error_paths_and_reasons(fn: Any, args: dict[str, Any], path: str, reason: str) -> None:
    sig = sig_of(fn)
    with pytest.raises(InvalidParams) as info:
        sig.validate(args)
    err = info.value
    assert err.code == INVALID_PARAMS
    assert err.data == {"path": path, "reason": reason}
    top = path.split(".")[1].split("[")[0]
    assert repr(top) in err.message


def test_error_messages_read_well() -> None:
    with pytest.raises(InvalidParams) as info:
        sig_of(add).validate({"a": 1})
    assert info.value.message == "Missing required argument 'b'"
    with pytest.raises(InvalidParams) as info:
        sig_of(add).validate({"a": 1, "b": "2"})
    assert info.value.message == "Invalid argument 'b': expected integer, got string"
    with pytest.raises(InvalidParams) as info:
        sig_of(containers).validate({"xs": [1, "2"]})
    assert info.value.message == (
        "Invalid argument 'xs': expected integer, got string (at arguments.xs[1])"
    )


@pytest.mark.parametrize("bad", [[1, 2], "text", 3, True])
def test_arguments_must_be_an_object(bad: Any) -> None:
    with pytest.raises(InvalidParams) as info:
        sig_of(echo).validate(bad)
    assert info.value.data["path"] == "arguments"


def test_missing_arguments_object_means_empty() -> None:
    with pytest.raises(InvalidParams, match="Missing required argument 'text'"):
        sig_of(echo).validate(None)


# --- differential: our verdict == jsonschema's verdict ----------------------------------

ATOMS: list[Any] = [
    0, 1, 2, -3, 11, 10**20, 1.0, 2.0, 0.5, -0.0, 1.5, True, False, None,
    "", "a", "b", "ab", "abc", "ABC", "abcdef", "1", "red", "green", "fast", "slow", "x y",
]  # fmt: skip


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.6:
        return rng.choice(ATOMS)
    if roll < 0.8:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["x", "y", "value", "children", "mode", "limit", "a", "b", "k", "label", "corners"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Change one random spot of a (valid) value: replace, drop a key, or add one."""
    if isinstance(value, dict) and value and depth < 4 and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out["extra_key"] = random_json(rng)
        else:
            out[key] = mutate(rng, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4 and rng.random() < 0.7:
        i = rng.randrange(len(value))
        out_list = list(value)
        roll = rng.random()
        if roll < 0.15:
            del out_list[i]
        elif roll < 0.25:
            out_list.append(random_json(rng))
        else:
            out_list[i] = mutate(rng, value[i], depth + 1)
        return out_list
    return random_json(rng)


GOOD_ARGS: dict[str, list[dict[str, Any]]] = {
    "echo": [{"text": "hi"}],
    "add": [{"a": 1, "b": 2}],
    "prims": [{"s": "s", "i": 1, "f": 1.5, "b": True, "n": None}],
    "optionals": [{"a": None}, {"a": 1, "b": "x", "c": 2}],
    "literals": [{"mode": "a"}, {"mode": "b", "mixed": None}],
    "enums": [{"color": "red", "level": 2}],
    "containers": [
        {
            "xs": [1, 2],
            "pair": [1, "a"],
            "rest": [0.5],
            "uniq": ["a"],
            "frozen": [1, 2],
            "table": {"k": 1.0},
            "anything": [1, "a", None],
            "seq": [True, False],
            "mapping": {"k": ["a"]},
            "bare_list": [],
            "bare_dict": {},
        }
    ],
    "anys": [{"a": 1, "b": [None]}],
    "unions": [{"v": 1}, {"v": "a", "w": [1]}, {"v": 2, "w": {"k": 1}}],
    "models": [
        {
            "p": {"x": 1, "y": 2},
            "t": {"value": 1, "children": [{"value": 2, "children": []}]},
            "o": {"mode": "fast", "limit": 3},
            "q": {"a": "x", "b": False},
            "box": {"label": "ab", "corners": [{"x": 1}, {"x": 2, "y": 3}], "tags": ["t"]},
        }
    ],
    "constrained": [
        {"n": 0, "x": 0.25, "name": "abc", "items": ["a", "b"], "maybe": "ab", "obj": {"k": 1}}
    ],
    "with_context": [{"text": "hi"}],
}


@pytest.mark.parametrize("fn", SIGNATURE_FNS, ids=lambda f: f.__name__)
def test_validator_agrees_with_jsonschema(fn: Any) -> None:
    sig = sig_of(fn)
    checker = jsonschema.Draft202012Validator(sig.input_schema)
    rng = random.Random(f"differential-{fn.__name__}")
    good = GOOD_ARGS[fn.__name__]
    cases: list[Any] = list(good)
    for _ in range(600):
        cases.append(mutate(rng, rng.choice(good)))
    for _ in range(100):
        cases.append(random_json(rng, depth=1))
    # random objects built from the real property names
    names = list(sig.input_schema["properties"])
    for _ in range(200):
        cases.append({n: random_json(rng, 1) for n in names if rng.random() < 0.8})

    mismatches = []
    valid_count = 0
    for case in cases:
        ours = accepts(sig, case)
        theirs = checker.is_valid(case)
        valid_count += theirs
        if ours != theirs:
            mismatches.append((case, ours, theirs))
    assert not mismatches, f"{len(mismatches)} disagreements, first: {mismatches[:3]}"
    # the battery must exercise both verdicts
    assert 0 < valid_count < len(cases)
    for case in good:
        assert checker.is_valid(case), case


# --- speed (reported, not asserted) -----------------------------------------------------


def test_validation_speed_report() -> None:
    cases: list[tuple[str, ToolSignature, dict[str, Any]]] = [
        ("echo(text)", sig_of(echo), {"text": "hello"}),
        ("add(a, b)", sig_of(add), {"a": 1, "b": 2}),
        ("models(...)", sig_of(models), GOOD_ARGS["models"][0]),
    ]
    for label, sig, args in cases:
        validate = sig.validate
        assert validate(args)  # the measured call must succeed
        n = 20000
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                validate(args)
            best = min(best, (time.perf_counter() - start) / n)
        print(f"validate {label}: {best * 1e6:.2f} µs")
