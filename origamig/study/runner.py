"""Seeds × policies × loads: run them in-process, on a process pool, or on a Dask cluster.

Every run is a picklable `RunSpec` executed by `run_one`, so any `concurrent.futures` executor can
carry it: `ProcessPoolExecutor` (`--workers N`) or a dask.distributed `Client.get_executor()`
(`--scheduler tcp://HOST:PORT`). Results come back in spec order whatever the executor.
A run that raises (or whose worker dies) does not end the others: it comes back as a `FailedRun`
in place of its result, with the error on one line.
`run_tasks` is the same machinery for any picklable task (the benchmarks' harness uses it).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from origamig.bilp.backends.base import one_line
from origamig.call.neighborhood_bounds import derived_bounds
from origamig.cluster.catalog import default_catalog, models_dir
from origamig.errors import UserError, require_extra
from origamig.policies import base as policy_base
from origamig.runtime.migration import MigrationModel
from origamig.sim.engine import CHECKPOINT_EVERY_S, Checkpoint, Progress, RunResult, Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for, validate, workload_spec
from origamig.snapshot.document import write_json_atomic

CONNECT_TIMEOUT = "10s"  # how long `--scheduler` waits for the Dask scheduler


@dataclass(frozen=True)
class RunSpec:
    """One run: a configuration, a policy by registry name, and a seed.

    With `checkpoint` (a file path) the run saves itself there every `checkpoint_every_s` wall
    seconds and, when started again with the same spec, resumes from it; the file is removed when
    the run ends. Results are the same as without."""

    config: SimConfig
    policy: str
    seed: int
    checkpoint: str | None = None
    checkpoint_every_s: float = CHECKPOINT_EVERY_S

    def identity(self) -> str:
        """What a checkpoint of this run must have been made for: this run, by this very code (a
        pickled state is only valid for the code that wrote it)."""
        what = repr((self.config, self.policy, self.seed, source_fingerprint()))
        return hashlib.sha256(what.encode()).hexdigest()


@functools.cache
def source_fingerprint() -> str:
    """A digest of the package's Python sources and data files (models/ is read at run time too)."""
    root = Path(__file__).resolve().parents[1]  # the package folder
    digest = hashlib.sha256()
    for base in (root, models_dir()):
        for path in sorted(p for p in base.rglob("*") if p.is_file() and p.suffix != ".pyc"):
            digest.update(str(path.relative_to(base)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class FailedRun:
    """A run that raised instead of finishing, returned in place of its `RunResult`: which run, and
    the error as one line (`error`) and in full (`traceback`, the worker's frames when known)."""

    policy: str
    seed: int
    config: dict[str, Any]
    error: str
    traceback: str = ""

    def describe(self) -> str:
        """One line for a report: `<policy> load <ρ> seed <seed> failed: <error>`."""
        return f"{self.policy} load {self.config.get('load')} seed {self.seed} failed: {self.error}"


def failed_run(spec: RunSpec, exc: BaseException) -> FailedRun:
    """The `FailedRun` of `spec` ended by `exc`."""
    return FailedRun(
        policy=spec.policy,
        seed=spec.seed,
        config=config_dict(spec.config),
        error=one_line(f"{exc.__class__.__name__}: {exc}"),
        traceback="".join(traceback.format_exception(exc)),
    )


def make_run_policy(name: str, config: SimConfig, seed: int) -> policy_base.Policy:
    """The policy `name` with the run's solver options, passing only those its factory accepts."""
    factory = policy_base.policy_factory(name)  # raises the UserError naming the known policies
    wanted: dict[str, Any] = {"solver": config.solver, "deterministic": config.deterministic, "seed": seed}
    if config.snapshot:  # the cluster's own objective weights (docs/formats.md#snapshot)
        from origamig.sim.start import load_start

        wanted["weights"] = load_start(config.snapshot).weights
    wanted.update(dict(config.policy_options))
    accepted = policy_base.option_names(factory)
    if accepted is not None and {"m_max", "n_max"} <= accepted:  # bounds that suit the PMs, unless set
        m_max, n_max = derived_bounds(build_pms(config))
        wanted = {"m_max": m_max, "n_max": n_max, **wanted}
    if accepted is None:
        return factory(**wanted)
    return factory(**{k: v for k, v in wanted.items() if k in accepted})


def run_one(spec: RunSpec, progress: Progress | None = None) -> RunResult:
    """Run one policy over one seed's requests (in whatever process executes it), from its
    checkpoint when it has one of this very run."""
    checkpoint = None
    sim = None
    if spec.checkpoint is not None:
        checkpoint = Checkpoint(Path(spec.checkpoint), spec.identity(), spec.checkpoint_every_s)
        sim = Simulation.resume(checkpoint)
    if sim is None:
        sim = new_simulation(spec)
    result = sim.run(progress, checkpoint)
    if checkpoint is not None:
        checkpoint.path.unlink(missing_ok=True)
    return dataclasses.replace(result, policy=spec.policy, seed=spec.seed, config=config_dict(spec.config))


def new_simulation(spec: RunSpec) -> Simulation:
    """The run of `spec` from its start: the data center, the seed's requests, the policy."""
    config = spec.config
    catalog = default_catalog()
    pms = build_pms(config, catalog)
    requests = requests_for(config, spec.seed, pms, catalog)
    initial: tuple = ()
    if config.snapshot:
        from origamig.sim.start import start_state

        start = start_state(config.snapshot, workload_spec(config), spec.seed, [r.id for r in requests])
        requests, initial = [*start.pending, *requests], start.running
    policy = make_run_policy(spec.policy, config, spec.seed)
    return Simulation(
        pms,
        requests,
        policy,
        config.warmup_s,
        config.measure_s,
        config.deterministic,
        config.debug_check,
        initial=initial,
        migration=MigrationModel.of(config.migration),
    )


def config_dict(config: SimConfig) -> dict[str, Any]:
    out = dataclasses.asdict(config)
    out["policy_options"] = dict(config.policy_options)
    return out


Done = Callable[[int, RunResult | FailedRun], None]  # (index in specs, result)
R = TypeVar("R")
F = TypeVar("F")


def run_all(
    specs: Sequence[RunSpec],
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], Progress] | None = None,
    done: Done | None = None,
    keep_dir: Path | None = None,
    keep_going: bool = True,
) -> list[RunResult | FailedRun]:
    """Run every spec; `progress(i)` gives a live callback for in-process runs, `done` fires per run.

    A run that raises gives a `FailedRun` in its place and the others go on (`keep_going=False`:
    its exception ends the call instead).
    With `keep_dir`, every run checkpoints itself there and writes its result there as soon as it
    ends; a later call with the same specs (and the same code) takes the finished runs from there,
    resumes the interrupted ones (a failed one from its last checkpoint) and runs only the rest
    (`kept_run_path`)."""
    for config in {s.config for s in specs}:
        validate(config)
    for name in sorted({s.policy for s in specs}):
        policy_base.policy_factory(name)  # raises the one-line UserError for an unknown name
    checked: list[tuple[str, SimConfig]] = []
    for spec in specs:  # a bad policy option is reported here, before any run starts
        if (spec.policy, spec.config) not in checked:
            checked.append((spec.policy, spec.config))
            make_run_policy(spec.policy, spec.config, spec.seed)
    live = progress if scheduler is None and workers <= 1 else None
    if keep_dir is None:
        tasks = [functools.partial(run_one, s, live(i) if live else None) for i, s in enumerate(specs)]
        failed = (lambda i, exc: failed_run(specs[i], exc)) if keep_going else None
        return run_tasks(tasks, workers, scheduler, done, failed)
    _make_keep_dir(keep_dir)
    results: list[RunResult | FailedRun | None] = [
        kept_result(kept_run_path(keep_dir, s, ".json")) for s in specs
    ]
    todo = [i for i, r in enumerate(results) if r is None]
    for i, result in enumerate(results):
        if result is not None and done:
            done(i, result)
    tasks = [
        functools.partial(
            run_one,
            dataclasses.replace(specs[i], checkpoint=str(kept_run_path(keep_dir, specs[i], ".ckpt"))),
            live(i) if live else None,
        )
        for i in todo
    ]

    def finished(k: int, result: RunResult | FailedRun) -> None:
        if isinstance(result, RunResult):  # a failed run keeps only its checkpoint: a rerun retries it
            path = kept_run_path(keep_dir, specs[todo[k]], ".json")
            write_json_atomic(path, dataclasses.asdict(result), indent=1)
        if done:
            done(todo[k], result)

    failed = (lambda k, exc: failed_run(specs[todo[k]], exc)) if keep_going else None
    for k, result in enumerate(run_tasks(tasks, workers, scheduler, finished, failed)):
        results[todo[k]] = result
    return [r for r in results if r is not None]


