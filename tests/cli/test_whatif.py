"""`origamig report --what-if`: paired differences against FF in numbers and words, a table, a figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

from origamig.study.results import runs_document
from origamig.study.whatif import digits_for, markdown, sentence, what_ifs
from tests.cli_helpers import run_main

FLEET = {"name": "h100-8x", "kinds": []}


def run(policy: str, seed: int, pms: float, migrations: float, energy: float, fleet=FLEET) -> dict:
    metrics = {
        "acceptance": 0.99,
        "active_pms": pms,
        "active_gpus": 8 * pms,
        "energy_mwh": energy,
        "energy_kwh_per_gpu_hour": 0.4,
        "migrations_per_hour": migrations,
        "migrated_gb_per_hour": 100 * migrations,
    }
    config = {"variant": "default", "load": 0.85, "pms": 32, "measure_s": 24 * 3600.0, "fleet": fleet}
    return {"policy": policy, "seed": seed, "metrics": metrics, "config": config}


def document() -> dict:
    runs = []
    for seed, (ff, ours) in enumerate([(30.0, 21.0), (32.0, 22.0), (31.0, 23.0)], start=1):
        runs.append(run("ff", seed, ff, 0.0, 2.0))
        runs.append(run("origamig", seed, ours, 6.3, 1.5))
        runs.append(run("ff", seed, ff + 1, 0.0, 2.0, fleet={"name": "paper", "kinds": []}))
    return runs_document(runs, "ff")


def test_what_if_pairs_by_seed_and_says_it_in_words() -> None:
    scenarios = what_ifs(document())
    assert [w.fleet for w in scenarios] == ["h100-8x", "paper"]  # fleets are never mixed
    w = scenarios[0]
    assert w.policies == ("ff", "origamig") and w.measure_h == 24
    diffs = [21 - 30, 22 - 32, 23 - 31]  # −9, −10, −8
    half = 4.303 * 1.0 / math.sqrt(3)  # t(0.975, 2) · sd / √n
    stats = w.paired["origamig"]["active_pms"]
    assert stats.mean == sum(diffs) / 3 and stats.ci95 is not None and abs(stats.ci95 - half) < 1e-3
    text = sentence(w, "origamig")
    assert text.startswith("OrigaMIG would keep 9.0 ± 2.5 fewer servers on (-29%)")
    assert "; 72.0 ± 19.9 fewer GPUs active (-29%);" in text
    assert "use 0.50 ± 0.00 MWh less energy over the 24 h measured (≈ 182 MWh a year), as much per" in text
    assert text.endswith("at 6.3 ± 0.0 migrations per hour (630 ± 0 GB moved per hour) — against FF.")
    table = markdown(scenarios)
    assert "| Active servers | 31.0 ± 2.5 | 22.0 ± 2.5 | -9.0 ± 2.5 |" in table
    assert "### What-if on fleet h100-8x: 32 servers, load 0.85, 3 seeds, 24 h measured" in table


def test_digits_grow_until_two_significant_figures_show() -> None:
    assert digits_for(12.3, 1) == 1 and digits_for(0.42, 1) == 2 and digits_for(0.0042, 2) == 4
    assert digits_for(0.0, 2) == 2 and digits_for(1e-9, 1) == 4


def test_report_what_if_writes_table_and_figure(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(document()))
    png, md = tmp_path / "whatif.png", tmp_path / "whatif.md"
    code, out, err = run_main(["report", str(results), "--what-if", "--png", str(png), "--markdown", str(md)])
    assert code == 0, err
    assert png.stat().st_size > 10_000 and md.read_text() == out
    assert "OrigaMIG would keep 9.0 ± 2.5 fewer servers on" in out
    code, _, err = run_main(["report", str(tmp_path / "none.json"), "--what-if"])
    assert code == 2 and err.strip() == f"error: {tmp_path / 'none.json'}: no such file"
