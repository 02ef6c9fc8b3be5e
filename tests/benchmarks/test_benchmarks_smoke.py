"""The sweep scripts of benchmarks/ (loads, variants, migration_penalty, ablation) end to end on a tiny
configuration: 8 PMs, 2 h + 2 h simulated, one seed, FF/TC (and OrigaMIG without calls) only, in
process. Proves the machinery (cells, run_all, tables, JSON, PNG) works without the real quick runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks import paper_values
from benchmarks.paper import ablation, loads, migration_penalty, rivals, variants
from origamig.errors import UserError
from origamig.study import sweep
from origamig.study.sweep import engine

SMOKE = sweep.SMOKE
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_outputs(sw: sweep.Sweep, json_path: Path, png_path: Path) -> dict:
    doc = json.loads(json_path.read_text())
    assert doc["scale_text"].startswith("smoke scale: 8 PMs, 2 h warm-up + 2 h measured")
    assert len(doc["runs"]) == len(sw.cells)
    for run in doc["runs"]:
        acc = run["metrics"]["acceptance"]
        assert acc is None or 0.0 <= acc <= 1.0
        assert 0.0 <= run["metrics"]["active_pms_pct"] <= 100.0
    assert png_path.read_bytes()[:8] == PNG_MAGIC
    return doc


def test_loads_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells = loads.cells(SMOKE, (0.75,), policies=("ff", "tc"))
    sw = sweep.run("loads", SMOKE, cells, workers=1, show_progress=False)
    findings = loads.analyse(sw, (0.75,))
    loads.print_tables(sw, (0.75,), findings)
    assert "Load 0.75" in capsys.readouterr().out
    doc = _check_outputs(
        sw, sweep.write_json(sw, {"findings": findings}, tmp_path), loads.draw(sw, (0.75,), tmp_path)
    )
    # Paired by seed: every policy of a seed sees the same request stream.
    assert len({r["requests"] for r in doc["runs"]}) == 1
    assert findings["origamig_fewer_pms_than_tc"] == [0, 0]  # no OrigaMIG row ran
    ff = sw.by_seed("ff", "0.75", "migrations_per_hour")
    assert ff == {1: 0.0}  # FF never migrates
    # --replot reads the stored sweep back: same runs, same statistics.
    back = sweep.load_sweep("loads", SMOKE, tmp_path)
    assert back.metric("tc", "0.75", "active_pms") == sw.metric("tc", "0.75", "active_pms")
    assert [c.config for c in back.cells] == [c.config for c in cells]


def test_variants_smoke(tmp_path: Path) -> None:
    names = ("default", "a30-only")
    cells = variants.cells(SMOKE, names, (), rows=("ff", "tc"))
    sw = sweep.run("variants", SMOKE, cells, workers=1, show_progress=False)
    findings = variants.analyse(sw, names)
    variants.print_table(sw, names, findings)
    _check_outputs(
        sw,
        sweep.write_json(sw, {"findings": findings}, tmp_path),
        variants.draw(sw, names, findings, tmp_path),
    )
    # a30-only: every GPU of the data center is an A30, so no run there places an A100 VM.
    assert {r.variant for r in sw.runs} == set(names)
    assert set(findings["per_variant"]["a30-only"]["pms_reduction_vs_ff_pct"]) == {"tc"}


def test_migration_penalty_smoke(tmp_path: Path) -> None:
    cells = migration_penalty.cells(SMOKE, deltas=(), periods=(15, 60))
    rows = ("tc-15min", "tc-60min")
    sw = sweep.run("migration_penalty", SMOKE, cells, workers=1, show_progress=False)
    findings = migration_penalty.analyse(sw, rows)
    migration_penalty.print_table(sw, rows, findings)
    path = sweep.write_json(sw, {"findings": findings}, tmp_path)
    _check_outputs(sw, path, migration_penalty.draw(sw, rows, findings, tmp_path))
    options = {r.row: r.policy_options for r in sw.runs}
    assert options["tc-15min"] == {"period_s": 900.0} and options["tc-60min"] == {"period_s": 3600.0}


def test_ablation_without_calls_is_ff(tmp_path: Path) -> None:
    # Paper §6.7: "Without any call, OrigaMIG reduces to FF" — same requests, same arrival rule.
    rows = ("no-calls",)
    cells = ablation.cells(SMOKE, rows)
    sw = sweep.run("ablation", SMOKE, cells, workers=1, show_progress=False)
    findings = ablation.analyse(sw, rows)
    ablation.print_table(sw, rows, findings)
    _check_outputs(
        sw, sweep.write_json(sw, {"findings": findings}, tmp_path), ablation.draw(sw, rows, tmp_path)
    )
    assert findings["no_calls_equals_ff"]
    assert sw.by_seed("no-calls", "0.85", "acceptance") == sw.by_seed("ff", "0.85", "acceptance")


def test_ablation_rows_cover_table11() -> None:
    assert set(ablation.ROWS) == set(paper_values.TABLE11) and len(ablation.ROWS) == 14
    # Time-limit rows in deterministic runs: the node budget scales by t / 10 s (100 nodes · 1/10 = 10).
    quick = dataclasses.replace(sweep.QUICK, work_limit=100)
    assert ablation.row_options(quick, "tl-1") == {"work_limit": 10.0}
    assert ablation.row_options(sweep.FULL, "tl-30") == {"work_limit": 300.0}
    wall = dataclasses.replace(sweep.FULL, deterministic=False, time_limit_s=10.0, work_limit=None)
    assert ablation.row_options(wall, "tl-30") == {"time_limit_s": 30.0}
    assert ablation.row_options(quick, "mmax-8") == {"m_max": 8, "n_max": 32}


def test_every_origamig_cell_names_its_arrival_rule() -> None:
    # Studies of the paper's OrigaMIG (Tables 10-12) place arrivals by first fit, as the paper does;
    # the policy comparison runs OrigaMIG as shipped (TC's rule). The rule is part of every cell key.
    def rules(cells: list[sweep.Cell]) -> set[str]:
        return {dict(c.config.policy_options)["arrival"] for c in cells if c.policy == "origamig"}

    assert rules(ablation.cells(SMOKE)) == {"ff"}
    assert rules(migration_penalty.cells(SMOKE)) == {"ff"}
    assert rules(loads.cells(SMOKE, (0.85,))) == {"tc"}
    shipped = loads.cells(SMOKE, (0.85,), ("origamig",))[0]
    paper = dataclasses.replace(shipped, config=shipped.config.replace(policy_options=(("arrival", "ff"),)))
    assert shipped.key != paper.key


def _run(row: str, seed: int, active_pms: float) -> sweep.RunRecord:
    """A run of column "x" with only its active PMs."""
    return sweep.RunRecord(
        cell=f"{row}|x|{seed}", row=row, col="x", policy=row, seed=seed, load=0.85, variant="default",
        policy_options={}, metrics={"active_pms": active_pms}, counters={}, requests=0, calls=0, wall_s=0.0,
    )  # fmt: skip


def test_paired_statistics_by_hand() -> None:
    sw = sweep.Sweep("t", SMOKE, [])
    sw.runs = [
        _run("ff", 1, 100.0),
        _run("ff", 2, 50.0),
        _run("o", 1, 90.0),
        _run("o", 2, 50.0),
        _run("o", 3, 10.0),  # no FF partner: ignored
    ]
    red = sw.reduction_pct("o", "ff", "x")
    # Seed 1: 100·(100−90)/100 = 10 %; seed 2: 0 %; mean 5 % over n = 2.
    assert red.n == 2 and red.mean == pytest.approx(5.0)
    # 95% CI half-width: t(1) = 12.706 · stdev(10, 0) = 7.071 / √2 → 12.706 · 5 = 63.53.
    assert red.ci95 == pytest.approx(63.53, abs=0.01)


def test_paper_values_scale() -> None:
    shown = sweep.SHOWN_BY_KEY["energy_mwh"]
    quick = sweep.QUICK
    # 5.57 MWh over 128 PMs and 72 h → at 32 PMs and 24 h: 5.57 · 32/128 · 24/72 = 0.46417.
    assert sweep.paper_at_scale(5.57, shown, quick) == pytest.approx(0.46417, abs=1e-4)
    assert sweep.paper_at_scale(99.5, sweep.SHOWN_BY_KEY["acceptance"], quick) == 99.5


def test_sweep_on_a_dask_cluster_matches_in_process() -> None:
    distributed = pytest.importorskip("distributed")
    cells = loads.cells(SMOKE, (0.5,), policies=("ff",))
    local = sweep.run("loads", SMOKE, cells, workers=1, show_progress=False)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as c:
        remote = sweep.run("loads", SMOKE, cells, scheduler=c.scheduler_address, show_progress=False)
    # Same seed, same requests, same deterministic policy: the cluster gives the very same metrics.
    assert [r.metrics for r in remote.runs] == [r.metrics for r in local.runs]


def test_sweep_writes_each_cell_at_once_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = dataclasses.replace(SMOKE, seeds=(1,))
    two = dataclasses.replace(SMOKE, seeds=(1, 2))
    ran: list[int] = []
    real_run_all = engine.run_all

    def counting_run_all(specs, **kw):
        ran.extend(s.seed for s in specs)
        return real_run_all(specs, **kw)

    monkeypatch.setattr(engine, "run_all", counting_run_all)
    first = sweep.run("loads", one, loads.cells(one, (0.75,), ("ff",)), 1, None, False, tmp_path)
    path = sweep.results_path("loads", one, tmp_path)
    stored = json.loads(path.read_text())
    assert stored["partial"] and [r["seed"] for r in stored["runs"]] == [1]  # written as it finished
    # The same command with one more seed runs only the new cell and keeps the stored run as it was.
    second = sweep.run("loads", two, loads.cells(two, (0.75,), ("ff",)), 1, None, False, tmp_path)
    assert ran == [1, 2]
    # Another command's seeds join the stored ones: the file names every seed its runs hold.
    three = dataclasses.replace(SMOKE, seeds=(3,))
    sweep.run("loads", three, loads.cells(three, (0.75,), ("ff",)), 1, None, False, tmp_path)
    assert json.loads(path.read_text())["scale"]["seeds"] == [1, 2, 3]
    assert ran == [1, 2, 3]
    assert second.runs[0] == first.runs[0] and [r.seed for r in second.runs] == [1, 2]
    # A rerun of a finished command runs nothing.
    sweep.run("loads", two, loads.cells(two, (0.75,), ("ff",)), 1, None, False, tmp_path)
    assert ran == [1, 2, 3]
    # A file written at another setting of the scale is refused, not mixed.
    other = dataclasses.replace(two, pms=16)
    with pytest.raises(sweep.UserError, match="another setting"):
        sweep.run("loads", other, loads.cells(other, (0.75,), ("ff",)), 1, None, False, tmp_path)
    # So is a file made by other code (here: the last hand-numbered revision, whose runs name no
    # code), while its tables can still be redrawn.
    doc = json.loads(path.read_text())
    for r in doc["runs"]:
        del r["code"]
    doc["scale"]["revision"] = 3
    path.write_text(json.dumps(doc))
    with pytest.raises(sweep.UserError, match="made by other code"):
        sweep.run("loads", two, loads.cells(two, (0.75,), ("ff",)), 1, None, False, tmp_path)
    assert ran == [1, 2, 3]
    assert sweep.load_sweep("loads", two, tmp_path).runs[0].metrics == first.runs[0].metrics
    # A file of an earlier revision never computes the same: refused outright.
    doc["scale"]["revision"] = 2
    path.write_text(json.dumps(doc))
    with pytest.raises(sweep.UserError, match="results revision 2"):
        sweep.run("loads", two, loads.cells(two, (0.75,), ("ff",)), 1, None, False, tmp_path)


def test_runs_of_other_code_are_adopted_only_when_they_recompute_identically(tmp_path: Path) -> None:
    scale = dataclasses.replace(SMOKE, seeds=(1, 2))
    cells = loads.cells(scale, (0.75,), ("ff", "tc"))
    sweep.run("loads", scale, cells, 1, None, False, tmp_path)
    path = sweep.results_path("loads", scale, tmp_path)
    made = json.loads(path.read_text())
    for r in made["runs"]:
        r["code"] = "0123456789abcdef"  # as if another version of the package had made them
    wall = {r["cell"]: r["wall_s"] for r in made["runs"]}
    # A stored result that this code does not reproduce refuses the adoption and changes nothing.
    sample = sweep.adoption_sample(sweep.sweep_runs(made))
    assert {r.policy for r in sample} == {"ff", "tc"}  # one cell of each policy, the cheapest
    assert all(wall[r.cell] == min(w for k, w in wall.items() if f"|{r.policy}|" in k) for r in sample)
    tampered = json.loads(json.dumps(made))
    victim = next(r for r in tampered["runs"] if r["cell"] == sample[0].cell)
    victim["metrics"]["active_pms"] += 1.0
    path.write_text(json.dumps(tampered))
    with pytest.raises(sweep.UserError, match="computes differently"):
        sweep.adopt("loads", scale, tmp_path, show=False)
    assert json.loads(path.read_text()) == tampered
    # Stored results this code reproduces are adopted: a rerun then runs nothing.
    path.write_text(json.dumps(made))
    checked = sweep.adopt("loads", scale, tmp_path, show=False)
    assert sorted(checked) == sorted(r.cell for r in sample)
    adopted = json.loads(path.read_text())
    assert {r["code"] for r in adopted["runs"]} == {sweep.code_id()}
    assert {r["adopted_from"] for r in adopted["runs"]} == {"0123456789abcdef"}
    assert [r["metrics"] for r in adopted["runs"]] == [r["metrics"] for r in made["runs"]]
    again = sweep.run("loads", scale, cells, 1, None, False, tmp_path)
    assert [r.wall_s for r in again.runs] == [r["wall_s"] for r in made["runs"]]  # none rerun


def test_two_commands_sharing_a_results_file_keep_each_others_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Command A (seeds 1, 2) reads the file, then command B (seed 3) stores its cell while A runs;
    # A's writes must keep B's run, not replace the file with what A read at its start.
    a, b = dataclasses.replace(SMOKE, seeds=(1, 2)), dataclasses.replace(SMOKE, seeds=(3,))
    real_run_all = engine.run_all
    other_ran = []

    def b_finishes_meanwhile(specs, **kw):
        if not other_ran:
            other_ran.append(True)
            sweep.run("loads", b, loads.cells(b, (0.75,), ("ff",)), 1, None, False, tmp_path)
        return real_run_all(specs, **kw)

    monkeypatch.setattr(engine, "run_all", b_finishes_meanwhile)
    result = sweep.run("loads", a, loads.cells(a, (0.75,), ("ff",)), 1, None, False, tmp_path)
    stored = json.loads(sweep.results_path("loads", a, tmp_path).read_text())
    assert sorted(r["seed"] for r in stored["runs"]) == [1, 2, 3]
    assert stored["scale"]["seeds"] == [1, 2, 3]
    assert sorted(r.seed for r in result.runs) == [1, 2, 3]
    assert not list(tmp_path.glob("*.tmp"))


def test_sweep_interrupted_keeps_finished_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scale = dataclasses.replace(SMOKE, seeds=(1, 2))
    cells = loads.cells(scale, (0.75,), ("ff",))
    real_run_all = engine.run_all

    def dies_after_one(specs, done=None, **kw):
        real_run_all(specs[:1], done=done, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "run_all", dies_after_one)
    with pytest.raises(KeyboardInterrupt):
        sweep.run("loads", scale, cells, 1, None, False, tmp_path)
    monkeypatch.setattr(engine, "run_all", real_run_all)
    left = json.loads(sweep.results_path("loads", scale, tmp_path).read_text())
    assert len(left["runs"]) == 1
    # The file says how long the sweep ran until the interruption: at least its finished run's time.
    assert left["wall_s"] >= round(left["runs"][0]["wall_s"], 1)
    resumed = sweep.run("loads", scale, cells, 1, None, False, tmp_path)
    assert sorted(r.seed for r in resumed.runs) == [1, 2]


def test_a_cell_killed_mid_run_resumes_from_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from origamig.sim import engine as sim_engine

    cells = loads.cells(SMOKE, (1.0,), ("origamig",))
    whole = sweep.run("loads", SMOKE, cells, 1, None, False, None)  # never stopped, no file
    real_save = sim_engine.Simulation.save

    def save_then_die(self, checkpoint, wall_s, cpu_s=0.0):
        real_save(self, checkpoint, wall_s, cpu_s)
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "CHECKPOINT_EVERY_S", 0.0)
    monkeypatch.setattr(sim_engine.Simulation, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        sweep.run("loads", SMOKE, cells, 1, None, False, tmp_path)
    monkeypatch.setattr(sim_engine.Simulation, "save", real_save)
    saved = sweep.checkpoint_path("loads", SMOKE, cells[0], tmp_path)
    assert saved.exists() and saved.parent.name == ".checkpoints"
    sweep.list_cells("loads", SMOKE, cells, tmp_path)
    assert "left (checkpoint at " in capsys.readouterr().out
    resumed = sweep.run("loads", SMOKE, cells, 1, None, False, tmp_path)
    assert not saved.exists()
    assert [r.metrics for r in resumed.runs] == [r.metrics for r in whole.runs]


def test_parse_seeds() -> None:
    assert sweep.parse_seeds("3") == (1, 2, 3)
    assert sweep.parse_seeds("3..3") == (3,)
    assert sweep.parse_seeds("6..8") == (6, 7, 8)
    assert sweep.parse_seeds("1,4,2..3") == (1, 4, 2, 3)
    for bad in ("0", "x", "2,,3", "-1..2", "3..1", "", "0..2"):
        with pytest.raises(sweep.UserError, match="--seeds"):
            sweep.parse_seeds(bad)


@pytest.mark.slow
def test_fleets_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.studies import fleets

    chosen = fleets.fleets(("h100-8x",))
    scale = dataclasses.replace(SMOKE, seeds=(1, 2))
    sw = sweep.run("fleets", scale, fleets.cells(scale, chosen), workers=1, show_progress=False)
    study = fleets.call_study(chosen, scale)
    path, md, png = fleets.write(sw, chosen, study, tmp_path)
    doc = json.loads(path.read_text())
    assert {r["col"] for r in doc["runs"]} == {"h100-8x"} and len(doc["runs"]) == 6
    assert all(r["metrics"]["active_gpus_pct"] <= 100 for r in doc["runs"])  # GPUs of 12 8-GPU servers
    out = capsys.readouterr().out
    assert "OrigaMIG would keep" in out and "TC would keep" in out
    assert md.read_text().startswith("# What-ifs on the example fleets — smoke scale: h100-8x 12 servers,")
    assert doc["scale_text"].startswith("smoke scale: h100-8x 12 servers, 2 h warm-up")
    assert png.read_bytes()[:8] == PNG_MAGIC
    calls = doc["call_study"]["h100-8x"]
    assert calls["budget"]["calls"] == len(calls["calls"]) > 0
    assert 0 < len(calls["replayed"]) <= min(fleets.REPLAY_MAX, len(calls["calls"]))
    assert all(c["gpus"] <= 4 * 8 for c in calls["calls"])  # M_max = 4 servers of 8 GPUs


def test_rivals_smoke_pairs_with_the_stored_loads_sweep(tmp_path: Path) -> None:
    stored = sweep.run(
        "loads", SMOKE, loads.cells(SMOKE, (0.75,), ("ff", "tc", "origamig")), 1, None, False, tmp_path
    )
    sweep.write_json(stored, {}, tmp_path)
    mine = sweep.run(
        "rivals",
        SMOKE,
        rivals.cells(SMOKE, (0.75,), ("dra", "fgd")),
        1,
        None,
        False,
        tmp_path,
    )
    base = rivals.paper_runs(SMOKE, tmp_path)
    assert rivals.check_pairing(mine, base) == len(SMOKE.seeds)  # FF here equals FF stored, seed by seed
    paired = sweep.Sweep("rivals", SMOKE, mine.cells, [*mine.runs, *(r for r in base if r.policy != "ff")])
    findings = rivals.analyse(paired, (0.75,))
    assert set(findings["0.75"]) == {"dra", "fgd"}
    wins, runs = findings["0.75"]["fgd"]["origamig_fewer_pms"]
    assert runs == len(SMOKE.seeds) and 0 <= wins <= runs
    rivals.print_tables(paired, (0.75,), findings)
    assert rivals.draw(paired, (0.75,), tmp_path).read_bytes()[:8] == PNG_MAGIC
    # Runs of other requests are refused: the FF control no longer matches.
    other = [dataclasses.replace(r, metrics={**r.metrics, "active_pms": -1.0}) for r in base]
    with pytest.raises(UserError, match="not paired"):
        rivals.check_pairing(mine, other)
