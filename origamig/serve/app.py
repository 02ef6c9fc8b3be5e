"""The HTTP routes of `origamig serve` (docs/service.md), a Starlette application over `Live`.

Every route but `GET /healthz` and `GET /readyz` needs `Authorization: Bearer <token>` (the scheme in
any case, RFC 9110; the token compared in constant time; 401 otherwise). Bodies are JSON
(`Content-Type: application/json`, else 415), at most `MAX_BODY` bytes (else 413), parsed strictly
(no NaN, bounded nesting; else 400). A refused request changes nothing and gets `{"error": "<one
line>", "problems": [...]}`, each problem naming the field and the value.
"""

from __future__ import annotations

import hmac
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from origamig.errors import UserError
from origamig.files import parse_json_text
from origamig.runtime.plan_run import ACKNOWLEDGED, StepStatus
from origamig.serve.arrivals import ArrivalStatus, Conflict, DuplicateVm
from origamig.serve.bind import Binder
from origamig.serve.door import body_problems, id_problem, plain_int
from origamig.serve.fleet import Fleet, UnknownPm
from origamig.serve.host_gis import compare
from origamig.serve.k8s import filter_nodes, prioritize_nodes
from origamig.serve.kubevirt import kubevirt_flow
from origamig.serve.live import Live
from origamig.serve.metrics import CONTENT_TYPE, Metrics, timed
from origamig.serve.optimizer import Optimizer
from origamig.serve.plan_desk import PlanDesk, StepConflict, UnknownPlan
from origamig.serve.plan_retention import with_retired
from origamig.serve.replay import ReplayClock
from origamig.serve.requests import RequestError
from origamig.serve.store import StoreWriteError
from origamig.serve.tls import client_subject

# Every route but the probes runs in worker threads: a change's commit waits for the disk, a read may
# wait for a change's lock or take a while on a large cluster, and the event loop meanwhile keeps
# answering (`/healthz` first of all).
MAX_BODY = 1 << 20  # bytes of a request body (a 5,000-node ExtenderArgs with whole Node objects fits)

Handler = Callable[[Request], Awaitable[Response]]

# The status code `POST /v1/vms` answers with, for each outcome of the request.
ARRIVAL_CODES = {ArrivalStatus.PLACED: 201, ArrivalStatus.PENDING: 202, ArrivalStatus.REJECTED: 422}


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


