"""A plan for people: a rich table of its steps and a dry-run shell script of the real operations.

The plan itself (steps, cost, JSON) is `plan.py`; this module only draws it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.plan.explain import MoveNote
from origamig.plan.steps import CreateGi, DestroyGi, Migrate, Plan, PowerOff, PowerOn, Step


def text_table(title: str, columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[str]]) -> Table:
    """A table whose cells wrap (`fold`) rather than end in `…`; `columns` = (header, "left"/"right").

    Cells are plain strings: print it on a console without markup (`cli.terminal.operator_console`)
    so that ids are shown as written.
    """
    table = Table(title=title)
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


def plan_table(plan: Plan, moves: Sequence[MoveNote] = ()) -> Group:
    """A rich renderable: a table of the steps, the moves with their reasons (when given), the cost."""
    steps = text_table(
        "migration plan",
        [("#", "right"), ("op", "left"), ("vm", "left"), ("where", "left"), ("parking", "left")],
        (
            (str(n), s.op, getattr(s, "vm", ""), _where(s), "parking" if s.parking else "")
            for n, s in enumerate(plan.steps)
        ),
    )
    parts: list[Any] = [steps]
    if moves:
        why = text_table(
            "why each move",
            [("step", "right"), ("vm", "left"), ("from", "left"), ("to", "left"), ("why", "left")],
            ((str(m.step), m.vm, m.describe_from(), m.describe_to(), m.why) for m in moves),
        )
        parts.append(why)
    parts.append(Text(f"cost: {plan.cost.describe()}"))
    return Group(*parts)


def _where(s: Step) -> str:
    if isinstance(s, Migrate):
        return f"{s.from_pm} → {s.to_pm}" if s.inter_pm else f"{s.from_pm} (between GIs)"
    if isinstance(s, CreateGi | DestroyGi):
        return f"{s.pm} gpu {s.gpu} start {s.start}"
    return s.pm


_SHELL_HEADER = """\
#!/bin/sh
# origamig migration plan — DRY RUN. Each operation is printed, not run, unless ORIGAMIG_EXECUTE=1.
# Steps must run strictly in this order; a failed step stops the script (set -e).
#
# GI creation uses explicit placement: nvidia-smi mig -i <gpu> -cgi <profile-id>:<start>.
# NOTE: the '<profile>:<start>' placement syntax is taken from secondary sources (third-party tools),
# not from NVIDIA's MIG user guide. NVML's nvmlDeviceCreateGpuInstanceWithPlacement is the
# authoritative interface (NVIDIA mig-parted restores GI placements with it). The steps are those of
# docs/formats.md#plan. GIs are destroyed by their GI id, looked up from their placement in
# `nvidia-smi mig -lgi` (columns: GPU, name, profile id, instance id, start:size).
# Lines marked PLACEHOLDER stand for your hypervisor's / BMC's own commands: replace them.
set -eu

run() {
    echo "+ $*"
    if [ "${ORIGAMIG_EXECUTE:-0}" = "1" ]; then "$@"; fi
}

# on <pm> <command...>: run a command on a PM (ssh by default).
on() {
    host=$1
    shift
    run ssh "$host" "$@"
}

# gi_id <pm> <gpu> <profile-id> <start>: the GI id at that placement, from nvidia-smi mig -lgi.
gi_id() {
    if [ "${ORIGAMIG_EXECUTE:-0}" != "1" ]; then echo "<gi-id>"; return; fi
    ssh "$1" nvidia-smi mig -lgi -i "$2" | awk -v p="$3" -v s="$4" \\
        '$1 == "|" && $5 == p && index($7, s ":") == 1 { print $6; exit }'
}

# PLACEHOLDER: the hypervisor's live migration (e.g. virsh migrate --live <vm> qemu+ssh://<to>/system,
# with the VM's MIG devices remapped to the GIs created for it).
live_migrate() {
    run hypervisor-live-migrate --vm "$1" --from "$2" --to "$3"
}

# PLACEHOLDER: move a VM between GIs of its own host: the hypervisor remaps the VM's MIG devices to
# the GIs just created for it on the same host (no live migration to itself; e.g. detach and attach
# the MIG-backed vGPU devices, or a local migration that copies their memory on the host).
local_move() {
    on "$2" hypervisor-remap-gis --vm "$1"
}

# PLACEHOLDER: start a VM with the GIs created for it (e.g. virsh start <vm> on <pm>).
start_vm() {
    run hypervisor-start-vm --vm "$1" --on "$2"
}

# PLACEHOLDER: switch a PM on / off through its BMC (e.g. ipmitool -H <bmc> chassis power on|off).
power() {
    run bmc-power "$2" --pm "$1"
}
"""


def _vm_spec(dc: DataCenter, vm_id: str) -> VmSpec:
    vm = dc.vms.get(vm_id) or dc.pending.get(vm_id)
    if vm is None:
        raise KeyError(f"plan names VM {vm_id!r}, which the data center does not know")
    return vm


def _comment(text: str) -> str:
    """`text` safe inside a `#` comment: ids come from the snapshot, and a newline would end it."""
    return "".join(c if c.isprintable() else "?" for c in text)


def render_shell(steps: Sequence[Step], dc: DataCenter, moves: Sequence[MoveNote] = ()) -> str:
    """A POSIX shell script that prints (or, with ORIGAMIG_EXECUTE=1, runs) each step's commands.

    `dc` resolves the profiles of the plan's VMs (running or pending) to their nvidia-smi ids;
    `moves` (from `explain.explain`) add each move's from/to and reason as comments.
    """
    q = shlex.quote
    why = {m.step: m for m in moves}
    lines = [_SHELL_HEADER]
    for n, s in enumerate(steps):
        tag = " (parking)" if s.parking else ""
        lines.append(f"# step {n}: {s.op}{tag}")
        if n in why:
            m = why[n]
            lines.append(_comment(f"# {m.vm}: {m.describe_from()} -> {m.describe_to()}; why: {m.why}"))
        if isinstance(s, PowerOn | PowerOff):
            lines.append(f"power {q(s.pm)} {'on' if isinstance(s, PowerOn) else 'off'}")
        elif isinstance(s, CreateGi | DestroyGi):
            prof = _vm_spec(dc, s.vm).gis[s.gi]
            pid = str(prof.nvidia_smi_id) if prof.nvidia_smi_id is not None else prof.name
            last = s.start + prof.memory_slices - 1
            lines.append(_comment(f"# GI {s.gi} of {s.vm}: {prof.name} at slices {s.start}..{last}"))
            if isinstance(s, CreateGi):
                lines.append(f"on {q(s.pm)} nvidia-smi mig -i {s.gpu} -cgi {q(pid)}:{s.start}")
            else:
                gi = f'"$(gi_id {q(s.pm)} {s.gpu} {q(pid)} {s.start})"'
                lines.append(f"on {q(s.pm)} nvidia-smi mig -i {s.gpu} -gi {gi} -dci")
                lines.append(f"on {q(s.pm)} nvidia-smi mig -i {s.gpu} -gi {gi} -dgi")
        elif isinstance(s, Migrate) and not s.inter_pm:
            lines.append(f"local_move {q(s.vm)} {q(s.from_pm)}")
        elif isinstance(s, Migrate):
            lines.append(f"live_migrate {q(s.vm)} {q(s.from_pm)} {q(s.to_pm)}")
        else:
            lines.append(f"start_vm {q(s.vm)} {q(s.pm)}")
    lines.append('echo "plan complete"')
    return "\n".join(lines) + "\n"
