"""DRA — Kubernetes' own placement of MIG devices: Dynamic Resource Allocation with NVIDIA's DRA driver
and kube-scheduler's default node scoring (docs/policies.md#dra).

What Kubernetes does today for a pod (here: a VM) that claims MIG devices created on demand:
- Node: among the nodes that can take it (free CPU and RAM, every device allocatable), the one
  kube-scheduler's default scores rank first: `NodeResourcesFit` with `LeastAllocated` plus
  `NodeResourcesBalancedAllocation`, each out of 100, both on CPU and memory with weight 1, in the
  scheduler's integer arithmetic. kube-scheduler breaks ties at random; here the lowest PM wins.
  `nodes="first"` takes the first node in data-center order instead (an operator's bin-packing).
- Devices: the DRA allocator takes the claim's requests in order (not largest first) and gives each
  the first matching device in the driver's publication order: GPU by PCI bus (GPU index), then
  device name, so for one profile its lowest free permissible start. When a later request finds no
  device, it backtracks: the earlier request takes its next device, depth-first, and the first
  complete assignment wins (`backtrack=True`, the default, as Kubernetes' structured allocator does);
  `backtrack=False` keeps the first device of each request and rejects the node (the greedy order).
  No score, no moves.
Dynamic MIG in DRA serves pods, not VMs: the rows of this policy are "what pods get".
Complexity: greedy O(|M| · |GIs| · |K_j| · |starts|) bit tests per arrival; backtracking visits each
(request, occupancy of the PM's GPUs) at most once, since a dead end is remembered for the search.
"""

from __future__ import annotations

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import UserError
from origamig.policies.arrival_only import ArrivalOnlyPolicy
from origamig.policies.arrival_rule import (
    candidate_pms,
    class_gpus,
    first_fit,
    no_fit,
    profile_on,
    variants_on,
)
from origamig.policies.base import Rejection, register

MAX_NODE_SCORE = 100  # kube-scheduler's framework.MaxNodeScore
NODE_ORDERS = ("kube", "first")


def publication_order_fit(dc: DataCenter, j: int, vm: VmSpec) -> Placement | None:
    """The VM's GIs in request order, each on the lowest GPU of its class on PM j with a free
    permissible start, at the lowest such start (None when some GI finds none)."""
    gpus = class_gpus(dc, j, vm.gpu_class)
    occ = {k: dc.occupancy(j, k) for k in gpus}
    slots: list[GiSlot] = []
    for prof in vm.gis:
        slot = None
        for k in gpus:
            p = profile_on(dc.gpu_model(j, k), prof)
            if p is None:
                continue
            z = next((z for z in sorted(p.starts) if not occ[k] & p.mask(z)), None)
            if z is not None:
                occ[k] |= p.mask(z)
                slot = GiSlot(k, z)
                break
        if slot is None:
            return None
        slots.append(slot)
    return Placement(j, tuple(slots))


def backtracking_fit(dc: DataCenter, j: int, vm: VmSpec) -> Placement | None:
    """The VM's GIs in request order on PM j, depth-first over each GI's devices in publication order
    (GPU, then start): the first complete assignment, or None when no assignment exists. The first
    device of each GI is tried first, so where the greedy order (`publication_order_fit`) places the
    VM this returns its very placement."""
    gpus = class_gpus(dc, j, vm.gpu_class)
    devices: list[list[tuple[int, int, int]]] = []  # per GI: (index in gpus, start, mask), in order
    for prof in vm.gis:
        options: list[tuple[int, int, int]] = []
        for i, k in enumerate(gpus):
            p = profile_on(dc.gpu_model(j, k), prof)
            if p is not None:
                options.extend((i, z, p.mask(z)) for z in sorted(p.starts))
        if not options:
            return None
        devices.append(options)
    dead: set[tuple[int, tuple[int, ...]]] = set()  # (GI, occupancies) from which nothing completes
    chosen: list[GiSlot] = []

    def search(n: int, occ: tuple[int, ...]) -> bool:
        if n == len(devices):
            return True
        if (n, occ) in dead:
            return False
        for i, z, mask in devices[n]:
            if occ[i] & mask:
                continue
            chosen.append(GiSlot(gpus[i], z))
            if search(n + 1, (*occ[:i], occ[i] | mask, *occ[i + 1 :])):
                return True
            chosen.pop()
        dead.add((n, occ))
        return False

    if not search(0, tuple(dc.occupancy(j, k) for k in gpus)):
        return None
    return Placement(j, tuple(chosen))


def kube_node_score(dc: DataCenter, j: int, vm: VmSpec) -> int:
    """kube-scheduler's default score of node j for `vm`: LeastAllocated + BalancedAllocation on CPU
    and memory (each 0–100, integer arithmetic as the scheduler's)."""
    pm = dc.pms[j]
    shares = (  # (capacity, requested with the VM) of CPU and of memory
        (pm.cpu_m, pm.cpu_m - dc.free_cpu_m(j) + vm.cpu_m),
        (pm.ram_mb, pm.ram_mb - dc.free_ram_mb(j) + vm.ram_mb),
    )
    least = sum((c - r) * MAX_NODE_SCORE // c if c and r <= c else 0 for c, r in shares) // len(shares)
    fractions = [min(r / c, 1.0) if c else 0.0 for c, r in shares]
    std = abs(fractions[0] - fractions[1]) / 2  # the standard deviation of two fractions
    balanced = int((1 - std) * MAX_NODE_SCORE)
    return least + balanced


@register("dra")
class KubernetesDra(ArrivalOnlyPolicy):
    """DRA: kube-scheduler's default node scores, then MIG devices in publication order, with the
    structured allocator's backtracking (`backtrack`)."""

    name = "dra"

    def __init__(self, nodes: str = "kube", backtrack: bool = True) -> None:
        super().__init__()
        problems = []
        if nodes not in NODE_ORDERS:
            problems.append(f"--option nodes: {nodes!r} is not one of {', '.join(NODE_ORDERS)}")
        if not isinstance(backtrack, bool):
            problems.append(f"--option backtrack: {backtrack!r} must be true or false")
        if problems:
            raise UserError(problems)
        self.nodes = nodes
        self.devices = backtracking_fit if backtrack else publication_order_fit

    def place(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Placement | Rejection:
        if not vm.gis:
            return first_fit(dc, vm, locked)
        best: tuple[int, Placement] | None = None
        for j in candidate_pms(dc, vm, locked):
            for variant in variants_on(dc, j, vm):
                pl = self.devices(dc, j, variant)
                if pl is None:
                    continue
                if self.nodes == "first":
                    return pl
                score = kube_node_score(dc, j, vm)
                if best is None or score > best[0]:  # ascending j: ties keep the lowest
                    best = (score, pl)
                break
        return best[1] if best is not None else no_fit(dc, vm, locked)
