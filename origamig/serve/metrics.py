"""`GET /metrics` in Prometheus' text format (`prometheus_client`; docs/service.md#logs-and-metrics).

Counted as they happen: checks by outcome and their durations, plan events (created, ended by state
and abort cause), binds by outcome, request latency per route and the filter's latency. Read from the
live state at each scrape: VMs by state, plans by state, the PMs held. Each service has its own
registry (nothing global: a process may build several apps, as the tests do).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from origamig.serve.events_log import EVENTS
from origamig.serve.live import Live
from origamig.serve.plan_retention import with_retired

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Latency buckets (seconds): kube-scheduler's extender timeout is 5 s; checks take up to minutes.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CHECK_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)


class _LiveCollector(Collector):
    """What the live state holds, read at each scrape."""

    def __init__(self, live: Live) -> None:
        self.live = live

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = with_retired(self.live.store, self.live.counts())  # dropped ended plans still count
        vms = GaugeMetricFamily("origamig_vms", "VMs the service holds, by state", labels=["state"])
        for state, n in counts["vms"].items():
            vms.add_metric([state], n)
        plans = GaugeMetricFamily("origamig_plans", "Plans of the optimizer, by state", labels=["state"])
        for state, n in counts["plans"].items():
            plans.add_metric([str(state)], n)
        causes = GaugeMetricFamily("origamig_plans_aborted", "Aborted plans, by cause", labels=["cause"])
        for cause, n in counts["aborted_causes"].items():
            causes.add_metric([cause], n)
        held = GaugeMetricFamily("origamig_held_pms", "PMs held by running calls and plans")
        held.add_metric([], counts["held_pms"])
        pms = GaugeMetricFamily("origamig_pms", "PMs of the state")
        pms.add_metric([], counts["pms"])
        yield from (vms, plans, causes, held, pms)


class Metrics:
    """The service's metrics, in a registry of their own."""

    def __init__(self, live: Live) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_LiveCollector(live))
        self.checks = Counter(
            "origamig_checks", "Optimizer checks that ended, by outcome", ["outcome"], registry=self.registry
        )
        self.check_seconds = Histogram(
            "origamig_check_duration_seconds", "Wall time of an optimizer check",
            buckets=CHECK_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.plan_events = Counter(
            "origamig_plan_events", "Plan events, by event (created, step, done, failed, aborted, cancelled)",
            ["event"], registry=self.registry,
        )  # fmt: skip
        self.binds = Counter("origamig_binds", "Binds, by outcome", ["outcome"], registry=self.registry)
        self.requests = Histogram(
            "origamig_request_duration_seconds", "Wall time of a request, by route and status class",
            ["method", "route", "status"], buckets=REQUEST_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.filter_seconds = Histogram(
            "origamig_filter_duration_seconds", "Wall time of a kube-scheduler filter call",
            buckets=REQUEST_BUCKETS, registry=self.registry,
        )  # fmt: skip

    def on_event(self, event: str, fields: dict[str, Any]) -> None:
        """Count an event of the log (`events_log.EventLog.listeners`)."""
        if event == "check":
            self.checks.labels("ok" if fields.get("ok") else "failed").inc()
            self.check_seconds.observe(float(fields.get("duration_s", 0.0)))
        elif event.startswith("plan."):
            self.plan_events.labels(event.removeprefix("plan.")).inc()
        elif event == "bind":
            self.binds.labels("ok" if fields.get("ok") else "error").inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, f"{status // 100}xx").observe(seconds)
        if route == "/k8s/filter":
            self.filter_seconds.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def timed(route: Route, metrics: Metrics, access_log: bool) -> Route:
    """`route` with each request timed into `metrics` and, with `access_log`, one line of the event
    log (method, route, path, status, seconds, client)."""
    handler: Callable[[Request], Awaitable[Response]] = route.endpoint

    async def run(request: Request) -> Response:
        began = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status_code
            return response
        finally:
            seconds = time.perf_counter() - began
            metrics.observe_request(request.method, route.path, status, seconds)
            if access_log:
                client = request.client.host if request.client is not None else ""
                EVENTS.emit("request", method=request.method, route=route.path, path=request.url.path[:200],
                            status=status, seconds=round(seconds, 6), client=client)  # fmt: skip

    return Route(route.path, run, methods=list(route.methods or ()), name=route.name)
