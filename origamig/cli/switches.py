"""Option values several commands share: an explicit true or false (`--intra-pm-moves false`)."""

from __future__ import annotations

from enum import StrEnum


class Switch(StrEnum):
    """An explicit true or false, for options that otherwise follow a setting of the snapshot."""

    TRUE = "true"
    FALSE = "false"


INTRA_PM_HELP = (
    "false: the platform moves VMs only between servers (KubeVirt), so no VM moves between GIs of one"
    " server; default: the snapshot's intra_pm_moves (true if absent)."
)
