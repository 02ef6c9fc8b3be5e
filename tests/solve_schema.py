"""The JSON Schema validator of the `solve --json` document (with the plan schema it references)."""

from __future__ import annotations

import functools
import json

import jsonschema
from referencing import Registry, Resource

from origamig.snapshot.document import schema_path


@functools.cache
def solve_document_validator() -> jsonschema.Draft202012Validator:
    schemas = {n: json.loads(schema_path(n).read_text()) for n in ("solve", "plan")}
    registry = Registry().with_resources(
        [(s["$id"], Resource.from_contents(s)) for s in schemas.values()]
        + [("plan.schema.json", Resource.from_contents(schemas["plan"]))]
    )
    return jsonschema.Draft202012Validator(schemas["solve"], registry=registry)
