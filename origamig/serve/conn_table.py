"""The service's open connections — and TLS handshakes under way — counted against two caps: all of
them (`max_total`, below the open-file limit) and those of one client address (`max_per_address`),
so that one client, or a crowd, cannot keep a health probe or kube-scheduler out.

A newcomer beyond a cap closes members that may be closed (`Standing`): first those whose answer
waits for a client that does not read it, then those that pipeline requests (no ordinary client
does; one is always busy), then the idle ones (a keep-alive connection, a handshake), the longest
idle first. Beyond its address's cap, a client's own connections go even while an answer is being
made for them: it is over its share. Beyond the total cap with nothing else to close, the address
holding the most connections loses one, if it holds more than the newcomer's; otherwise the
newcomer is closed.
"""

from __future__ import annotations

from collections import defaultdict
from enum import IntEnum
from typing import Protocol


class Standing(IntEnum):
    """How a member stands when room is made: the lowest are closed first; `BUSY` ones only as a
    client's own beyond its share (or the richest address's)."""

    STALLED = 0  # its client does not take the answer written for it
    PIPELINING = 1  # more requests of it wait unread behind the one being answered
    IDLE = 2  # nothing to do: waits for a request, or for its handshake
    BUSY = 3  # an answer is being made for it


class Member(Protocol):
    """A connection or a handshake, as the table sees it."""

    address: str  # the client's address (without the port)
    idle_since: float  # monotonic time it last did something the service waited for

    def standing(self) -> Standing:
        """How it stands now."""
        ...

    def evict(self) -> None:
        """Close it now."""
        ...


class ConnectionTable:
    """The members, in all and by client address, within their caps."""

    def __init__(self, max_total: int, max_per_address: int) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.members: set[Member] = set()
        self.by_address: defaultdict[str, set[Member]] = defaultdict(set)

    def __len__(self) -> int:
        return len(self.members)

    def join(self, member: Member) -> bool:
        """Count `member` in, making room if need be; False when it was closed for want of room."""
        self.members.add(member)
        group = self.by_address[member.address]
        group.add(member)
        self._trim(group, self.max_per_address, member)
        if member in self.members:
            self._trim(self.members, self.max_total, member)
        return member in self.members

    def leave(self, member: Member) -> None:
        self.members.discard(member)
        group = self.by_address.get(member.address)
        if group is not None:
            group.discard(member)
            if not group:
                del self.by_address[member.address]

    def _trim(self, group: set[Member], cap: int, newcomer: Member) -> None:
        """Close members of `group` (all, or one address's) until it is within `cap`."""
        excess = len(group) - cap
        if excess <= 0:
            return
        others = sorted((m for m in group if m is not newcomer), key=_victim_order)
        if group is self.members:  # across addresses: busy members only from a richer address
            others = [m for m in others if m.standing() < Standing.BUSY or self._richer(m, newcomer)]
        for other in others[:excess]:
            other.evict()
            self.leave(other)
        if len(group) > cap:
            newcomer.evict()
            self.leave(newcomer)

    def _richer(self, member: Member, newcomer: Member) -> bool:
        """`member`'s address holds the most connections, and more than `newcomer`'s."""
        most = max(len(g) for g in self.by_address.values())
        mine = len(self.by_address[member.address])
        return mine == most and mine > len(self.by_address[newcomer.address])


def _victim_order(member: Member) -> tuple[Standing, float]:
    """By standing, then the longest-idle first."""
    return member.standing(), member.idle_since
