"""What a route reads from its request: the body (its Content-Type, at most `MAX_BODY` bytes, UTF-8,
strict JSON) and the path parameters, each refused with an `HttpError` naming the field and the value."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from origamig.files import parse_json_text
from origamig.serve.door import body_problems, id_problem, plain_int
from origamig.serve.refusals import HttpError
from origamig.serve.requests import RequestError

MAX_BODY = 1 << 20  # bytes of a request body (a 5,000-node ExtenderArgs with whole Node objects fits)


async def read_text(request: Request, kind: str = "application/json", what: str = "") -> str:
    """The request's body as text of Content-Type `kind`, refused with 415, 413 or 400."""
    given = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if given != kind:
        raise HttpError(415, f"Content-Type: {given or 'none'!r} is not {kind}{what}")
    declared = plain_int(request.headers.get("content-length", ""), 30)
    if declared is not None and declared > MAX_BODY:
        raise HttpError(413, f"body: {declared} bytes is more than the limit of {MAX_BODY}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise HttpError(413, f"body: more than the limit of {MAX_BODY} bytes")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpError(400, "body: not UTF-8 text") from None


async def read_json(request: Request) -> Any:
    """The request's JSON body, refused with 415, 413 or 400."""
    text = await read_text(request)
    try:
        doc = parse_json_text(text, "body", RequestError)
    except RequestError as exc:
        raise HttpError(400, exc.problems) from None
    problems = body_problems(doc)
    if problems:
        raise HttpError(400, problems)
    return doc


def path_number(request: Request, param: str, what: str) -> int:
    """Path parameter `param`, a plain number (404 naming `what` otherwise)."""
    raw = request.path_params[param]
    number = plain_int(raw)
    if number is None:
        raise HttpError(404, f"{what.split()[0]}: {raw[:40]!r} is not a {what}")
    return number


def pm_id(request: Request) -> str:
    raw: str = request.path_params["pm_id"]
    if id_problem(raw, "pm") is not None:
        raise HttpError(404, f"pm: an id of {len(raw)} characters is not a server of the service")
    return raw


def plan_id(request: Request) -> int:
    return path_number(request, "plan_id", "plan id")


def step_number(request: Request) -> int:
    return path_number(request, "n", "step number")
