"""A run that saves itself and is resumed in a fresh start gives the results of a run never stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from origamig.sim import engine
from origamig.sim.engine import Checkpoint, Simulation, checkpoint_header
from origamig.sim.scenario import SimConfig
from origamig.study.runner import RunSpec, run_one

H = 3600.0
# 8 PMs at load 1.0 for 16 h: the data center fills, OrigaMIG makes calls (admission and consolidation).
TINY = SimConfig(load=1.0, pms=8, warmup_s=8 * H, measure_s=8 * H, deterministic=True)
OPTIONS = (("threads", 1), ("time_limit_s", None), ("work_limit", 100))


class Stopped(Exception):
    """Stands for the process being killed right after a save."""


def comparable(result) -> tuple:
    """Everything a run reports that does not measure the wall clock of this machine."""
    clock = ("median_call_s", "wall_s")
    counters = {k: v for k, v in result.counters.items() if not k.startswith("time_") and k not in clock}
    return result.metrics, counters, result.events, result.requests, result.calls


@pytest.mark.parametrize("policy", ["origamig", "tc"])
def test_a_run_stopped_after_a_save_and_resumed_equals_one_never_stopped(
    tmp_path: Path, monkeypatch, policy
) -> None:
    config = TINY.replace(policy_options=OPTIONS if policy == "origamig" else ())
    plain = run_one(RunSpec(config, policy, 3))
    assert plain.calls > 3  # there is a middle to stop in

    path = tmp_path / "run.ckpt"
    spec = RunSpec(config, policy, 3, checkpoint=str(path), checkpoint_every_s=0.0)
    real_save = Simulation.save
    saves: list[float] = []

    def save_then_stop(self, checkpoint, wall_s, cpu_s=0.0):
        real_save(self, checkpoint, wall_s, cpu_s)
        saves.append(self.now)
        if len(saves) == 3:  # a few events in: killed
            raise Stopped

    monkeypatch.setattr(engine.Simulation, "save", save_then_stop)
    with pytest.raises(Stopped):
        run_one(spec)
    header = checkpoint_header(path)
    assert header is not None and header["identity"] == spec.identity()
    assert 0 < header["t"] == saves[-1] < config.warmup_s + config.measure_s
    monkeypatch.setattr(engine.Simulation, "save", real_save)

    def no_fresh_start(*args, **kwargs):
        raise AssertionError("the run started afresh instead of resuming")

    monkeypatch.setattr(engine.Simulation, "__init__", no_fresh_start)
    resumed = run_one(spec)
    assert comparable(resumed) == comparable(plain)
    assert not path.exists()  # removed once the run ended


def test_a_checkpoint_of_another_run_is_not_resumed(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    other = RunSpec(TINY, "ff", 3, checkpoint=str(path))
    sim = Simulation.__new__(Simulation)  # any state will do: it must not be used
    sim.__dict__.update(now=1.0, end=2.0)
    sim.save(Checkpoint(path, other.identity()), 5.0)
    spec = RunSpec(TINY, "ff", 4, checkpoint=str(path))
    assert spec.identity() != other.identity()
    assert Simulation.resume(Checkpoint(path, spec.identity())) is None
    assert comparable(run_one(spec)) == comparable(run_one(RunSpec(TINY, "ff", 4)))


def test_an_unreadable_checkpoint_is_not_resumed(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    path.write_bytes(b"not a pickle")
    assert checkpoint_header(path) is None
    assert Simulation.resume(Checkpoint(path, "x")) is None


def test_a_checkpoint_written_by_other_code_is_not_resumed(tmp_path: Path, monkeypatch) -> None:
    from origamig.study import runner

    spec = RunSpec(TINY, "ff", 3, checkpoint=str(tmp_path / "run.ckpt"))
    before = spec.identity()
    monkeypatch.setattr(runner, "source_fingerprint", lambda: "another version of the package")
    assert spec.identity() != before


def test_runs_kept_in_a_folder_resume_after_a_kill_and_finished_ones_are_not_run_again(
    tmp_path: Path, monkeypatch
) -> None:
    from origamig.study import runner

    specs = [RunSpec(TINY, "ff", 3, checkpoint_every_s=0.0), RunSpec(TINY, "tc", 3, checkpoint_every_s=0.0)]
    plain = [comparable(run_one(RunSpec(s.config, s.policy, s.seed))) for s in specs]
    real_save = Simulation.save
    saves: list[str] = []

    def save_then_stop(self, checkpoint, wall_s, cpu_s=0.0):
        real_save(self, checkpoint, wall_s, cpu_s)
        saves.append(checkpoint.path.name)
        if checkpoint.path.name.startswith("tc-") and len([n for n in saves if n.startswith("tc-")]) == 3:
            raise Stopped

    monkeypatch.setattr(engine.Simulation, "save", save_then_stop)
    with pytest.raises(Stopped):  # as a kill would: the call ends (a failed run would not end it)
        runner.run_all(specs, keep_dir=tmp_path, keep_going=False)
    monkeypatch.setattr(engine.Simulation, "save", real_save)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert [n.rsplit("-", 1)[0] for n in files] == ["ff-load1-seed3", "tc-load1-seed3"]
    assert files[0].endswith(".json") and files[1].endswith(".ckpt")  # ff finished, tc interrupted

    def no_fresh_start(*args, **kwargs):
        raise AssertionError("a run started afresh instead of being taken from the folder")

    monkeypatch.setattr(engine.Simulation, "__init__", no_fresh_start)
    finished = []
    again = runner.run_all(specs, keep_dir=tmp_path, done=lambda i, r: finished.append(i))
    assert [comparable(r) for r in again] == plain
    assert sorted(finished) == [0, 1]
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json"]  # checkpoint gone

    monkeypatch.setattr(runner, "run_one", lambda *a, **k: pytest.fail("a finished run was run again"))
    assert [comparable(r) for r in runner.run_all(specs, keep_dir=tmp_path)] == plain


def test_simulate_checkpoint_dir_gives_the_same_results_file_on_a_rerun(tmp_path: Path, monkeypatch) -> None:
    import json

    from origamig.study import runner
    from tests.cli_helpers import run_main

    args = ["simulate", "--policy", "ff,tc", "--pms", "8", "--seeds", "1,2"]
    args += ["--warmup", "4h", "--measure", "4h"]
    code, out, err = run_main([*args, "--json", "--checkpoint-dir", str(tmp_path / "runs")])
    assert code == 0, err
    first = json.loads(out)
    assert len(list((tmp_path / "runs").glob("*.json"))) == 4

    monkeypatch.setattr(runner, "run_one", lambda *a, **k: pytest.fail("a finished run was run again"))
    code, out, err = run_main([*args, "--checkpoint-dir", str(tmp_path / "runs")])
    assert code == 0, err
    assert "4 of 4 runs already finished" in err
    code, out, err = run_main([*args, "--json", "--checkpoint-dir", str(tmp_path / "runs")])
    again = json.loads(out)
    assert again["summary"] == first["summary"] and again["paired"] == first["paired"]

    (tmp_path / "file").write_text("")
    code, _, err = run_main([*args, "--checkpoint-dir", str(tmp_path / "file")])
    assert code == 2 and err.strip().endswith("exists and is not a folder")
    code, _, err = run_main([*args, "--checkpoint-dir", str(tmp_path / "file" / "runs")])
    assert code == 2 and err.startswith("error: --checkpoint-dir: cannot create") and "\n" not in err.strip()


def test_a_run_counts_the_cpu_time_of_its_solver_helper() -> None:
    """`cpu_s` of an OrigaMIG run is its CPU time on every core: its calls solve in a helper process,
    whose time this process's own clock misses."""
    import time

    config = TINY.replace(policy_options=OPTIONS)
    own0 = time.process_time()
    result = run_one(RunSpec(config, "origamig", 3))
    own = time.process_time() - own0
    assert result.counters["time_solve_s"] > 0.1  # the run spent time in solves
    assert result.cpu_s > own  # the helper's CPU time is in the run's
