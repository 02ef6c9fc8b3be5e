"""The handlers of `origamig serve`'s routes over `Live` (docs/service.md); `app.py` wires them."""

from __future__ import annotations

import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from origamig.runtime.plan_run import ACKNOWLEDGED, StepStatus
from origamig.serve.arrivals import ArrivalStatus
from origamig.serve.bind import Binder
from origamig.serve.door import id_problem
from origamig.serve.fleet import Fleet
from origamig.serve.host_gis import compare
from origamig.serve.k8s import filter_nodes, prioritize_nodes
from origamig.serve.kubevirt import kubevirt_flow
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.plan_desk import PlanDesk
from origamig.serve.plan_retention import with_retired
from origamig.serve.refusals import HttpError
from origamig.serve.replay import ReplayClock
from origamig.serve.route_input import plan_id, pm_id, read_json, read_text, step_number

# The status code `POST /v1/vms` answers with, for each outcome of the request.
ARRIVAL_CODES = {ArrivalStatus.PLACED: 201, ArrivalStatus.PENDING: 202, ArrivalStatus.REJECTED: 422}


# Every route but the probes runs in worker threads: a change's commit waits for the disk, a read may
# wait for a change's lock or take a while on a large cluster, and the event loop meanwhile keeps
# answering (`/healthz` first of all).
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
