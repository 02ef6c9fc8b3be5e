"""Seeds × policies × loads: run them in-process, on a process pool, or on a Dask cluster.

Every run is a picklable `RunSpec` executed by `run_one`, so any `concurrent.futures` executor can
carry it: `ProcessPoolExecutor` (`--workers N`) or a dask.distributed `Client.get_executor()`
(`--scheduler tcp://HOST:PORT`). Results come back in spec order whatever the executor.
`run_tasks` is the same machinery for any picklable task (the benchmarks' harness uses it).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from origamig.catalog import default_catalog
from origamig.errors import UserError
from origamig.policies import base as policy_base
from origamig.sim.engine import Progress, RunResult, Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for, validate

CONNECT_TIMEOUT = "10s"  # how long `--scheduler` waits for the Dask scheduler


@dataclass(frozen=True)
class RunSpec:
    """One run: a configuration, a policy by registry name, and a seed."""

    config: SimConfig
    policy: str
    seed: int


def make_run_policy(name: str, config: SimConfig, seed: int) -> policy_base.Policy:
    """The policy `name` with the run's solver options, passing only those its factory accepts."""
    factory = policy_base.policy_factory(name)  # raises the UserError naming the known policies
    wanted: dict[str, Any] = {"solver": config.solver, "deterministic": config.deterministic, "seed": seed}
    wanted.update(dict(config.policy_options))
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return factory(**wanted)
    return factory(**{k: v for k, v in wanted.items() if k in params})


def run_one(spec: RunSpec, progress: Progress | None = None) -> RunResult:
    """Run one policy over one seed's requests (in whatever process executes it)."""
    config = spec.config
    catalog = default_catalog()
    pms = build_pms(config, catalog)
    requests = requests_for(config, spec.seed, pms, catalog)
    policy = make_run_policy(spec.policy, config, spec.seed)
    sim = Simulation(
        pms, requests, policy, config.warmup_s, config.measure_s, config.deterministic, config.debug_check
    )
    result = sim.run(progress)
    return dataclasses.replace(result, policy=spec.policy, seed=spec.seed, config=config_dict(config))


def config_dict(config: SimConfig) -> dict[str, Any]:
    out = dataclasses.asdict(config)
    out["policy_options"] = dict(config.policy_options)
    return out


Done = Callable[[int, RunResult], None]  # (index in specs, result)
R = TypeVar("R")


def run_all(
    specs: Sequence[RunSpec],
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], Progress] | None = None,
    done: Done | None = None,
) -> list[RunResult]:
    """Run every spec; `progress(i)` gives a live callback for in-process runs, `done` fires per run."""
    for spec in {s.config for s in specs}:
        validate(spec)
    for name in sorted({s.policy for s in specs}):
        policy_base.policy_factory(name)  # raises the one-line UserError for an unknown name
    checked: list[tuple[str, SimConfig]] = []
    for spec in specs:  # a bad policy option is reported here, before any run starts
        if (spec.policy, spec.config) not in checked:
            checked.append((spec.policy, spec.config))
            make_run_policy(spec.policy, spec.config, spec.seed)
    live = progress if scheduler is None and workers <= 1 else None
    tasks = [functools.partial(run_one, s, live(i) if live else None) for i, s in enumerate(specs)]
    return run_tasks(tasks, workers, scheduler, done)


def run_tasks(
    tasks: Sequence[Callable[[], R]],
    workers: int = 1,
    scheduler: str | None = None,
    done: Callable[[int, R], None] | None = None,
) -> list[R]:
    """Run zero-argument tasks in this process, on `workers` processes, or on a Dask `scheduler`.

    Results come back in task order whatever the executor; `done(i, result)` fires as each task
    finishes. For processes and Dask a task must be picklable: a `functools.partial` of a
    module-level function with picklable arguments."""
    results: list[Any] = [None] * len(tasks)
    if scheduler is None and workers <= 1:
        for i, task in enumerate(tasks):
            results[i] = task()
            if done:
                done(i, results[i])
        return results
    with _executor(workers, scheduler) as pool:
        futures: dict[Future[R], int] = {pool.submit(task): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if done:
                done(i, results[i])
    return results


@contextmanager
def _executor(workers: int, scheduler: str | None) -> Iterator[Executor]:
    if scheduler is None:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            yield pool
        return
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask is a declared dependency
        raise UserError("--scheduler: dask.distributed is not installed") from None
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise UserError(f"--scheduler: cannot connect to {scheduler!r} ({exc})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
