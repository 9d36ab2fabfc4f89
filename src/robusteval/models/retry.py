"""One backoff shared by every request a backend has in flight, and each request's retry budget in seconds.

When a server goes away, eight requests in flight fail together. Retrying each on its own clock burns eight
attempts per round and ends the batch as soon as the unluckiest one has drawn short waits. Here the first
failure of a round sets "server unavailable until T" for all of them; at T one request (the probe) is sent
while the others wait for its outcome: a success re-opens the gate for everyone at once, a failure starts the
next, longer round. ``Retry-After`` sets T as the server asks. A request gives up only when its own time budget
(``retry_for`` seconds from its first attempt) is spent: it then makes one last attempt of its own, so an
outage fails a batch about ``retry_for`` seconds after it began, however the rounds fall.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from robusteval.progress import wait_over


class Aborted(Exception):
    """Another request of the same batch failed for good (or the user pressed Ctrl-C); stop retrying this one."""


@dataclass(frozen=True)
class Ticket:
    """Permission to send one attempt: the round it was sent in, and whether it is that round's probe."""

    epoch: int
    probe: bool


class SharedBackoff:
    """The backoff state of one backend (thread-safe). Attempts go ``admit`` -> send -> ``succeeded``/``failed``.

    Round ``n`` waits a uniform draw in ``[c/2, c]`` with ``c = min(cap, base * 2**(n-1))`` (jittered so that
    several clients of one server drift apart, but never much shorter than the schedule).
    """

    def __init__(self, base: float, cap: float, rng: random.Random | None = None) -> None:
        self._base, self._cap = base, cap
        self._rng = rng or random.Random()
        self._cond = threading.Condition()
        self._failures = 0  # failed rounds since the last success
        self._until = 0.0  # time.monotonic() before which nobody sends (but a request out of budget)
        self._epoch = 0  # bumped by every failed round and every recovery
        self._probing = False

    @property
    def rounds(self) -> int:
        """Failed rounds since the server last answered."""
        return self._failures

    def admit(self, abort: threading.Event, deadline: float) -> Ticket:
        """Wait until a request may be sent: at once while the server answers; else at T as the round's probe,
        or when the probe succeeded, or at ``deadline`` (this request's last attempt). Raises :class:`Aborted`."""
        with self._cond:
            while True:
                if abort.is_set():
                    raise Aborted()
                now = time.monotonic()
                if self._failures == 0:
                    return Ticket(self._epoch, probe=False)
                if not self._probing and now >= self._until:
                    self._probing = True
                    return Ticket(self._epoch, probe=True)
                if now >= deadline:
                    return Ticket(self._epoch, probe=False)
                wake = deadline if self._probing else min(self._until, deadline)
                self._cond.wait(timeout=wake - now)  # or earlier: a probe's outcome, an abort (wake())

    def succeeded(self, ticket: Ticket) -> None:
        """The server answered (a success, or an error that is no outage): everyone may send again. A request
        sent before the latest failed round says nothing about the server now, unless it was the probe."""
        with self._cond:
            if ticket.probe:
                self._probing = False
            recovered = bool((ticket.probe or ticket.epoch == self._epoch) and self._failures)
            if recovered:
                self._failures, self._until = 0, 0.0
                self._epoch += 1
            self._cond.notify_all()
        if recovered:  # the outage is over: the progress line stops saying "retry N in ..."
            wait_over()

    def failed(self, ticket: Ticket, retry_after: float | None = None) -> float | None:
        """A transient failure (connection refused, timeout, 429/5xx). Returns the wait when it starts a new
        round (the first failure seen since the last round began, or the probe's), else None; a ``Retry-After``
        (seconds, already capped by the caller) holds for every request."""
        with self._cond:
            if ticket.probe:
                self._probing = False
            now = time.monotonic()
            delay: float | None = None
            if ticket.probe or ticket.epoch == self._epoch:
                self._failures += 1
                limit = min(self._cap, self._base * 2 ** (self._failures - 1))
                delay = retry_after if retry_after is not None else self._rng.uniform(limit / 2, limit)
                self._until = max(self._until, now + delay)
                self._epoch += 1
            elif retry_after is not None:
                self._until = max(self._until, now + retry_after)
            self._cond.notify_all()
            return delay

    def abandon(self, ticket: Ticket) -> None:
        """The attempt ended without an answer or a failure to count (Ctrl-C, a bug): another may probe."""
        with self._cond:
            if ticket.probe:
                self._probing = False
            self._cond.notify_all()

    def wake(self) -> None:
        """Wake every waiting request so that it sees its batch's abort at once."""
        with self._cond:
            self._cond.notify_all()
