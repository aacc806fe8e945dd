"""Tests for mcpactor.server.uri_template: RFC 6570 expansion and URI matching.

The expansion cases are the examples of RFC 6570 section 3.2, written out by hand from
the RFC's tables, with the RFC's variable values.
"""

from typing import Any

import attrs
import pytest

from mcpactor.server.uri_template import UriTemplate

# RFC 6570 section 3.2
RFC_VALUES: dict[str, Any] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

RFC_EXAMPLES = [
    # 3.2.1 variable expansion
    ("{count}", "one,two,three"),
    ("{count*}", "one,two,three"),
    ("{/count}", "/one,two,three"),
    ("{/count*}", "/one/two/three"),
    ("{;count}", ";count=one,two,three"),
    ("{;count*}", ";count=one;count=two;count=three"),
    ("{?count}", "?count=one,two,three"),
    ("{?count*}", "?count=one&count=two&count=three"),
    ("{&count*}", "&count=one&count=two&count=three"),
    # 3.2.2 simple string expansion
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # 3.2.3 reserved expansion
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    # 3.2.4 fragment expansion
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    # 3.2.5 label expansion with dot-prefix
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    # 3.2.6 path segment expansion
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # 3.2.7 path-style parameter expansion
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # 3.2.8 form-style query expansion
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # 3.2.9 form-style query continuation
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_rfc_6570_examples(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(RFC_VALUES) == expected


def test_rfc_level_1_to_3_examples_from_section_1_2() -> None:
    values = {"var": "value", "hello": "Hello World!", "path": "/foo/bar", "x": "1024"}
    assert UriTemplate("{var}").expand(values) == "value"
    assert UriTemplate("{hello}").expand(values) == "Hello%20World%21"
    assert UriTemplate("{+path}/here").expand(values) == "/foo/bar/here"
    assert UriTemplate("X{#var}").expand(values) == "X#value"
    assert UriTemplate("map?{x,y}").expand({**values, "y": "768"}) == "map?1024,768"


def test_unicode_is_utf8_percent_encoded() -> None:
    assert UriTemplate("{v}").expand({"v": "é"}) == "%C3%A9"
    assert UriTemplate("{+v}").expand({"v": "é/ü"}) == "%C3%A9/%C3%BC"
    # prefixes count characters, not bytes
    assert UriTemplate("{v:2}").expand({"v": "äöü"}) == "%C3%A4%C3%B6"


def test_reserved_keeps_existing_percent_triplets() -> None:
    assert UriTemplate("{+v}").expand({"v": "a%20b%zz"}) == "a%20b%25zz"
    assert UriTemplate("{v}").expand({"v": "a%20b"}) == "a%2520b"


def test_literals_outside_uri_syntax_are_encoded() -> None:
    assert UriTemplate("a b/{x}").expand({"x": "1"}) == "a%20b/1"


def test_value_types() -> None:
    t = UriTemplate("{a}{/b*}{?c,d}")
    assert t.expand({"a": 5, "b": (1, 2.5), "c": True, "d": None}) == "5/1/2.5?c=true"
    assert t.expand(a="x") == "x"
    assert t.expand({"a": "x"}, a="y") == "y"
    with pytest.raises(TypeError):
        t.expand({"a": object()})


def test_prefix_on_composite_value_is_an_error() -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{list:3}").expand({"list": ["a", "b"]})


def test_variables_in_order_without_repeats() -> None:
    t = UriTemplate("http://h/{a}{/b,a}{?c*,d:3}#{+e}")
    assert t.variables == ("a", "b", "c", "d", "e")
    assert UriTemplate("static://x").variables == ()
    assert UriTemplate("static://x").is_literal
    assert not t.is_literal


def test_immutable_hashable_and_comparable() -> None:
    t = UriTemplate("test://{id}")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        t.template = "x"  # type: ignore[misc]
    assert t == UriTemplate("test://{id}")
    assert t != UriTemplate("test://{other}")
    assert len({t, UriTemplate("test://{id}")}) == 1
    assert str(t) == "test://{id}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("test://{id", "never closed"),
        ("test://id}", "closes nothing"),
        ("test://{}", "empty"),
        ("test://{a{b}}", "nest"),
        ("test://{=a}", "reserved for future"),
        ("test://{!a}", "reserved for future"),
        ("test://{|a}", "reserved for future"),
        ("test://{a b}", "invalid variable"),
        ("test://{a-b}", "invalid variable"),
        ("test://{a,}", "invalid variable"),
        ("test://{.a.}", "invalid variable"),
        ("test://{a..b}", "invalid variable"),
        ("test://{a:0}", "invalid variable"),
        ("test://{a:10000}", "invalid variable"),
        ("test://{a:x}", "invalid variable"),
        ("test://{a*:3}", "invalid variable"),
        ("test://{%zz}", "invalid variable"),
    ],
)
def test_invalid_templates(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UriTemplate(template)


def test_valid_unusual_variable_names() -> None:
    t = UriTemplate("{a.b,_c,%41d:3,Z9*}")
    assert t.variables == ("a.b", "_c", "%41d", "Z9")


# --- matching ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://static", "test://static", {}),
        ("file:///{+path}", "file:///home/user/notes.txt", {"path": "home/user/notes.txt"}),
        ("file:///{+path}", "file:///a/b%20c.txt", {"path": "a/b c.txt"}),
        ("users://{user}/posts/{post}", "users://ann/posts/7", {"user": "ann", "post": "7"}),
        ("test://{name}", "test://Hello%20World%21", {"name": "Hello World!"}),
        (
            "repo://{owner}/{repo}{/path*}",
            "repo://o/r/a/b/c",
            {"owner": "o", "repo": "r", "path": ["a", "b", "c"]},
        ),
        ("repo://{owner}/{repo}{/path*}", "repo://o/r", {"owner": "o", "repo": "r"}),
        ("search://items{?q,limit}", "search://items?q=cats&limit=5", {"q": "cats", "limit": "5"}),
        ("search://items{?q,limit}", "search://items?limit=5", {"limit": "5"}),
        ("search://items{?q,limit}", "search://items", {}),
        ("search://items{?q}{&page}", "search://items?q=a&page=2", {"q": "a", "page": "2"}),
        ("search://items{?tag*}", "search://items?tag=a&tag=b", {"tag": ["a", "b"]}),
        ("http://h{/a,b}", "http://h/x/y", {"a": "x", "b": "y"}),
        ("http://h/{x,y}", "http://h/1024,768", {"x": "1024", "y": "768"}),
        ("http://h{;x,y,empty}", "http://h;x=1;y=2;empty", {"x": "1", "y": "2", "empty": ""}),
        ("http://www{.dom*}/", "http://www.example.com/", {"dom": ["example", "com"]}),
        ("doc://{id}{#section}", "doc://42#intro/part", {"id": "42", "section": "intro/part"}),
        ("doc://{id}{#section}", "doc://42", {"id": "42"}),
        (
            "{+base}{/seg}{?q}",
            "http://e.com/home/x?q=1",
            {"base": "http://e.com/home", "seg": "x", "q": "1"},
        ),
        ("cfg://{key}.json", "cfg://app.settings.json", {"key": "app.settings"}),
    ],
)
def test_match(template: str, uri: str, expected: dict[str, Any]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template/1/2/data"),  # {id} never spans "/"
        ("test://template/{id}/data", "test://template//data"),  # nor matches nothing
        ("test://template/{id}/data", "test://template/1/data/extra"),
        ("test://template/{id}/data", "other://template/1/data"),
        ("test://{id}", "test://a?b"),
        ("test://static", "test://static/"),
        ("file:///{+path}", "file://host/x"),
        ("search://items{?q}", "search://items?other=1"),
    ],
)
def test_no_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


