"""The shared backoff's coordination on its own: eight threads against an outage of a known length (the HTTP
side is tested against real servers in test_openai_backend.py and test_openai_outage.py)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from robusteval.models.retry import Aborted, SharedBackoff


def test_requests_in_flight_wait_out_an_outage_together() -> None:
    backoff = SharedBackoff(0.02, 0.1, rng=random.Random(0))
    up_at = time.monotonic() + 0.6
    sends: list[tuple[float, bool]] = []
    lock = threading.Lock()
    abort = threading.Event()

    def request() -> None:
        deadline = time.monotonic() + 30
        while True:
            ticket = backoff.admit(abort, deadline)
            now = time.monotonic()
            ok = now >= up_at
            with lock:
                sends.append((now, ticket.probe))
            if ok:
                backoff.succeeded(ticket)
                return
            backoff.failed(ticket)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    down = [(t, probe) for t, probe in sends if t < up_at]
    # While down: at most each request's first attempt, then one probe per round (rounds of 10-100 ms in 0.6 s),
    # where requests retrying on their own would each send one per round.
    probes = sum(probe for _, probe in down)
    assert len(down) - probes <= 8 and 3 <= probes <= 0.6 / 0.01
    assert backoff.rounds == 0  # the success re-opened the gate
    # Back up: everyone is through within one round (at most backoff_max) of the server's return.
    assert max(t for t, _ in sends) - up_at < 0.5  # (0.1 s plus scheduling on a loaded machine)


def test_waiting_requests_stop_at_once_on_abort() -> None:
    backoff = SharedBackoff(10.0, 10.0)
    first = backoff.admit(threading.Event(), time.monotonic() + 60)
    backoff.failed(first)  # the server is "unavailable" for the next 5-10 s
    abort = threading.Event()
    outcome: list[str] = []

    def wait() -> None:
        try:
            backoff.admit(abort, time.monotonic() + 60)
            outcome.append("admitted")
        except Aborted:
            outcome.append("aborted")

    threads = [threading.Thread(target=wait) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    began = time.monotonic()
    abort.set()
    backoff.wake()
    for thread in threads:
        thread.join(timeout=5)
    assert outcome == ["aborted"] * 4 and time.monotonic() - began < 1


def test_a_request_out_of_budget_makes_its_last_attempt_at_its_deadline() -> None:
    backoff = SharedBackoff(30.0, 30.0)
    backoff.failed(backoff.admit(threading.Event(), time.monotonic() + 60))  # unavailable for 15-30 s
    began = time.monotonic()
    ticket = backoff.admit(threading.Event(), began + 0.3)
    assert 0.29 <= time.monotonic() - began < 1.5 and not ticket.probe
    with pytest.raises(Aborted):
        aborted = threading.Event()
        aborted.set()
        backoff.admit(aborted, time.monotonic() + 60)
