"""Every operation, `/register` key and event of Zulip's OpenAPI is served or listed as not.

Zulip's documents: its 10.2 OpenAPI (`tests/fixtures/zulip/openapi-10.2.yaml`) and what we
could read of the newest version (`tests/fixtures/zulip/openapi-newest/`). Chronicle's account
of them: the section "Zulip's API, item by item" of `docs/zulip-compat.md`. The test fails when
Zulip has an item the section does not account for, when the section and Chronicle disagree
(an operation served but not in `schema/openapi.yaml` or the other way round, a key listed as
not sent that a `/register` answer has or a sent one it lacks, an event type listed as sent
that no code of the server writes), or when the section lists something Zulip does not have.
"""

import pathlib
import re

import yaml

from conftest import api, owner_auth

ROOT = pathlib.Path(__file__).resolve().parents[2]
ZULIP = ROOT / "tests" / "fixtures" / "zulip"
DOCS = ROOT / "docs" / "zulip-compat.md"
OURS = ROOT / "schema" / "openapi.yaml"
METHODS = ("get", "post", "put", "patch", "delete")
# Keys every Zulip answer has, or has when a parameter was ignored.
ENVELOPE = {"result", "msg", "ignored_parameters_unsupported"}


def zulip_10_2():
    return yaml.safe_load((ZULIP / "openapi-10.2.yaml").read_text())


def newest_rows(name):
    path = ZULIP / "openapi-newest" / name
    return [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line]


def shape(path):
    """A path with its parameters' names dropped (`/users/{}`)."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def deref(document, node):
    """`node` with its `$ref` followed (repeatedly)."""
    while isinstance(node, dict) and "$ref" in node:
        target = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def enum_of(document, node):
    """The values an `enum` allows, looking through `allOf` and references."""
    node = deref(document, node)
    if not isinstance(node, dict):
        return []
    if "enum" in node:
        return list(node["enum"])
    for part in node.get("allOf", []):
        values = enum_of(document, part)
        if values:
            return values
    return []


def properties_of(document, node):
    """The properties of an object schema, merged through `allOf` and references."""
    node = deref(document, node)
    merged = {}
    for part in node.get("allOf", []):
        merged.update(properties_of(document, part))
    merged.update(node.get("properties", {}))
    return merged


def zulip_operations():
    found = set()
    for path, item in zulip_10_2()["paths"].items():
        found.update((method.upper(), path) for method in item if method in METHODS)
    found.update((row[0], row[1]) for row in newest_rows("operations.tsv"))
    return found


def zulip_register_keys():
    document = zulip_10_2()
    answer = document["paths"]["/register"]["post"]["responses"]["200"]
    schema = answer["content"]["application/json"]["schema"]
    keys = set(properties_of(document, schema))
    keys.update(row[0] for row in newest_rows("register-keys.txt"))
    return keys - ENVELOPE


def zulip_events():
    """Every (type, op) of `GET /events`' answer; op "" for events without one."""
    document = zulip_10_2()
    answer = document["paths"]["/events"]["get"]["responses"]["200"]
    schema = answer["content"]["application/json"]["schema"]
    events = properties_of(document, schema)["events"]
    pairs = set()
    for variant in deref(document, events["items"])["oneOf"]:
        fields = properties_of(document, variant)
        ops = enum_of(document, fields["op"]) if "op" in fields else [""]
        for kind in enum_of(document, fields["type"]):
            pairs.update((kind, op) for op in ops)
    pairs.update((row[0], row[1] if len(row) > 1 else "") for row in newest_rows("events.tsv"))
    return pairs


def section(heading):
    """The table rows of a subsection of "Zulip's API, item by item"."""
    text = DOCS.read_text()
    start = text.index("## Zulip's API, item by item")
    start = text.index(f"### {heading}", start)
    end = text.find("\n#", start + 4)
    rows = []
    for line in text[start:end if end != -1 else None].splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows.append(cells)
    assert rows, f"no rows under {heading}"
    return rows


def ticks(cell):
    return re.findall(r"`([^`]+)`", cell)


def documented_operations():
    listed = {}
    for cells in section("Operations"):
        (name,) = ticks(cells[0])
        method, path = name.split(" ", 1)
        assert (method, path) not in listed, f"{name} is listed twice"
        listed[(method, path)] = (cells[1], cells[2] if len(cells) > 2 else "")
    return listed


def our_operations():
    document = yaml.safe_load(OURS.read_text())
    ours = set()
    for path, item in document["paths"].items():
        if path.startswith("/api/v1"):
            ours.update(
                (method.upper(), shape(path[len("/api/v1"):])) for method in item if method in METHODS
            )
    return ours


def test_every_zulip_operation_is_served_or_said_not_to_be(server):
    zulip = zulip_operations()
    listed = documented_operations()
    ours = our_operations()
    assert sorted(zulip - set(listed)) == [], "Zulip operations the docs do not list"
    assert sorted(set(listed) - zulip) == [], "listed operations Zulip does not have"
    auth = owner_auth(server)
    for (method, path), (status, why) in sorted(listed.items()):
        served = (method, shape(path)) in ours
        assert status in ("served", "not served", "not an operation"), (method, path, status)
        assert served == (status == "served"), (method, path, status)
        if status != "served":
            assert len(why) > 20, (method, path, "needs its reason")
        if status == "not served":
            answer = api(server, method, path, auth=auth)
            assert answer.status_code in (404, 405), (method, path, answer.status_code)


def test_every_zulip_register_key_is_sent_or_said_not_to_be(server):
    not_sent = {}
    for cells in section("`/register` keys not sent"):
        assert len(cells[1]) > 20, (cells, "needs its reason")
        for key in ticks(cells[0]):
            not_sent[key] = cells[1]
    zulip = zulip_register_keys()
    assert sorted(set(not_sent) - zulip) == [], "listed keys Zulip does not have"
    answer = api(server, "POST", "/register", auth=owner_auth(server))
    assert answer.status_code == 200, answer.text
    sent = set(answer.json())
    assert sorted(k for k in zulip - set(not_sent) if k not in sent) == [], "keys not sent"
    assert sorted(k for k in not_sent if k in sent) == [], "keys said not sent but sent"


def written_event_types():
    """The event types the server's code writes (`"type": "…"` in a JSON literal)."""
    found = set()
    for source in (ROOT / "src").rglob("*.rs"):
        found.update(re.findall(r'"type":\s*"([a-z_]+)"', source.read_text()))
    return found


def test_every_zulip_event_is_sent_or_said_not_to_be():
    not_sent_types, not_sent_pairs = {}, {}
    for cells in section("Events not sent"):
        assert len(cells[1]) > 20, (cells, "needs its reason")
        for entry in re.findall(r"`[a-z_]+`(?: `[a-z_]+`)?", cells[0]):
            names = ticks(entry)
            if len(names) == 1:
                not_sent_types[names[0]] = cells[1]
            else:
                not_sent_pairs[tuple(names)] = cells[1]
    zulip = zulip_events()
    kinds = {kind for kind, _ in zulip}
    assert sorted(set(not_sent_types) - kinds) == [], "listed event types Zulip does not have"
    assert sorted(set(not_sent_pairs) - zulip) == [], "listed events Zulip does not have"
    written = written_event_types()
    for kind in sorted(kinds):
        if kind in not_sent_types:
            assert kind not in written, f"{kind} is said not to be sent but the code writes it"
        else:
            assert kind in written, f"no code writes {kind} events"