ROUND_TRIPS = [
    ("test://template/{id}/data", {"id": "123"}),
    ("test://template/{id}/data", {"id": "with space & more"}),
    ("test://template/{id}/data", {"id": "a/b"}),  # "/" is encoded, so it round-trips
    ("file:///{+path}", {"path": "dir/sub dir/file.txt"}),
    ("users://{user}/posts/{post}", {"user": "zoë", "post": "1"}),
    ("repo://{owner}{/path*}", {"owner": "o", "path": ["a", "b c", "d"]}),
    ("search://items{?q,limit}", {"q": "x&y=z", "limit": "10"}),
    ("search://items{?q,limit}", {"limit": "10"}),
    ("m://x{;a,b}", {"a": "1", "b": ""}),
    ("m://x{.ext}", {"ext": "tar"}),
    ("doc://{id}{#frag}", {"id": "1", "frag": "a/b,c"}),
]


@pytest.mark.parametrize(("template", "values"), ROUND_TRIPS)
def test_expand_then_match_round_trips(template: str, values: dict[str, Any]) -> None:
    t = UriTemplate(template)
    uri = t.expand(values)
    assert t.match(uri) == values, uri


def test_match_regex_is_compiled_once() -> None:
    t = UriTemplate("test://template/{id}/data")
    first = t._regex
    t.match("test://template/1/data")
    t.match("test://template/2/data")
    assert t._regex is first
