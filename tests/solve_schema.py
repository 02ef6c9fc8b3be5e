"""The JSON Schema validator of the `solve --json` document, from its schema file alone."""

from __future__ import annotations

import functools
import json

import jsonschema

from origamig.snapshot.document import schema_path


@functools.cache
def solve_document_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_path("solve").read_text()))
