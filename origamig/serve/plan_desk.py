"""Where the VM platform picks up a plan's steps and reports them (docs/service.md#plans): reading a
plan, acknowledging a step (`done` or `failed`), cancelling a plan, confirming a GI left on a host
gone, and the step timeout. The state moves only as the runtime's plan book says
(`runtime/plan_book.py`); every change is committed before it is reported (`Live.commit`).

- A `ready` step may be carried out now (the next step of a move under way; several moves run side
  by side on disjoint links). Acknowledging any other step of a running plan is a conflict (409).
- The same acknowledgement again changes nothing (200); another result for a step already
  acknowledged is a conflict.
- A step of an ended plan that was ready when it ended, acknowledged `done` afterwards, is recorded
  as what happened (`"late": true` in the answer): the platform did carry it out.
- A step no acknowledgement reaches within `--step-timeout` aborts its plan (`cause: timeout`).
"""

from __future__ import annotations

from typing import Any

from origamig.errors import UserError
from origamig.runtime.plan_run import ACKNOWLEDGED, AbortCause, PlanRun, PlanStatus, StepStatus
from origamig.serve.events_log import plan_step
from origamig.serve.live import Live
from origamig.serve.plans import plan_json


class UnknownPlan(UserError):
    """A plan id (or step number) the service does not have (HTTP 404)."""


class StepConflict(UserError):
    """An acknowledgement the plan cannot take as it is (HTTP 409)."""


class PlanDesk:
    """The plans' routes over `live`."""

    def __init__(self, live: Live) -> None:
        self.live = live

    def _run(self, plan_id: int) -> PlanRun:
        live = self.live
        run = live.plans.get(plan_id)
        if run is None and plan_id in live.frozen:
            status = live.frozen[plan_id]["status"]
            raise StepConflict(
                f"plan: {plan_id} has ended ({status}) and a server it touched was removed since: it is "
                "kept as it was last shown"
            )
        if run is None:
            raise UnknownPlan(f"plan: {plan_id} is not a plan of the service")
        return run

    def view(self, plan_id: int) -> dict[str, Any]:
        """The plan's JSON, after aborting it if its step timeout has passed."""
        live = self.live
        with live.lock:
            if plan_id in live.frozen:
                return dict(live.frozen[plan_id])
        with live.writing:
            with live.lock:
                run = self._run(plan_id)
                if run.running:
                    self._expire(run)
            live.commit()
        with live.lock:
            return plan_json(run, live.dc, live.modeled_s.get(plan_id, 0.0))

    def every(self) -> dict[str, Any]:
        """Every plan, oldest first."""
        live = self.live
        self.expire()
        with live.lock:
            shown = {i: plan_json(r, live.dc, live.modeled_s.get(r.id, 0.0)) for i, r in live.plans.items()}
            shown |= live.frozen
            return {"plans": [shown[i] for i in sorted(shown)]}

    def expire(self) -> None:
        """Abort every running plan whose ready steps waited longer than the step timeout."""
        live = self.live
        with live.writing:
            with live.lock:
                for run in live.runtime.plans.running():
                    self._expire(run)
            live.commit()

    def _expire(self, run: PlanRun) -> None:
        live = self.live
        limit = live.step_timeout_s
        now = live.now()
        if limit is None or not run.next_steps() or now - run.step_since_s <= limit:
            return
        waiting = ", ".join(str(i) for i in sorted(run.next_steps()))
        why = f"step {waiting} was not acknowledged within {limit:g} s"
        live.runtime.plans.end(run, PlanStatus.ABORTED, why, now, AbortCause.TIMEOUT)
        live.runtime.plans.advance(now)
        live.loop.settle(now)

    def acknowledge(self, plan_id: int, n: int, result: StepStatus) -> dict[str, Any]:
        """Step n was carried out (`done`) or not (`failed`) (module doc)."""
        live = self.live
        late = False
        with live.writing:
            with live.lock:
                run = self._run(plan_id)
                if run.running:
                    self._expire(run)
                if not 0 <= n < len(run.steps):
                    last = len(run.steps) - 1
                    raise UnknownPlan(f"step: plan {plan_id} has no step {n} (steps 0 to {last})")
                recorded = run.step_status(n)
                now = live.now()
                if recorded in ACKNOWLEDGED:
                    if recorded != result:
                        raise StepConflict(
                            f"step: {n} of plan {plan_id} was acknowledged {recorded.value!r} already"
                        )
                elif run.running and n in run.next_steps():
                    plan_step(run, n, result)
                    if result == StepStatus.FAILED:
                        run.failed_step = n
                        live.runtime.plans.end(run, PlanStatus.FAILED, f"step {n} failed", now)
                    else:
                        live.runtime.plans.step_done(run, n, now)
                    live.runtime.plans.advance(now)
                elif run.running:
                    ready = ", ".join(map(str, sorted(run.next_steps()))) or "none"
                    raise StepConflict(f"step: {n} of plan {plan_id} is not ready (ready steps: {ready})")
                elif result == StepStatus.DONE:
                    why = live.runtime.plans.late_step(run, n, now)
                    if why is not None:
                        raise StepConflict(f"step: {n} of plan {plan_id} ({run.status}): {why}")
                    live.dirty.plans.add(run.id)
                    plan_step(run, n, result, late=True)
                    late = True
                else:
                    raise StepConflict(
                        f"step: {n} of plan {plan_id} was never carried out: it has {run.status}"
                    )
                live.dirty.plans.add(run.id)
                live.loop.settle(now)
            live.commit()
        with live.lock:
            return plan_json(run, live.dc, live.modeled_s.get(plan_id, 0.0)) | (
                {"late": True} if late else {}
            )

    def cancel(self, plan_id: int) -> dict[str, Any]:
        """A client cancels a running plan: its moves under way stop (their GIs on hosts become orphans),
        the others never start; the VMs stay where its done steps left them."""
        live = self.live
        with live.writing:
            with live.lock:
                run = self._run(plan_id)
                if not run.running:
                    raise StepConflict(f"plan: {plan_id} has already ended ({run.status})")
                now = live.now()
                live.runtime.plans.end(run, PlanStatus.CANCELLED, "cancelled by a client", now)
                live.runtime.plans.advance(now)
                live.dirty.plans.add(run.id)
                live.loop.settle(now)
            live.commit()
        with live.lock:
            return plan_json(run, live.dc, live.modeled_s.get(plan_id, 0.0))

    def confirm_orphan(self, plan_id: int, step: int) -> dict[str, Any]:
        """A client confirms gone the GI that plan step `step` left on its host: its slices are free."""
        live = self.live
        with live.writing:
            with live.lock:
                run = self._run(plan_id)
                key = next((k for k, o in run.orphans.items() if o.step == step), None)
                if key is None:
                    listed = ", ".join(str(o.step) for o in run.orphans.values()) or "none"
                    raise UnknownPlan(
                        f"step: plan {plan_id} left no GI at step {step} (orphans at steps: {listed})"
                    )
                live.runtime.plans.confirm_gone(run, key)
                now = live.now()
                live.runtime.plans.advance(now)
                live.dirty.plans.add(run.id)
            live.commit()
        with live.lock:
            return plan_json(run, live.dc, live.modeled_s.get(plan_id, 0.0))