def bearer_token(header: str) -> bytes:
    """The token of an `Authorization` header in the Bearer scheme (its name in any case, RFC 9110
    section 11.1), b"" for any other."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip().encode() if scheme.lower() == "bearer" else b""


def error_response(status: int, problems: list[str]) -> JSONResponse:
    return JSONResponse({"error": "; ".join(problems), "problems": problems}, status_code=status)


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


class Routes:
    """The handlers of the service's routes over `live` (`build_app` wires them)."""

    def __init__(
        self, live: Live, clock: ReplayClock | None, optimizer: Optimizer | None, binder: Binder | None = None
    ) -> None:
        self.live = live
        self.clock = clock
        self.optimizer = optimizer
        self.desk = PlanDesk(live)
        self.fleet = Fleet(live)
        self.binder = binder if binder is not None else Binder(live, None)

    # --- probes and status ---------------------------------------------------------------------
    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def optimizer_view(self) -> dict[str, Any]:
        return self.optimizer.status.to_json() if self.optimizer is not None else {"state": "off"}

    async def readyz(self, request: Request) -> Response:
        optimizer, problems = self.optimizer, []
        if optimizer is not None and not optimizer.alive():
            problems.append("optimizer: its loop has ended")
        if optimizer is not None and optimizer.stuck(time.time()):
            problems.append(f"optimizer: a check has run since {optimizer.status.solving_since_s:.0f}")
        refused = self.live.store.refusal
        if refused is not None:  # a full disk: reads and the extender go on
            problems.append(
                f"state: changes cannot be stored ({refused}); reads and the extender are answered, "
                "every change is refused with 503 until one can be stored again"
            )
        body: dict[str, Any] = {
            "status": "not ready" if problems else "ready",
            "writes": "refused" if refused is not None else "ok",
            "optimizer": self.optimizer_view(),
        }
        if problems:
            body |= {"error": "; ".join(problems), "problems": problems}
        return JSONResponse(body, status_code=503 if problems else 200)

    async def status(self, request: Request) -> Response:
        live = self.live
        counts = await run_in_threadpool(lambda: with_retired(live.store, live.counts()))
        body = {**counts, "now": live.now(), "optimizer": self.optimizer_view()}
        return JSONResponse(body | {"platform": live.move_rules.to_json()})

    # --- the cluster and its VMs ---------------------------------------------------------------
    async def snapshot(self, request: Request) -> Response:
        return Response(await run_in_threadpool(self.live.snapshot_json), media_type="application/json")

    async def post_vm(self, request: Request) -> Response:
        arrival = await run_in_threadpool(self.live.arrive, await read_json(request))
        return JSONResponse(arrival.to_json(), status_code=ARRIVAL_CODES[arrival.status])

    async def get_vm(self, request: Request) -> Response:
        vm_id = request.path_params["vm_id"]
        status = None if id_problem(vm_id) else await run_in_threadpool(self.live.vm_status, vm_id)
        if status is None:
            raise HttpError(404, f"id: {vm_id!r} is not a VM of the service")
        return JSONResponse(status)

    async def delete_vm(self, request: Request) -> Response:
        vm_id = request.path_params["vm_id"]
        if id_problem(vm_id) or not await run_in_threadpool(self.live.depart, vm_id):
            raise HttpError(404, f"id: {vm_id!r} is not a VM of the service")
        return Response(status_code=204)

    async def k8s_filter(self, request: Request) -> Response:
        body = await read_json(request)
        result = await run_in_threadpool(filter_nodes, self.live, body)
        self.binder.remember(body)
        return JSONResponse(result)

    async def k8s_bind(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.binder.bind, await read_json(request)))

    async def k8s_prioritize(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(prioritize_nodes, self.live, await read_json(request)))

    # --- the fleet -----------------------------------------------------------------------------
    async def get_pm(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.fleet.view, pm_id(request)))

    async def put_pm(self, request: Request) -> Response:
        body = await read_json(request)
        return JSONResponse(await run_in_threadpool(self.fleet.add, pm_id(request), body), status_code=201)

    async def delete_pm(self, request: Request) -> Response:
        await run_in_threadpool(self.fleet.remove, pm_id(request))
        return Response(status_code=204)

    async def cordon_pm(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.fleet.cordon, pm_id(request)))

    async def uncordon_pm(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.fleet.uncordon, pm_id(request)))

    async def drain_pm(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.fleet.drain, pm_id(request)))

    async def pm_lgi(self, request: Request) -> Response:
        text = await read_text(request, "text/plain", " (send the output of nvidia-smi mig -lgi as it is)")
        dry = request.query_params.get("dry_run", "false")
        if dry not in ("true", "false"):
            raise HttpError(400, f"dry_run: {dry[:40]!r} is not true or false")
        answer = await run_in_threadpool(compare, self.live, pm_id(request), text, dry == "true")
        return JSONResponse(answer)

    # --- plans ---------------------------------------------------------------------------------
    async def list_plans(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.desk.every))

    async def get_plan(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.desk.view, plan_id(request)))

    async def ack_step(self, request: Request) -> Response:
        body = await read_json(request)
        if not isinstance(body, dict) or "result" not in body:
            raise HttpError(400, 'result: missing (give {"result": "done"} or {"result": "failed"})')
        result = body["result"]
        if result not in ACKNOWLEDGED:
            raise HttpError(400, f'result: {result!r} is not "done" or "failed"')
        step = step_number(request)
        plan = await run_in_threadpool(self.desk.acknowledge, plan_id(request), step, StepStatus(result))
        return JSONResponse(plan)

    async def cancel_plan(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self.desk.cancel, plan_id(request)))

    async def confirm_orphan(self, request: Request) -> Response:
        plan = await run_in_threadpool(self.desk.confirm_orphan, plan_id(request), step_number(request))
        return JSONResponse(plan)

    async def plan_kubevirt(self, request: Request) -> Response:
        plan = await run_in_threadpool(self.desk.view, plan_id(request))
        namespace = request.query_params.get("namespace", "default")
        live = self.live
        with live.lock:
            specs = {**live.dc.pending, **live.dc.vms}
            for run in live.runtime.plans.running():
                specs.update(run.reserved)
        return JSONResponse(kubevirt_flow(plan, specs, namespace))

    async def set_clock(self, request: Request) -> Response:
        clock = self.clock
        if clock is None:
            raise HttpError(404, "clock: the service runs on the wall clock (start it with --clock replay)")
        body = await read_json(request)
        now = body.get("now") if isinstance(body, dict) else None
        if isinstance(now, bool) or not isinstance(now, int | float):
            raise HttpError(400, f"now: {now!r} is not a number of seconds")
        moved = await run_in_threadpool(clock.advance, float(now))
        plans = [await run_in_threadpool(self.desk.view, i) for i in moved.plans]
        started = [{"vm": v, "t": t} for v, t in moved.started]
        return JSONResponse({"now": moved.now, "plans": plans, "next_s": moved.next_s, "started": started})


