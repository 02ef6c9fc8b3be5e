"""Why each move of a plan: from which GPU and start to which, and what it is for.

A plan's steps say what to do; an operator about to live-migrate VMs also wants to know why. For
every `migrate` and `start` of a plan, `explain` gives the VM's GIs before and after (PM, GPU and
start slice of each GI) and one reason, the first of these that holds:

- a start: it *admits* the VM;
- a parking move (moved out of the way and again later): the VM it steps aside for — a later start,
  else the first later move, whose new GIs overlap the slices it leaves;
- the PM it leaves is switched off by the plan: *switches off pmX*;
- a GPU it leaves holds no GI afterwards: *switches off GPU k of pmX*;
- a later start (else a later move) needs the slices it leaves, or, when it leaves its PM and could
  not have stayed beside what arrives there, the cores and RAM: *admits vmY* / *makes room for vmY*;
- otherwise the free placements it gains: *raises the free placements of GPU k of pmX (CF a → b)*,
  or, if none, *part of the solver's rearrangement of pmX*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec
from origamig.plan.steps import CreateGi, Migrate, Plan, PowerOff, Start, StepOp


@dataclass(frozen=True)
class MoveNote:
    """One VM step of a plan: where its GIs were and go, and why (`step`: the index of its step)."""

    step: int
    vm: str
    op: StepOp  # migrate | start
    parking: bool
    from_pm: str | None  # None for a start
    from_gis: tuple[GiSlot, ...]
    to_pm: str
    to_gis: tuple[GiSlot, ...]
    why: str

    def to_dict(self) -> dict[str, Any]:
        where = None
        if self.from_pm is not None:
            where = {"pm": self.from_pm, "gis": [{"gpu": g.gpu, "start": g.start} for g in self.from_gis]}
        return {
            "step": self.step,
            "vm": self.vm,
            "op": self.op,
            "parking": self.parking,
            "from": where,
            "to": {"pm": self.to_pm, "gis": [{"gpu": g.gpu, "start": g.start} for g in self.to_gis]},
            "why": self.why,
        }

    def describe_from(self) -> str:
        return "—" if self.from_pm is None else _at(self.from_pm, self.from_gis)

    def describe_to(self) -> str:
        return _at(self.to_pm, self.to_gis)


def _at(pm: str, gis: tuple[GiSlot, ...]) -> str:
    return f"{pm} " + " + ".join(f"gpu{g.gpu}@{g.start}" for g in gis)


@dataclass(frozen=True)
class _Move:
    step: int
    vm: str
    op: StepOp
    parking: bool
    src: int | None
    old: tuple[GiSlot, ...]
    dst: int
    new: tuple[GiSlot, ...]


def explain(dc: DataCenter, plan: Plan, after: DataCenter) -> tuple[MoveNote, ...]:
    """A note per migrate/start step of `plan`, which runs from `dc`'s state (not changed) to
    `after` (`DataCenter.with_placement` of its final placement)."""
    specs: dict[str, VmSpec] = {**dc.pending, **dc.vms}
    moves = _walk(dc, plan)
    switched_off = {dc.index[s.pm] for s in plan.steps if isinstance(s, PowerOff)}
    names = [pm.id for pm in dc.pms]
    notes = []
    for n, m in enumerate(moves):
        why = _why(m, moves[n + 1 :], specs, names, switched_off, dc, after)
        notes.append(
            MoveNote(
                m.step,
                m.vm,
                m.op,
                m.parking,
                None if m.src is None else names[m.src],
                m.old,
                names[m.dst],
                m.new,
                why,
            )
        )
    return tuple(notes)


def _walk(dc: DataCenter, plan: Plan) -> list[_Move]:
    """Each VM's GIs before and after each of its migrate/start steps."""
    where: dict[str, tuple[int, tuple[GiSlot, ...]]] = {}  # where the plan has put a VM so far
    created: dict[str, dict[int, GiSlot]] = {}
    out: list[_Move] = []
    for i, s in enumerate(plan.steps):
        if isinstance(s, CreateGi):
            created.setdefault(s.vm, {})[s.gi] = GiSlot(s.gpu, s.start)
        elif isinstance(s, Migrate):
            if s.vm not in where:  # its first step: it moves from where it runs
                where[s.vm] = (dc.placement[s.vm].pm, tuple(dc.placement[s.vm].gis))
            src, old = where[s.vm]
            fresh = created.pop(s.vm, {})
            new = tuple(fresh.get(n, slot) for n, slot in enumerate(old))
            dst = dc.index[s.to_pm]
            out.append(_Move(i, s.vm, StepOp.MIGRATE, s.parking, src, old, dst, new))
            where[s.vm] = (dst, new)
        elif isinstance(s, Start):
            fresh = created.pop(s.vm, {})
            new = tuple(fresh[n] for n in sorted(fresh))
            dst = dc.index[s.pm]
            out.append(_Move(i, s.vm, StepOp.START, s.parking, None, (), dst, new))
            where[s.vm] = (dst, new)
    return out


