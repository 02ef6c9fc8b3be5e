"""Independent replay of a migration plan with the semantics of docs/formats.md#replay.

It walks the steps one by one on its own copy of the state and reports the first step that breaks
a rule, with a one-line reason naming the step's index (0-based, as in the JSON list). Capacities
(CPU, RAM, slice overlap, class, permitted start, powered-off PM) are judged by `check.py` after
every step on the PMs the step touched; the step rules themselves are written here from
docs/formats.md#replay:

- `power_on` needs an off PM; a PM is on iff it hosts a VM at the start (docs/formats.md#snapshot) or was
  switched on.
  `power_off` needs an on PM that hosts no VM and no GI.
- `create_gi` needs an on PM, a GI index of the VM, and free slices at a permitted start of the
  profile on that GPU's model; old GIs keep their slices until their `destroy_gi`.
- `migrate` needs the VM running on `from`, every GI of the VM created on `to` (with `from` = `to`,
  GIs without a new copy stay where they are, and at least one must move), and the VM's CPU/RAM
  free on `to` while it still holds them on `from` (when `to` ≠ `from`); it then releases `from`.
- `start` needs a pending VM whose GIs were all created on the PM, and its CPU/RAM there.
- `destroy_gi` needs an old GI of the VM, at exactly that place, that the VM no longer runs on.
- After the last step no created GI may be unused and no old GI left behind.

This module deliberately uses neither `executor` nor `mig`: it keeps plain dicts and asks
`check.check_placement` to judge each touched PM, with each VM's CPU/RAM residence and each GI as
a separate record (so a GI created before its VM arrives holds slices but no CPU).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec
from origamig.judge.check import check_placement, gis_at


@dataclass(frozen=True)
class ReplayResult:
    """Outcome of a replay: ok, or the first failing step (index) with a one-line reason.

    `failed_step` is None for a broken initial state and `len(steps)` for a problem found after the
    last step. `final_placement` and `powered_on` describe the state after the last step replayed.
    """

    ok: bool
    failed_step: int | None = None
    reason: str | None = None
    final_placement: Mapping[str, Placement] = field(default_factory=dict)
    powered_on: frozenset[str] = frozenset()
    steps_run: int = 0


@dataclass(frozen=True)
class _Piece:
    """What `check_placement` sees: a CPU/RAM residence (no GIs) or one GI (no CPU/RAM)."""

    id: str
    cpu_m: int
    ram_mb: int
    gis: tuple[Any, ...]


class _StepError(Exception):
    """A rule of the plan format (docs/formats.md#replay) that a step breaks."""


# A GI instance on a PM: (vm, gi index, kind) → (gpu, start); kind is run | new | old.
_GiKey = tuple[str, int, str]
_KIND = {"run": "the", "new": "new", "old": "old"}


class _State:
    """The replayed state: residences, GIs per PM, power, and which VMs run where."""

    def __init__(
        self,
        pms: Sequence[PmSpec],
        vms: Mapping[str, VmSpec],
        placement: Mapping[str, Placement],
        pending: Mapping[str, VmSpec],
        intra_pm_moves: bool = True,
    ) -> None:
        self.pms = list(pms)
        self.intra_pm_moves = intra_pm_moves
        self.index = {p.id: j for j, p in enumerate(pms)}
        self.specs: dict[str, VmSpec] = {**pending, **vms}
        self.pending = set(pending) - set(vms)
        self.run_pm: dict[str, int] = {}
        self.vms_on: list[set[str]] = [set() for _ in pms]
        self.gis: list[dict[_GiKey, GiSlot]] = [{} for _ in pms]
        for v, pl in placement.items():
            self.run_pm[v] = pl.pm
            self.vms_on[pl.pm].add(v)
            for n, slot in enumerate(pl.gis):
                self.gis[pl.pm][(v, n, "run")] = slot
        self.on = {j for j in range(len(pms)) if self.vms_on[j]}

    # --- judging ---------------------------------------------------------------------------------
    def violations(self, j: int, extra_vm: str | None = None) -> list[str]:
        """Constraint violations on PM j (optionally with `extra_vm` also resident there)."""
        view = list(self.pms)
        view[j] = replace(self.pms[j], powered_off=j not in self.on)
        pieces: dict[str, _Piece] = {}
        where: dict[str, Placement] = {}
        residents = self.vms_on[j] | ({extra_vm} if extra_vm else set())
        for v in sorted(residents):
            spec = self.specs[v]
            pieces[f"{v} (CPU/RAM)"] = _Piece(v, spec.cpu_m, spec.ram_mb, ())
            where[f"{v} (CPU/RAM)"] = Placement(j, ())
        labels: dict[str, str] = {}
        for (v, n, kind), slot in sorted(self.gis[j].items()):
            key = f"{v}#{n}#{kind}"
            labels[f"vm {key} gi 0"] = f"{_KIND[kind]} GI {n} of VM {v}"
            profile = gis_at(self.specs[v], self.pms[j], Placement(j, (slot,)))[n]
            pieces[key] = _Piece(v, 0, 0, (profile,))
            where[key] = Placement(j, (slot,))
        return [f"{labels.get(x.where, x.where)}: {x.message}" for x in check_placement(view, pieces, where)]

    def require_ok(self, j: int, extra_vm: str | None = None) -> None:
        problems = self.violations(j, extra_vm)
        if problems:
            raise _StepError(problems[0])

    def final_placement(self) -> dict[str, Placement]:
        out = {}
        for v, j in self.run_pm.items():
            slots = {n: s for (w, n, kind), s in self.gis[j].items() if w == v and kind == "run"}
            out[v] = Placement(j, tuple(slots[n] for n in sorted(slots)))
        return out


def replay_plan(
    pms: Sequence[PmSpec],
    vms: Mapping[str, VmSpec],
    placement: Mapping[str, Placement],
    pending_vms: Mapping[str, VmSpec],
    steps: Sequence[Mapping[str, Any] | Any],
    *,
    target: Mapping[str, Placement] | None = None,
    intra_pm_moves: bool = True,
) -> ReplayResult:
    """Replay `steps` (docs/formats.md#plan dicts, or `to_dict()` records) from running `vms` at `placement`.

    With `target`, the final state must also put every VM of `target` there and leave every other
    running VM where it started. Without `intra_pm_moves` (the snapshot's), a `migrate` from a PM to
    itself is refused.
    """
    state = _State(pms, vms, placement, pending_vms, intra_pm_moves)
    initial = [str(x) for x in check_placement(pms, vms, placement)]
    if initial:
        return ReplayResult(False, None, f"initial state: {initial[0]}", dict(placement), _on_ids(state))
    for i, raw in enumerate(steps):
        step = raw.to_dict() if hasattr(raw, "to_dict") else raw
        try:
            _apply(state, step)
        except _StepError as err:
            reason = f"step {i} ({_describe(step)}): {err}"
            return ReplayResult(False, i, reason, state.final_placement(), _on_ids(state), i)
    final = state.final_placement()
    problem = _leftovers(state) or (
        _target_mismatch(final, placement, target) if target is not None else None
    )
    if problem:
        return ReplayResult(
            False, len(steps), f"after the last step: {problem}", final, _on_ids(state), len(steps)
        )
    return ReplayResult(True, None, None, final, _on_ids(state), len(steps))


def _on_ids(state: _State) -> frozenset[str]:
    return frozenset(state.pms[j].id for j in state.on)


def _describe(step: Any) -> str:
    if not isinstance(step, Mapping):
        return repr(step)
    parts = [str(step.get("op", "?"))]
    for key in ("vm", "gi", "pm", "gpu", "start", "from", "to"):
        if key in step:
            parts.append(f"{key}={step[key]}")
    return " ".join(parts)


# --- well-formedness -------------------------------------------------------------------------------
# The fields of each op (docs/formats.md#plan) and their JSON types; `parking` (true/false) is optional.
STEP_FIELDS: dict[str, dict[str, type]] = {
    "power_on": {"pm": str},
    "power_off": {"pm": str},
    "create_gi": {"vm": str, "gi": int, "pm": str, "gpu": int, "start": int},
    "destroy_gi": {"vm": str, "gi": int, "pm": str, "gpu": int, "start": int},
    "migrate": {"vm": str, "from": str, "to": str},
    "start": {"vm": str, "pm": str},
}
_PM_FIELDS = ("pm", "from", "to")


def malformed_steps(
    steps: Sequence[Any], pm_ids: Collection[str], vm_ids: Collection[str], where: str = "plan"
) -> list[str]:
    """Problems that make `steps` no plan of this data center at all, one line each: a step that is
    not an object, an unknown op, a missing or mistyped field, a negative index, and — one line per
    name — each VM or PM that the data center does not have (a plan made for another snapshot).
    An empty list means every step can be replayed; the replay then judges the rules."""
    problems: list[str] = []
    unknown: dict[tuple[str, str], list[int]] = {}
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if not isinstance(step, Mapping):
            problems.append(f'{at}: expected an object with "op", got {_short(step)}')
            continue
        op = step.get("op")
        fields = STEP_FIELDS.get(op) if isinstance(op, str) else None
        if fields is None:
            problems.append(f"{at}.op: {_short(op)} is not one of {', '.join(STEP_FIELDS)}")
            continue
        for key, kind in fields.items():
            value: Any = step.get(key)
            if key not in step:
                problems.append(f"{at}.{key}: missing ({op} needs {', '.join(fields)})")
            elif isinstance(value, bool) or not isinstance(value, kind):
                problems.append(f"{at}.{key}: expected {_KIND_NAMES[kind]}, got {_short(value)}")
            elif isinstance(value, int) and value < 0:
                problems.append(f"{at}.{key}: {value} is negative")
            elif key == "vm" and value not in vm_ids:
                unknown.setdefault(("VM", str(value)), []).append(i)
            elif key in _PM_FIELDS and value not in pm_ids:
                unknown.setdefault(("PM", str(value)), []).append(i)
        if "parking" in step and not isinstance(step["parking"], bool):
            problems.append(f"{at}.parking: expected true or false, got {_short(step['parking'])}")
    for (thing, name), at_steps in unknown.items():
        more = f" and {len(at_steps) - 1} more step(s)" if len(at_steps) > 1 else ""
        problems.append(
            f"{where}[{at_steps[0]}]: unknown {thing} {name!r}, not in the snapshot (named by step "
            f"{at_steps[0]}{more}; was the plan made for another snapshot?)"
        )
    return problems


_KIND_NAMES = {str: "a string", int: "an integer"}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- step rules ------------------------------------------------------------------------------------
def _field(step: Mapping[str, Any], key: str, kind: type) -> Any:
    if key not in step:
        raise _StepError(f"missing field {key!r}")
    value = step[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _StepError(f"field {key!r} = {value!r} has the wrong type")
    return value


def _pm(state: _State, step: Mapping[str, Any], key: str = "pm", *, must_be_on: bool = True) -> int:
    name = _field(step, key, str)
    if name not in state.index:
        raise _StepError(f"unknown PM {name!r}")
    j = state.index[name]
    if must_be_on and j not in state.on:
        raise _StepError(f"PM {name} is powered off")
    return j


def _vm(state: _State, step: Mapping[str, Any]) -> str:
    v = _field(step, "vm", str)
    if v not in state.specs:
        raise _StepError(f"unknown VM {v!r}")
    return v


def _apply(state: _State, step: Any) -> None:
    if not isinstance(step, Mapping):
        raise _StepError("a step must be a JSON object")
    op = step.get("op")
    handler = _HANDLERS.get(op) if isinstance(op, str) else None
    if handler is None:
        raise _StepError(f"unknown op {op!r}")
    if "parking" in step and not isinstance(step["parking"], bool):
        raise _StepError(f"field 'parking' = {step['parking']!r} must be true or false")
    handler(state, step)


def _power_on(state: _State, step: Mapping[str, Any]) -> None:
    j = _pm(state, step, must_be_on=False)
    if j in state.on:
        raise _StepError(f"PM {state.pms[j].id} is already on")
    state.on.add(j)


def _power_off(state: _State, step: Mapping[str, Any]) -> None:
    j = _pm(state, step)
    if state.vms_on[j] or state.gis[j]:
        raise _StepError(f"PM {state.pms[j].id} still hosts VMs or GIs")
    state.on.discard(j)


def _gi_fields(state: _State, step: Mapping[str, Any]) -> tuple[str, int, int, GiSlot]:
    v = _vm(state, step)
    n = _field(step, "gi", int)
    if not 0 <= n < len(state.specs[v].gis):
        raise _StepError(f"VM {v} has no GI {n}")
    j = _pm(state, step)
    return v, n, j, GiSlot(_field(step, "gpu", int), _field(step, "start", int))


def _create_gi(state: _State, step: Mapping[str, Any]) -> None:
    v, n, j, slot = _gi_fields(state, step)
    if any((v, n, "new") in gis for gis in state.gis):
        raise _StepError(f"GI {n} of VM {v} was already created and not used yet")
    state.gis[j][(v, n, "new")] = slot
    state.require_ok(j)


def _destroy_gi(state: _State, step: Mapping[str, Any]) -> None:
    v, n, j, slot = _gi_fields(state, step)
    key = (v, n, "old")
    if state.gis[j].get(key) != slot:
        if state.gis[j].get((v, n, "run")) == slot:
            raise _StepError(f"VM {v} still runs on this GI")
        raise _StepError(f"no old GI {n} of VM {v} at gpu {slot.gpu} start {slot.start} on {state.pms[j].id}")
    del state.gis[j][key]


def _migrate(state: _State, step: Mapping[str, Any]) -> None:
    v = _vm(state, step)
    src, dst = _pm(state, step, "from"), _pm(state, step, "to")
    if state.run_pm.get(v) != src:
        raise _StepError(f"VM {v} is not running on {state.pms[src].id}")
    if not state.specs[v].migratable:
        raise _StepError(f"VM {v} is not migratable")
    if src == dst and not state.intra_pm_moves:
        raise _StepError(
            f"the platform cannot move VM {v} between GIs of {state.pms[src].id} (intra_pm_moves)"
        )
    n_gis = len(state.specs[v].gis)
    new = [n for n in range(n_gis) if (v, n, "new") in state.gis[dst]]
    misplaced = [n for n in range(n_gis) if n not in new and any((v, n, "new") in g for g in state.gis)]
    if misplaced:
        raise _StepError(f"GI {misplaced[0]} of VM {v} was created on another PM than {state.pms[dst].id}")
    if src != dst and len(new) != n_gis:
        missing = next(n for n in range(n_gis) if n not in new)
        raise _StepError(f"GI {missing} of VM {v} does not exist on {state.pms[dst].id}")
    if src == dst and not new:
        raise _StepError(f"VM {v} moves no GI")
    stale = [n for n in new if (v, n, "old") in state.gis[src]]
    if stale:
        raise _StepError(f"old GI {stale[0]} of VM {v} from an earlier move is not destroyed yet")
    if src != dst:
        state.require_ok(dst, extra_vm=v)  # the VM holds CPU/RAM at both ends during the migration
    for n in new:
        state.gis[src][(v, n, "old")] = state.gis[src].pop((v, n, "run"))
        state.gis[dst][(v, n, "run")] = state.gis[dst].pop((v, n, "new"))
    state.vms_on[src].discard(v)
    state.vms_on[dst].add(v)
    state.run_pm[v] = dst


def _start(state: _State, step: Mapping[str, Any]) -> None:
    v = _vm(state, step)
    j = _pm(state, step)
    if v not in state.pending:
        raise _StepError(f"VM {v} is not a pending VM")
    for n in range(len(state.specs[v].gis)):
        if (v, n, "new") not in state.gis[j]:
            raise _StepError(f"GI {n} of VM {v} does not exist on {state.pms[j].id}")
    gpus = state.pms[j].gpus
    classes = {gpus[state.gis[j][(v, n, "new")].gpu].gpu_class for n in range(len(state.specs[v].gis))}
    if len(classes) > 1:
        raise _StepError(f"the GIs of VM {v} are on GPUs of different classes ({', '.join(sorted(classes))})")
    state.require_ok(j, extra_vm=v)
    if classes:  # it runs as the class of its GPUs from now on
        state.specs[v] = state.specs[v].on_class(classes.pop()) or state.specs[v]
    for n in range(len(state.specs[v].gis)):
        state.gis[j][(v, n, "run")] = state.gis[j].pop((v, n, "new"))
    state.pending.discard(v)
    state.vms_on[j].add(v)
    state.run_pm[v] = j


_HANDLERS = {
    "power_on": _power_on,
    "power_off": _power_off,
    "create_gi": _create_gi,
    "migrate": _migrate,
    "start": _start,
    "destroy_gi": _destroy_gi,
}


# --- end checks ------------------------------------------------------------------------------------
def _leftovers(state: _State) -> str | None:
    for j, gis in enumerate(state.gis):
        for (v, n, kind), slot in sorted(gis.items()):
            if kind == "new":
                return f"GI {n} of VM {v} created on {state.pms[j].id} gpu {slot.gpu} but never used"
            if kind == "old":
                where = f"{state.pms[j].id} gpu {slot.gpu} start {slot.start}"
                return f"old GI {n} of VM {v} on {where} never destroyed"
    return None


def _target_mismatch(
    final: Mapping[str, Placement], start: Mapping[str, Placement], target: Mapping[str, Placement]
) -> str | None:
    for v, pl in target.items():
        if final.get(v) != pl:
            return f"VM {v} ends at {final.get(v)}, not at its target {pl}"
    for v, pl in start.items():
        if v not in target and final.get(v) != pl:
            return f"VM {v} is not in the target but moved to {final.get(v)}"
    return None
