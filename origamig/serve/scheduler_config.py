"""The `KubeSchedulerConfiguration` stanza that points kube-scheduler at the service
(`origamig serve --print-k8s-config`, docs/service.md#kubernetes-scheduler-extender).

kube-scheduler sends a pod to an extender only when the pod asks for one of its `managedResources`;
MIG devices reach pods as `nvidia.com/mig-<profile>` (NVIDIA's device plugin, mixed strategy), and
a profile name is the same on every GPU model that offers it. So the stanza lists one resource per
profile of the GPU models on the cluster's PMs — on H100s and A100-80GBs, `nvidia.com/mig-1g.10gb`
and not the A100-40GB's `nvidia.com/mig-1g.5gb`.
"""

from __future__ import annotations

from collections.abc import Sequence

from origamig.cluster.records import PmSpec
from origamig.serve.pods import MIG_RESOURCE


def resource_names(pms: Sequence[PmSpec]) -> list[str]:
    """`nvidia.com/mig-<profile>` for every profile of every GPU model on `pms`, in order of first
    appearance (models in PM order, profiles in catalog order)."""
    names: dict[str, None] = {}
    for pm in pms:
        for model in pm.gpus:
            for prof in model.profiles:
                names.setdefault(MIG_RESOURCE + prof.name, None)
    return list(names)


def scheduler_stanza(pms: Sequence[PmSpec], url: str, tls: bool, client_ca: bool) -> str:
    """The YAML of a `KubeSchedulerConfiguration` with the service as its extender at `url`."""
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "extenders:",
        f'  - urlPrefix: "{url}/k8s"',
        '    filterVerb: "filter"',
        '    prioritizeVerb: "prioritize"',
        "    weight: 5",
        "    nodeCacheCapable: true",
        "    httpTimeout: 5s",
        "    ignorable: false",
    ]
    if tls:
        lines += [
            "    enableHTTPS: true",
            "    tlsConfig:",
            '      caFile: "/etc/origamig/ca.crt"        # the CA that signed the service\'s --tls-cert',
        ]
        if client_ca:
            lines += [
                '      certFile: "/etc/origamig/scheduler.crt"  # signed by the service\'s --client-ca',
                '      keyFile: "/etc/origamig/scheduler.key"',
            ]
    lines.append("    managedResources:  # only pods asking for MIG are sent to the extender")
    lines += [f'      - name: "{name}"' for name in resource_names(pms)]
    return "\n".join(lines) + "\n"