def _fits_beside_end(after: DataCenter, j: int, vm: VmSpec) -> bool:
    """Would `vm`'s cores and RAM still fit PM j beside what the plan leaves there?"""
    return after.free_cpu_m(j) >= vm.cpu_m and after.free_ram_mb(j) >= vm.ram_mb


def _slices(
    specs: Mapping[str, VmSpec], vm: str, pm: int, gis: tuple[GiSlot, ...], pms: Sequence[PmSpec]
) -> set[tuple[int, int, int]]:
    """The (PM, GPU, slice) a VM's GIs hold at `gis` on PM `pm` (as the model of its GPUs knows them)."""
    out: set[tuple[int, int, int]] = set()
    for prof, slot in zip(specs[vm].placed_on(pms[pm], Placement(pm, gis)).gis, gis, strict=True):
        out |= {(pm, slot.gpu, u) for u in range(slot.start, slot.start + prof.memory_slices)}
    return out


def _why(
    m: _Move,
    later: list[_Move],
    specs: Mapping[str, VmSpec],
    names: list[str],
    switched_off: set[int],
    before: DataCenter,
    after: DataCenter,
) -> str:
    if m.op == StepOp.START:
        return f"admits {m.vm}"
    assert m.src is not None
    pms = before.pms
    freed = _slices(specs, m.vm, m.src, m.old, pms) - _slices(specs, m.vm, m.dst, m.new, pms)
    helped = [u for u in later if u.vm != m.vm and _slices(specs, u.vm, u.dst, u.new, pms) & freed]
    if not helped and m.src != m.dst and not _fits_beside_end(after, m.src, specs[m.vm]):
        # It frees cores and RAM that VMs arriving on its PM need (it could not stay beside them).
        helped = [u for u in later if u.vm != m.vm and u.dst == m.src and u.src != m.src]
    beneficiary = next((u for u in helped if u.op == StepOp.START), helped[0] if helped else None)
    src = names[m.src]
    if m.parking:
        aside = f" for {beneficiary.vm}" if beneficiary is not None else ""
        return f"parking: steps aside{aside}, moved again later"
    if m.src != m.dst and m.src in switched_off:
        return f"switches off {src}"
    emptied = sorted(
        {g.gpu for g in m.old if before.gpu_active(m.src, g.gpu) and not after.gpu_active(m.src, g.gpu)}
    )
    if emptied:
        return " and ".join(f"switches off GPU {k} of {src}" for k in emptied)
    if beneficiary is not None:
        if beneficiary.op == StepOp.START:
            return f"admits {beneficiary.vm} (makes room for it)"
        return f"makes room for {beneficiary.vm}"
    gains = [
        (after.cf(m.src, k) - before.cf(m.src, k), k)
        for k in sorted({g.gpu for g in m.old})
        if after.cf(m.src, k) > before.cf(m.src, k)
    ]
    if gains:
        _, k = max(gains)
        cf = f"CF {before.cf(m.src, k)} → {after.cf(m.src, k)}"
        return f"raises the free placements of GPU {k} of {src} ({cf})"
    return f"part of the solver's rearrangement of {src}"
