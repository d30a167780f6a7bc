"""The API's reference page (/api), read from openapi.document(): the page cannot describe a path,
parameter or field the document does not, nor miss one it does."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from voxwatch.web.openapi import document

EXAMPLE_PATH_VALUES = {"model_id": "deepgram/nova-3", "conversation_id": "CONVERSATION_ID", "family": "stt-starter", "board": "stt-stream"}
"""What an example curl puts for a path parameter (a model id stays unescaped; see its description)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    where: str
    required: bool
    type: str
    description: str


@dataclass(frozen=True)
class Answer:
    status: str
    description: str
    media_types: list[str]
    schema: str | None  # the component it is, when it is one


@dataclass(frozen=True)
class Endpoint:
    path: str
    summary: str
    parameters: list[Parameter]
    answers: list[Answer]
    curl: str

    @property
    def anchor(self) -> str:
        return "path-" + "".join(c if c.isalnum() else "-" for c in self.path.removeprefix("/api/v1/")).strip("-")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    description: str
    ref: str | None  # the component it holds (or an array of)


@dataclass(frozen=True)
class Schema:
    name: str
    fields: list[Field]
    description: str


def _ref_name(schema: dict) -> str | None:
    """The component a schema is, or holds (as an array's items, a map's values or one of its options)."""
    for candidate in (schema, schema.get("items"), schema.get("additionalProperties"), *schema.get("oneOf", [])):
        if isinstance(candidate, dict) and "$ref" in candidate:
            return candidate["$ref"].rsplit("/", 1)[-1]
    return None


def type_of(schema: dict) -> str:
    """A schema as a reader says it: 'string', 'integer or null', 'array of Model', 'one of 24h, 7d, 30d'."""
    name = _ref_name(schema)
    if "$ref" in schema:
        return name or "object"
    if "oneOf" in schema:
        return " or ".join(type_of(o) for o in schema["oneOf"])
    kinds = schema.get("type", "object")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = []
    for kind in kinds:
        if kind == "array":
            words.append("array of " + (type_of(schema["items"]) if "items" in schema else "values"))
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            words.append("map of " + type_of(schema["additionalProperties"]))
        else:
            words.append(kind + (f" ({schema['format']})" if "format" in schema else ""))
    out = " or ".join(words)
    if "enum" in schema:
        out += ": one of " + ", ".join("null" if v is None else str(v) for v in schema["enum"])
    if "default" in schema:
        out += f" (default {schema['default']})"
    return out


SITE = "$SITE"
"""Where the examples send their requests: the reader's own server. Never the request's Host header,
which a kept page would show every later visitor."""


def _curl(path: str, parameters: list[dict], secured: bool = False) -> str:
    """The example request; an operator-only path's sends the operator's token from the environment."""
    filled = path
    for p in parameters:
        if p["in"] == "path":
            filled = filled.replace("{" + p["name"] + "}", EXAMPLE_PATH_VALUES.get(p["name"], p["name"].upper()))
    query = {p["name"]: p["schema"]["enum"][0] for p in parameters
             if p["in"] == "query" and "enum" in p["schema"] and "default" not in p["schema"]}
    auth = '-H "Authorization: Bearer $VOXWATCH_OPERATOR_TOKEN" ' if secured else ""
    return f"curl -s {auth}\"{SITE}{filled}{'?' + urlencode(query) if query else ''}\""


def endpoints() -> list[Endpoint]:
    out = []
    for path, item in document()["paths"].items():
        get = item["get"]
        parameters = [Parameter(p["name"], p["in"], p.get("required", False), type_of(p["schema"]),
                                p.get("description", "")) for p in get["parameters"]]
        answers = [Answer(status, r["description"], list(r.get("content", {})),
                          next((_ref_name(c["schema"]) for c in r.get("content", {}).values()), None))
                   for status, r in get["responses"].items()]
        out.append(Endpoint(path, get["summary"], parameters, answers,
                            _curl(path, get["parameters"], bool(get.get("security")))))
    return out


def schemas() -> list[Schema]:
    """Every component schema with its fields, in the document's order."""
    out = []
    for name, schema in document()["components"]["schemas"].items():
        required = set(schema.get("required", []))
        fields = [Field(f, type_of(s), f in required, s.get("description", ""), _ref_name(s))
                  for f, s in schema.get("properties", {}).items()]
        out.append(Schema(name, fields, schema.get("description", "")))
    return out


def info() -> dict:
    return document()["info"]
