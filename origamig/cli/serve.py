"""`origamig serve`: OrigaMIG online, as an HTTP service beside a scheduler (docs/service.md)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from origamig.cli.arguments import parse_options
from origamig.cli.switches import INTRA_PM_HELP, Switch
from origamig.errors import UserError, require_extra
from origamig.serve.opening import DEFAULT_STEP_TIMEOUT_S, POLICY
from origamig.serve.platform import Platform
from origamig.serve.run import (
    DEFAULT_LISTEN,
    REQUEST_TIMEOUT_S,
    ServeConfig,
    parse_listen,
    read_token,
    serve,
)
from origamig.serve.scheduler_config import DEFAULT_CA_FILE, DEFAULT_CERT_FILE, DEFAULT_KEY_FILE, SchedulerTls


class OnOff(StrEnum):
    ON = "on"
    OFF = "off"


def serve_command(
    state: Annotated[Path, typer.Option("--state", help="SQLite state file (created and seeded when new).")],
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="File holding the bearer token every client sends.")
    ] = None,
    seed: Annotated[
        Path | None,
        typer.Option("--from", help="Snapshot JSON that seeds a new state (docs/formats.md#snapshot)."),
    ] = None,
    listen: Annotated[str, typer.Option("--listen", help="HOST:PORT to listen on.")] = DEFAULT_LISTEN,
    clock: Annotated[
        str,
        typer.Option(
            "--clock",
            help="'wall' (the optimizer checks on its own) or 'replay' (the client sets the simulated "
            "time with POST /v1/clock, to replay a request log as the simulator would).",
        ),
    ] = "wall",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-o", help="OrigaMIG policy option KEY=VALUE (repeatable), e.g. arrival=ff."
        ),
    ] = None,
    optimizer: Annotated[
        OnOff,
        typer.Option(
            "--optimizer",
            help="off: no plans, only the arrival rule and the extender (an arrival that fits nowhere "
            "is refused with 422).",
        ),
    ] = OnOff.ON,
    step_timeout: Annotated[
        float,
        typer.Option(
            "--step-timeout",
            min=1.0,
            help="Seconds a running plan waits for its next step to be acknowledged; then it is aborted "
            "and its servers are free.",
        ),
    ] = DEFAULT_STEP_TIMEOUT_S,
    intra_pm_moves: Annotated[Switch | None, typer.Option("--intra-pm-moves", help=INTRA_PM_HELP)] = None,
    controller: Annotated[
        str,
        typer.Option(
            "--controller",
            help="Who carries out the plans' steps: 'platform' (your controller reads ready steps and "
            "acknowledges each) or 'simulated' (the service itself, each move at its modeled end: a "
            "dry run, and what a replay compares with the simulator).",
        ),
    ] = "platform",
    request_timeout: Annotated[
        float,
        typer.Option(
            "--request-timeout",
            min=0.1,
            help="Seconds a connection has to deliver a whole request (from connecting or from its last "
            "answer), and to take each answer; an idle or slow one, or one that does not read, is closed "
            "then.",
        ),
    ] = REQUEST_TIMEOUT_S,
    backup: Annotated[
        Path | None,
        typer.Option(
            "--backup",
            help="Copy --state consistently to this new file and exit; the state and its -wal are not "
            "changed, whether a server runs on it, stopped or crashed.",
        ),
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option("--tls-cert", help="Serve HTTPS with this certificate (PEM).")
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option("--tls-key", help="The certificate's private key (PEM).")
    ] = None,
    client_ca: Annotated[
        Path | None,
        typer.Option(
            "--client-ca",
            help="CA (PEM) whose client certificates authenticate as the token does (kube-scheduler's "
            "tlsConfig).",
        ),
    ] = None,
    print_k8s_config: Annotated[
        bool,
        typer.Option(
            "--print-k8s-config",
            help="Print the KubeSchedulerConfiguration stanza for the state's (or --from's) GPUs and exit.",
        ),
    ] = False,
    advertise_url: Annotated[
        str | None,
        typer.Option(
            "--advertise-url",
            help="The URL kube-scheduler dials (e.g. https://origamig.kube-system.svc:8787), for "
            "--print-k8s-config; default: the --listen address (a wildcard one is warned about).",
        ),
    ] = None,
    scheduler_ca: Annotated[
        str,
        typer.Option("--scheduler-ca", help="For --print-k8s-config: tlsConfig.caFile (a path on its host)."),
    ] = DEFAULT_CA_FILE,
    scheduler_cert: Annotated[
        str,
        typer.Option(
            "--scheduler-cert", help="For --print-k8s-config: tlsConfig.certFile (kube-scheduler's cert)."
        ),
    ] = DEFAULT_CERT_FILE,
    scheduler_key: Annotated[
        str,
        typer.Option("--scheduler-key", help="For --print-k8s-config: tlsConfig.keyFile."),
    ] = DEFAULT_KEY_FILE,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            "--kubeconfig",
            help="Kubeconfig for the Kubernetes API that POST /k8s/bind creates Bindings through; default: "
            "the in-cluster service account when the service runs in a pod.",
        ),
    ] = None,
    platform: Annotated[
        Platform | None,
        typer.Option(
            "--platform",
            help="kubevirt: VMs KubeVirt cannot live-migrate (several GIs; H100/H200 SR-IOV vGPUs) are never "
            'moved or parked; generic: every VM may move unless marked "migratable": false. Default: the '
            "seed's platform field, else generic.",
        ),
    ] = None,
    access_log: Annotated[
        bool,
        typer.Option("--access-log", help="Log one JSON line per request (method, path, status, seconds)."),
    ] = False,
) -> None:
    """Serve OrigaMIG online: VM requests, the live snapshot, and a Kubernetes scheduler extender."""
    if clock not in ("wall", "replay"):
        raise UserError(f"--clock: {clock!r} is not 'wall' or 'replay'")
    if controller not in ("platform", "simulated"):
        raise UserError(f"--controller: {controller!r} is not 'platform' or 'simulated'")
    host, port = parse_listen(listen)
    if backup is not None:
        _backup(state, backup)
        return
    if print_k8s_config:
        tls_files = SchedulerTls(scheduler_ca, scheduler_cert, scheduler_key, client_ca is not None)
        _print_k8s_config(state, seed, host, port, tls_files if tls_cert is not None else None, advertise_url)
        return
    for module in ("starlette", "uvicorn", "prometheus_client"):
        require_extra(module, "serve", "origamig serve")
    from origamig.serve.tls import tls_options

    if token_file is None:
        raise UserError("--token-file: required (the bearer token every client sends)")
    token = read_token(token_file)
    tls = tls_options(tls_cert, tls_key, client_ca)
    options = parse_options(option or [], [POLICY])
    intra = None if intra_pm_moves is None else intra_pm_moves is Switch.TRUE
    config = ServeConfig(
        state,
        seed,
        host,
        port,
        token,
        options,
        clock,
        step_timeout,
        optimizer is OnOff.ON,
        intra,
        tls,
        request_timeout,
        controller,
        platform=platform,
        kubeconfig=kubeconfig,
        access_log=access_log,
    )
    serve(config)


def _backup(state: Path, target: Path) -> None:
    """A consistent copy of the state in a new file (SQLite's online backup), checked by opening it.
    Neither the state nor its -wal changes, whether a server runs on it, stopped or crashed."""
    from origamig.serve.store import Store

    with Store.reading(state) as store:
        if store.copy_problem is not None:
            typer.echo(f"warning: --state: {store.path}: {store.copy_problem[0]}", err=True)
        store.backup(target)
    with Store.reading(target) as copy:
        vms = len(copy.document()["vms"])
    typer.echo(f"{target}: a copy of {state} ({vms} VMs)")


def _print_k8s_config(
    state: Path, seed: Path | None, host: str, port: int, tls: SchedulerTls | None, advertise: str | None
) -> None:
    from origamig.serve.scheduler_config import advertised_url, scheduler_stanza
    from origamig.serve.store import Store
    from origamig.snapshot.document import load_snapshot, parse_snapshot

    if state.exists():
        with Store.reading(state) as store:
            pms = parse_snapshot({**store.document(), "vms": []}).pms
    elif seed is not None:
        pms = load_snapshot(seed).pms
    else:
        raise UserError(f"--print-k8s-config: {state} holds no state yet: give --from SNAPSHOT.json")
    url, warning = advertised_url(host, port, tls is not None, advertise)
    if warning is not None:
        typer.echo(warning, err=True)
    typer.echo(scheduler_stanza(pms, url, tls), nl=False)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
