"""A study on a real Dask cluster, started as a user starts one, gives exactly the local results.

`dask scheduler` and `dask worker ADDRESS --nworkers 2 --nthreads 1` (default nanny: the workers
are daemonic processes) run as separate processes on 127.0.0.1 with free ports, in their own
process group, ended when the module's tests are done. The study holds FF, TC and OrigaMIG (whose
solves go through the safety net's helper process, which a daemonic worker may start) and one run
whose request file is malformed: that one comes back failed, the others as they run locally.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from origamig.sim.scenario import SimConfig
from origamig.study.runner import FailedRun, RunSpec, run_all
from tests.paths import ROOT

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and the solver helper need POSIX")

H = 3600.0
START_TIMEOUT_S = 60.0  # for the scheduler and both workers to come up on a loaded machine
STOP_TIMEOUT_S = 10.0
# 8 PMs at load 1.0, 6 h + 6 h: OrigaMIG makes a few solver calls (8 for seed 1), FF and TC fill the PMs.
CONFIG = SimConfig(load=1.0, pms=8, warmup_s=6 * H, measure_s=6 * H, deterministic=True)
ORIGAMIG = CONFIG.replace(policy_options=(("work_limit", 20),))
BAD_REQUESTS = "id,arrival_s,lifetime_s,gpu_model,gis,cpu,ram_gb\njob1,0,7200,NO-SUCH-GPU,3g.20gb,,\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """`python -m dask ARGS` in a new process group, with this checkout first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """End the process and everything it started (its group): terminate, then kill."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("dask")
    address = f"tcp://127.0.0.1:{free_port()}"
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    processes = [start(["scheduler", "--port", address.rsplit(":", 1)[1], *common], folder / "scheduler.log")]
    try:
        worker = ["worker", address, "--nworkers", "2", "--nthreads", "1", *common]
        processes.append(start([*worker, "--local-directory", str(folder)], folder / "worker.log"))
        deadline = time.monotonic() + START_TIMEOUT_S
        with distributed.Client(address, timeout=f"{START_TIMEOUT_S:g}s", set_as_default=False) as client:
            client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
        yield address
    finally:
        for process in reversed(processes):
            stop(process)


def comparable(result: object) -> object:
    if isinstance(result, FailedRun):
        return ("failed", result.policy, result.seed, result.error)
    return (result.policy, result.seed, result.metrics, result.events, result.requests, result.calls)


def test_a_study_on_a_dask_cluster_gives_the_local_results(scheduler: str, tmp_path: Path) -> None:
    bad = tmp_path / "requests.csv"
    bad.write_text(BAD_REQUESTS)
    specs = [
        RunSpec(CONFIG, "ff", 1),
        RunSpec(CONFIG, "tc", 1),
        RunSpec(ORIGAMIG, "origamig", 1),
        RunSpec(CONFIG.replace(requests_file=str(bad)), "ff", 1),
    ]
    local = run_all(specs)
    remote = run_all(specs, scheduler=scheduler)
    assert [comparable(r) for r in remote] == [comparable(r) for r in local]
    failed = [r for r in remote if isinstance(r, FailedRun)]
    assert len(failed) == 1 and "NO-SUCH-GPU" in failed[0].error and "\n" not in failed[0].error
    assert "read_requests" in failed[0].traceback  # the worker's frames, for a log
    solved = [r for r in remote if not isinstance(r, FailedRun) and r.policy == "origamig"]
    assert all(r.calls > 0 and r.counters.get("status_error", 0) == 0 for r in solved)
    assert all(r.counters.get("status_interrupted", 0) == 0 for r in solved)