def build_app(
    live: Live,
    token: str,
    clock: ReplayClock | None = None,
    optimizer: Optimizer | None = None,
    binder: Binder | None = None,
    metrics: Metrics | None = None,
    access_log: bool = False,
) -> Starlette:
    """The service's application over `live`, guarded by bearer `token`; with `clock`, in replay mode;
    `optimizer` is reported by `/readyz` and `/v1/status`; every request is timed in `metrics`
    (`GET /metrics`) and, with `access_log`, logged."""
    expected = token.encode()
    metrics = metrics if metrics is not None else Metrics(live)

    def guarded(handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            given = bearer_token(request.headers.get("authorization", ""))
            # A client certificate the TLS handshake verified against --client-ca stands for the token.
            if client_subject(request.scope) is None and not hmac.compare_digest(given, expected):
                return error_response(
                    401, ["Authorization: missing or wrong bearer token (and no verified client certificate)"]
                )
            try:
                return await handler(request)
            except Exception as exc:
                refused = refusal(exc)
                if refused is not None:
                    return refused
                log_failure(request, exc)  # a bug: logged once with its traceback, answered in JSON
                return error_response(
                    500, [f"internal error ({exc.__class__.__name__}); see the service's log"]
                )

        return run

    r = Routes(live, clock, optimizer, binder)

    async def scrape(request: Request) -> Response:
        return Response(await run_in_threadpool(metrics.render), media_type=CONTENT_TYPE)

    routes = [
        Route("/healthz", r.healthz, methods=["GET"]),
        Route("/readyz", r.readyz, methods=["GET"]),
        Route("/v1/status", guarded(r.status), methods=["GET"]),
        Route("/v1/snapshot", guarded(r.snapshot), methods=["GET"]),
        Route("/v1/vms", guarded(r.post_vm), methods=["POST"]),
        Route("/v1/vms/{vm_id:path}", guarded(r.delete_vm), methods=["DELETE"]),
        Route("/v1/vms/{vm_id:path}", guarded(r.get_vm), methods=["GET"]),
        Route("/v1/pms/{pm_id:path}/cordon", guarded(r.cordon_pm), methods=["POST"]),
        Route("/v1/pms/{pm_id:path}/uncordon", guarded(r.uncordon_pm), methods=["POST"]),
        Route("/v1/pms/{pm_id:path}/drain", guarded(r.drain_pm), methods=["POST"]),
        Route("/v1/pms/{pm_id:path}/lgi", guarded(r.pm_lgi), methods=["POST"]),
        Route("/v1/pms/{pm_id:path}", guarded(r.get_pm), methods=["GET"]),
        Route("/v1/pms/{pm_id:path}", guarded(r.put_pm), methods=["PUT"]),
        Route("/v1/pms/{pm_id:path}", guarded(r.delete_pm), methods=["DELETE"]),
        Route("/v1/plans", guarded(r.list_plans), methods=["GET"]),
        Route("/v1/plans/{plan_id}", guarded(r.get_plan), methods=["GET"]),
        Route("/v1/plans/{plan_id}", guarded(r.cancel_plan), methods=["DELETE"]),
        Route("/v1/plans/{plan_id}/steps/{n}", guarded(r.ack_step), methods=["POST"]),
        Route("/v1/plans/{plan_id}/orphan-gis/{n}", guarded(r.confirm_orphan), methods=["DELETE"]),
        Route("/v1/plans/{plan_id}/kubevirt", guarded(r.plan_kubevirt), methods=["GET"]),
        Route("/v1/clock", guarded(r.set_clock), methods=["POST"]),
        Route("/k8s/filter", guarded(r.k8s_filter), methods=["POST"]),
        Route("/k8s/prioritize", guarded(r.k8s_prioritize), methods=["POST"]),
        Route("/k8s/bind", guarded(r.k8s_bind), methods=["POST"]),
        Route("/metrics", guarded(scrape), methods=["GET"]),
    ]
    routes = [timed(route, metrics, access_log) for route in routes]

    async def no_route(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return error_response(
            status, [f"{request.method} {request.url.path[:80]}: {getattr(exc, 'detail', 'no such route')}"]
        )

    app = Starlette(routes=routes, exception_handlers={404: no_route, 405: no_route})
    app.state.live = live
    return app
