"""What a refused request is answered with: `HttpError`, the status of each kind of refused change,
the JSON error body (`{"error": "<one line>", "problems": [...]}`); and a request that failed on a bug,
logged once with its traceback."""

from __future__ import annotations

import sys
import traceback

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from origamig.errors import UserError
from origamig.serve.arrivals import Conflict, DuplicateVm
from origamig.serve.fleet import UnknownPm
from origamig.serve.plan_desk import StepConflict, UnknownPlan
from origamig.serve.store import StoreWriteError


class HttpError(Exception):
    """A refused request: its status code and its problems (one line each)."""

    def __init__(self, status: int, problems: str | list[str]) -> None:
        self.status = status
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


_logged: set[str] = set()  # the failures already logged with their traceback


def log_failure(request: Request, exc: Exception) -> None:
    """A request that failed on a bug: its traceback, once per kind of failure and route (a client
    repeating the request cannot flood the log)."""
    key = f"{exc.__class__.__name__}@{request.url.path.split('/')[1:3]}"
    if key in _logged:
        return
    _logged.add(key)
    detail = "".join(traceback.format_exception(exc))
    print(
        f"origamig serve: {request.method} {request.url.path[:200]} failed:\n{detail}",
        file=sys.stderr,
        flush=True,
    )


def error_response(status: int, problems: list[str]) -> JSONResponse:
    return JSONResponse({"error": "; ".join(problems), "problems": problems}, status_code=status)


# What a refused change means in HTTP: the first class a failure is an instance of gives the status.
REFUSALS: tuple[tuple[type[Exception] | tuple[type[Exception], ...], int], ...] = (
    (StoreWriteError, 503),
    ((DuplicateVm, StepConflict, Conflict), 409),
    ((UnknownPlan, UnknownPm), 404),
    (UserError, 400),
)


def refusal(exc: Exception) -> Response | None:
    """The answer to a request refused by `exc`, or None when `exc` is a bug."""
    if isinstance(exc, HttpError):
        return error_response(exc.status, exc.problems)
    if isinstance(exc, ClientDisconnect):  # the client left (or was cut off) before its body came
        return Response(status_code=400)
    for kinds, status in REFUSALS:
        if isinstance(exc, kinds):
            return error_response(status, getattr(exc, "problems", [str(exc)]))
    return None
