"""The `KubeSchedulerConfiguration` stanza that points kube-scheduler at the service
(`origamig serve --print-k8s-config`, docs/service.md#kubernetes-scheduler-extender).

kube-scheduler sends a pod to an extender only when the pod asks for one of its `managedResources`.
MIG devices reach pods as `nvidia.com/mig-<profile>` (NVIDIA's device plugin, mixed strategy) — a
profile name is the same on every GPU model that offers it, so the stanza lists one resource per
profile of the GPU models on the cluster's PMs (on H100s and A100-80GBs `nvidia.com/mig-1g.10gb`, not
the A100-40GB's `nvidia.com/mig-1g.5gb`) — and KubeVirt VMs as MIG-backed vGPU types
(`nvidia.com/NVIDIA_H100-3-40C`, `serve/vgpu.py`), listed for the same models. The service binds the
pods it judges (`bindVerb`, `serve/bind.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from origamig.cluster.records import PmSpec
from origamig.errors import UserError
from origamig.serve.pods import MIG_RESOURCE
from origamig.serve.vgpu import fleet_resource_names

# Where kube-scheduler's certificates are, when `serve` is not told (the admin edits them).
DEFAULT_CA_FILE = "/etc/origamig/ca.crt"
DEFAULT_CERT_FILE = "/etc/origamig/scheduler.crt"
DEFAULT_KEY_FILE = "/etc/origamig/scheduler.key"


@dataclass(frozen=True)
class SchedulerTls:
    """The files kube-scheduler reads for HTTPS to the service, as paths on kube-scheduler's host: the
    CA that signed the service's certificate and, with a client CA, its own certificate and key."""

    ca_file: str = DEFAULT_CA_FILE
    cert_file: str = DEFAULT_CERT_FILE
    key_file: str = DEFAULT_KEY_FILE
    client_ca: bool = False  # the service takes client certificates (--client-ca)


def resource_names(pms: Sequence[PmSpec]) -> list[str]:
    """`nvidia.com/mig-<profile>` for every profile of every GPU model on `pms`, in order of first
    appearance (models in PM order, profiles in catalog order), then the vGPU types of those models."""
    names: dict[str, None] = {}
    models: dict[str, None] = {}
    for pm in pms:
        for model in pm.gpus:
            models.setdefault(model.name, None)
            for prof in model.profiles:
                names.setdefault(MIG_RESOURCE + prof.name, None)
    return list(names) + fleet_resource_names(models)


def scheduler_stanza(pms: Sequence[PmSpec], url: str, tls: SchedulerTls | None) -> str:
    """The YAML of a `KubeSchedulerConfiguration` with the service as its extender at `url` (HTTPS
    with `tls`)."""
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "extenders:",
        f'  - urlPrefix: "{url}/k8s"',
        '    filterVerb: "filter"',
        '    prioritizeVerb: "prioritize"',
        '    bindVerb: "bind"  # the service records the GIs it chose and creates the Binding',
        "    weight: 5",
        "    nodeCacheCapable: true",
        "    httpTimeout: 5s",
        "    ignorable: false",
    ]
    if tls is not None:
        lines += [
            "    enableHTTPS: true",
            "    tlsConfig:",
            f'      caFile: "{tls.ca_file}"  # the CA that signed the service\'s --tls-cert',
        ]
        if tls.client_ca:
            lines += [
                f'      certFile: "{tls.cert_file}"  # signed by the service\'s --client-ca',
                f'      keyFile: "{tls.key_file}"',
            ]
    lines.append("    managedResources:  # only pods asking for MIG or a MIG-backed vGPU are sent here")
    lines += [f'      - name: "{name}"' for name in resource_names(pms)]
    return "\n".join(lines) + "\n"


WILDCARDS = ("0.0.0.0", "::", "")


def advertised_url(host: str, port: int, https: bool, advertise: str | None) -> tuple[str, str | None]:
    """The URL kube-scheduler dials: `advertise` (`--advertise-url`, checked) or the listen address;
    and a warning when the listen address is a wildcard nobody can dial."""
    if advertise is not None:
        parsed = urlsplit(advertise)
        if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.query or parsed.fragment:
            raise UserError(
                f"--advertise-url: {advertise!r} is not http(s)://HOST[:PORT] (where kube-scheduler dials)"
            )
        try:
            parsed.port  # noqa: B018 — raises on a port that is not a number in range
        except ValueError:
            raise UserError(f"--advertise-url: {advertise!r} has a bad port") from None
        warning = None
        if (parsed.scheme == "https") != https:
            warning = (
                f"warning: --advertise-url is {parsed.scheme} but the service serves "
                f"{'HTTPS' if https else 'plain HTTP'} (fine behind a proxy that changes it)"
            )
        return advertise.rstrip("/"), warning
    scheme = "https" if https else "http"
    shown = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{shown}:{port}"
    if host in WILDCARDS:
        return url, (
            f"warning: --listen {shown}:{port} is a wildcard address: kube-scheduler cannot dial it (and it "
            f"matches no certificate); give --advertise-url {scheme}://<the service's DNS name>:{port}"
        )
    return url, None
