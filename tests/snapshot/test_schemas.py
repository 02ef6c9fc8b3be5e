"""The shipped JSON Schemas work from their files alone (a user validates with just the file)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urljoin

import jsonschema
import pytest
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from origamig.snapshot.document import schema_path
from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.solve_schema import solve_document_validator

EXAMPLE = ROOT / "examples" / "fragmented-a100.json"


def _refs(node: object, base: str) -> list[tuple[str, str]]:
    """(base URI, $ref) of every reference in `node`; an embedded "$id" starts a new base."""
    if isinstance(node, list):
        return [r for value in node for r in _refs(value, base)]
    if not isinstance(node, dict):
        return []
    base = urljoin(base, node["$id"]) if isinstance(node.get("$id"), str) else base
    here = [(base, node["$ref"])] if isinstance(node.get("$ref"), str) else []
    return here + [r for value in node.values() for r in _refs(value, base)]


@pytest.mark.parametrize("name", ["snapshot", "plan", "solve"])
def test_every_schema_is_valid_and_resolves_every_reference_from_its_own_file(name: str) -> None:
    schema = json.loads(schema_path(name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = (DRAFT202012.create_resource(schema) @ Registry()).crawl()  # the file, nothing else
    refs = _refs(schema, schema["$id"])
    assert refs
    for base, ref in refs:
        registry.resolver(base).lookup(ref)  # raises Unresolvable for a reference to another file


def test_the_solve_schema_embeds_the_plan_schema_unchanged() -> None:
    solve = json.loads(schema_path("solve").read_text())
    assert solve["$defs"]["plan"] == json.loads(schema_path("plan").read_text())


def test_a_real_solve_document_validates_and_a_bad_step_does_not(tmp_path: Path) -> None:
    code, out, err = run_main(["solve", str(EXAMPLE), "--json", "--deterministic"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["plan"], "the example needs a plan to reach the embedded plan schema"
    validator = solve_document_validator()
    validator.validate(doc)
    bad = {**doc, "plan": [*doc["plan"], {"op": "teleport", "vm": "vm0"}]}
    assert not validator.is_valid(bad)
