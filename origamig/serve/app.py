"""The HTTP application of `origamig serve` (docs/service.md): the routes of `routes.py` wired into a
Starlette application over `Live`, each guarded and timed.

Every route but `GET /healthz` and `GET /readyz` needs `Authorization: Bearer <token>` (the scheme in
any case, RFC 9110; the token compared in constant time; 401 otherwise). Bodies are JSON
(`Content-Type: application/json`, else 415), at most `MAX_BODY` bytes (`route_input.py`; else 413),
parsed strictly (no NaN, bounded nesting; else 400). A refused request changes nothing and gets
`{"error": "<one line>", "problems": [...]}` (`refusals.py`), each problem naming the field and the value.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from origamig.serve.bind import Binder
from origamig.serve.live import Live
from origamig.serve.metrics import CONTENT_TYPE, Metrics, timed
from origamig.serve.optimizer import Optimizer
from origamig.serve.refusals import error_response, log_failure, refusal
from origamig.serve.replay import ReplayClock
from origamig.serve.routes import Routes
from origamig.serve.tls import client_subject

Handler = Callable[[Request], Awaitable[Response]]


def bearer_token(header: str) -> bytes:
    """The token of an `Authorization` header in the Bearer scheme (its name in any case, RFC 9110
    section 11.1), b"" for any other."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip().encode() if scheme.lower() == "bearer" else b""


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