def _make_keep_dir(directory: Path) -> None:
    """Create the folder runs are kept in; a path that cannot be one is a one-line error."""
    if directory.exists() and not directory.is_dir():
        raise UserError(f"--checkpoint-dir: {str(directory)!r} exists and is not a folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--checkpoint-dir: cannot create {str(directory)!r} ({exc.strerror})") from None


def kept_run_path(directory: Path, spec: RunSpec, suffix: str) -> Path:
    """`<policy>-load<ρ>-seed<seed>-<identity>` + suffix: the run's checkpoint (`.ckpt`) or finished
    result (`.json`). The identity covers the configuration and the code, so a file of another
    setup or another version of the package is never taken for this run's."""
    name = f"{spec.policy}-load{spec.config.load:g}-seed{spec.seed}-{spec.identity()[:16]}{suffix}"
    return directory / name


def kept_result(path: Path) -> RunResult | None:
    """The finished run stored at `path`, or None (no file, or not a readable result)."""
    try:
        return RunResult(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def run_tasks(
    tasks: Sequence[Callable[[], R]],
    workers: int = 1,
    scheduler: str | None = None,
    done: Callable[[int, Any], None] | None = None,
    failed: Callable[[int, Exception], F] | None = None,
) -> list[R | F]:
    """Run zero-argument tasks in this process, on `workers` processes, or on a Dask `scheduler`.

    Results come back in task order whatever the executor; `done(i, result)` fires as each task
    finishes. A task that raises (or whose process dies) ends the call, unless `failed` is given:
    then `failed(i, exception)` stands in for its result and the other tasks go on. For processes
    and Dask a task must be picklable: a `functools.partial` of a module-level function with
    picklable arguments."""
    results: list[Any] = [None] * len(tasks)

    def finish(i: int, outcome: Callable[[], R]) -> None:
        try:
            results[i] = outcome()
        except Exception as exc:
            if failed is None:
                raise
            results[i] = failed(i, exc)
        if done:
            done(i, results[i])

    if scheduler is None and workers <= 1:
        for i, task in enumerate(tasks):
            finish(i, task)
        return results
    with _executor(workers, scheduler) as pool:
        futures: dict[Future[R], int] = {pool.submit(task): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            finish(futures[fut], fut.result)
    return results


@contextmanager
def _executor(workers: int, scheduler: str | None) -> Iterator[Executor]:
    if scheduler is None:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            yield pool
        return
    require_extra("distributed", "dask", "--scheduler")
    from distributed import Client

    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise UserError(f"--scheduler: cannot connect to {scheduler!r} ({exc})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
