"""Ray as the execution engine: one long-lived worker per device computes ``run_units`` batches.

* **Workers** are Ray actors, one per GPU of the cluster (``num_gpus=1`` each), or, without GPUs, one per CPU
  (``--workers N`` to choose; each runs torch on one thread). A worker loads every model it is sent once
  (from its spec and load options: :mod:`robusteval.executors.transport`) and keeps it for the whole session.
* **The driver** (the ``robusteval`` process) keeps the run store as its only writer: ``run_units`` skips what
  is stored and commits every batch the moment it comes back, so a run killed anywhere resumes as in process.
* **Scheduling** is by units: each worker has at most ``inflight`` batches queued; ``ray.wait`` returns the
  first one done, it is committed, and that worker gets the next batch. A worker that dies is replaced and
  its unfinished batches go back to the front of the queue; a batch is never committed twice.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import threading
import weakref
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from typing import Any

from robusteval.errors import UserError
from robusteval.executors.base import BatchResult, Compute
from robusteval.executors.rayfaults import LocalRay, RayDied
from robusteval.extras import require_module

#: Deaths of workers while computing the same batch before the run gives up on it (an item that kills its
#: worker, e.g. out of memory, would otherwise be retried forever).
MAX_DEATHS_PER_BATCH = 3
#: Seconds the workers may take to start (a busy cluster may have no free device for them).
STARTUP_TIMEOUT_S = 180.0
_actor_class: Any = None  # ray.remote(UnitWorker), made once


class UnitWorker:
    """A Ray actor's body: loads models on demand, computes batches of shipped computes."""

    def __init__(self) -> None:
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 1))
        self._computes: dict[str, Any] = {}  # the compute of each run_units call, unpickled once

    def pid(self) -> int:
        return os.getpid()

    def describe(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]:
        from robusteval.models.identity import describe_here

        return describe_here(spec, **options)

    def load(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]:
        from robusteval.executors.transport import describe, shared_model
        from robusteval.models.registry import LoadRecipe

        return describe(shared_model(LoadRecipe(spec, dict(options), {})))

    def models(self) -> list[str]:
        from robusteval.executors.transport import loaded_models

        return loaded_models()

    def release(self, key: str) -> None:
        from robusteval.executors.transport import release_model

        self._computes = {}  # the last compute may hold the model too
        release_model(key)

    def run(self, payload: list[Any], batch: list[Any]) -> tuple[list[dict[str, Any]], float, list[dict[str, Any]]]:
        """``payload``: ``[ObjectRef of the pickled compute]`` (wrapped, so Ray hands over the reference and
        the compute is unpickled once per call of run_units, not once per batch)."""
        import pickle

        import ray

        from robusteval.executors.base import timed
        from robusteval.executors.transport import drain_side_units

        ref = payload[0]
        compute = self._computes.get(ref.hex())
        if compute is None:
            self._computes = {ref.hex(): pickle.loads(ray.get(ref))}  # the previous call's is done with
            compute = self._computes[ref.hex()]
        records, seconds = timed(compute, batch)
        return records, seconds, drain_side_units()


class RayExecutor:
    """Computes batches on a pool of Ray workers; see the module docstring."""

    name = "ray"
    distributed = True

    def __init__(self, *, address: str | None = None, workers: int | None = None, inflight: int = 2):
        require_module("ray", "ray", purpose="the ray executor")
        if workers is not None and workers < 1:
            raise UserError(f"workers {workers}: give at least 1")
        self.address = address
        self.requested = workers
        self.inflight = max(1, inflight)
        self.gpus_per_worker = 0
        self._actors: list[Any] = []
        self._started_ray = False
        self._local: LocalRay | None = None  # the watchdog and reaper of a local instance started here
        # The driver's stand-ins, weakly: a model the driver drops is released on the workers.
        self._models: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()

    # ------------------------------------------------------------------ pool
    def _ensure_started(self) -> None:
        if self._actors:
            return
        import ray

        if not ray.is_initialized():
            # ray.init replaces the SIGTERM handler with sys.exit(15); the CLI's own (a one-line message, exit
            # code 143, the same cleanup) is put back.
            main_thread = threading.current_thread() is threading.main_thread()
            on_sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
            try:  # "local": always a cluster of its own, never another process's by accident. No dashboard: a
                # local run serves no UI (Ray still runs its minimal head and the raylet's dashboard agent).
                ray.init(address=self.address or "local", include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)
            except ConnectionError as exc:
                raise UserError(f"Ray address {self.address}: cannot reach a Ray cluster ({exc}); start one with "
                                "`ray start --head`, or leave --ray-address out for a local one") from None
            finally:
                if callable(on_sigterm):
                    signal.signal(signal.SIGTERM, on_sigterm)
            self._started_ray = True
        free = ray.available_resources()
        gpus, cpus = int(free.get("GPU", 0)), int(free.get("CPU", 0))
        self.gpus_per_worker = 1 if gpus else 0
        capacity = gpus or cpus
        unit = "GPU" if gpus else "CPU"
        count = self.requested or capacity
        if count < 1 or count > capacity:
            raise UserError(f"workers {count}: the Ray cluster has {capacity} free {unit}s (one worker each)")
        self._actors = [self._new_actor() for _ in range(count)]
        try:
            ray.get([actor.pid.remote() for actor in self._actors], timeout=STARTUP_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise UserError(f"{count} Ray workers did not start within {STARTUP_TIMEOUT_S:.0f} s (free: "
                            f"{ray.available_resources()}); is another job holding the cluster's {unit}s?") from None
        if self._started_ray and self.address is None and self._local is None:  # never a cluster it joined
            self._local = LocalRay()
        from robusteval.progress import status

        status(f"ray: {count} workers, one {unit} each, on {self.address or 'a local cluster'}")

    def _new_actor(self) -> Any:
        import ray

        # One intra-op thread per CPU worker: N workers then really use N cores instead of fighting over them.
        env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        global _actor_class
        if _actor_class is None:
            _actor_class = ray.remote(UnitWorker)
        return _actor_class.options(
            num_cpus=1, num_gpus=self.gpus_per_worker, runtime_env={"env_vars": env},
        ).remote()

    @property
    def workers(self) -> list[Any]:
        """The live actors (started on first use)."""
        self._ensure_started()
        return list(self._actors)

    def worker_pids(self) -> list[int]:
        import ray

        return list(ray.get([actor.pid.remote() for actor in self.workers]))

    # ------------------------------------------------------------------ models
    def describe_model(self, spec: Any, options: dict[str, Any]) -> dict[str, Any]:
        import ray

        identities = _remote(lambda: ray.get([a.describe.remote(spec, options) for a in self.workers]))
        _same_everywhere(identities, str(spec))
        return identities[0]

    def load_model(self, spec: Any, options: dict[str, Any]) -> Any:
        import ray

        from robusteval.executors.transport import WorkerModel, model_key
        from robusteval.models.registry import LoadRecipe

        key = model_key(spec, options)
        model = self._models.get(key)
        if model is None:
            gc.collect()  # stand-ins the driver dropped are released on the workers before this one loads
            described = _remote(lambda: ray.get([a.load.remote(spec, options) for a in self.workers]))
            _same_everywhere([d["identity"] for d in described], str(spec))
            model = self._models[key] = WorkerModel(LoadRecipe(spec, dict(options), described[0]["identity"]),
                                                    described[0])
            # When the driver lets go of the model (a sweep moving to the next one), so do the workers.
            weakref.finalize(model, self._release, key)
        return model

    def _release(self, key: str) -> None:
        import ray

        if ray.is_initialized():
            for actor in self._actors:  # queued behind their batches in flight: none of them loses the model
                with contextlib.suppress(Exception):
                    actor.release.remote(key)

    def loaded_models(self) -> list[list[str]]:
        """Each worker's loaded models (spec and options, as JSON)."""
        import ray

        return list(ray.get([actor.models.remote() for actor in self.workers]))

    # ------------------------------------------------------------------ batches
    def map_batches(self, stage: str, batches: Sequence[list[Any]], compute: Compute, store: Any
                    ) -> Iterator[BatchResult]:
        import ray
        from ray.exceptions import RayActorError

        from robusteval.executors.transport import dumps_compute, store_token

        if not batches:
            return
        actors = self.workers
        token = store_token(store)
        payload = ray.put(dumps_compute(compute, stage))
        queue = deque(range(len(batches)))
        deaths: Counter[int] = Counter()
        # ref -> (slot, actor, batch index); a dict keeps submission order, which is each actor's computing order
        inflight: dict[Any, tuple[int, Any, int]] = {}

        def fill(slot: int) -> None:
            actor = actors[slot]
            while queue and sum(1 for s, _, _ in inflight.values() if s == slot) < self.inflight:
                index = queue.popleft()
                inflight[actor.run.remote([payload], batches[index])] = (slot, actor, index)

        def result(index: int, value: Any) -> BatchResult:
            records, seconds, side_units = value
            return BatchResult(index, records, seconds, [u for u in side_units if u["token"] == token])

        try:
            for slot in range(len(actors)):
                fill(slot)
            while inflight:
                (ready,), _ = ray.wait(list(inflight), num_returns=1)
                slot, actor, _ = inflight[ready]
                try:
                    value = _remote(lambda ref=ready: ray.get(ref))
                except RayActorError as exc:
                    # Every batch queued on the dead actor fails with it, in whatever order Ray reports them. An
                    # actor computes its batches in submission order, so the one it was computing is the oldest
                    # that did not finish: only that one is charged with the death. (A worker that dies the instant
                    # after finishing a batch may lose that batch's reply; Ray then reports it unfinished, and it is
                    # the one charged.)
                    mine = [(ref, index) for ref, (_, owner, index) in inflight.items() if owner is actor]
                    for ref, _ in mine:
                        del inflight[ref]
                    finished, unfinished = _settle(mine)
                    for index, done in finished:  # done before the worker died: as good as any result
                        yield result(index, done)
                    if not unfinished:  # pragma: no cover - the failed batch itself is always unfinished
                        continue
                    culprit = unfinished[0]
                    deaths[culprit] += 1
                    if deaths[culprit] >= MAX_DEATHS_PER_BATCH:
                        from robusteval.errors import resume_hint
                        from robusteval.executors.rayfaults import reason

                        raise RayDied(f"{stage}: batch {culprit} killed {deaths[culprit]} workers; giving up (last: "
                                      f"{reason(exc)}); {resume_hint()}") from exc
                    # Computed again first, by whichever worker is free; the innocent ones before the culprit, so they
                    # are not queued behind it again.
                    queue.extendleft(reversed([*unfinished[1:], culprit]))
                    actors[slot] = self._actors[slot] = self._new_actor()
                    if self._local is not None:  # the new worker's process, for the reaper
                        self._local.guard()
                    from robusteval.progress import status

                    others = f"; so are the batches queued behind it: {unfinished[1:]}" if len(unfinished) > 1 else ""
                    status(f"{stage}: a Ray worker died computing batch {culprit} (death {deaths[culprit]} of "
                           f"{MAX_DEATHS_PER_BATCH} allowed); started a new one, the batch is computed again{others}")
                    fill(slot)
                    continue
                _, _, index = inflight.pop(ready)
                yield result(index, value)
                fill(slot)
        finally:
            for ref in inflight:  # a failed run leaves nothing queued on the workers
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    # ------------------------------------------------------------------ bookkeeping
    def info(self) -> dict[str, Any]:
        import ray

        self._ensure_started()
        return {"name": self.name, "address": self.address or "local", "workers": len(self._actors),
                "gpus_per_worker": self.gpus_per_worker, "ray_version": ray.__version__}

    def close(self) -> None:
        import ray

        if self._local is not None:  # what follows stops the instance on purpose: no death to report
            self._local.stop_watching()
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors = []
        self._models.clear()
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
        if self._local is not None:  # whatever ray.shutdown left running is killed
            self._local.close()
            self._local = None
        self._started_ray = False


def _settle(refs: list[tuple[Any, int]], timeout: float = 60.0) -> tuple[list[tuple[int, Any]], list[int]]:
    """The batches of a dead actor (``(ref, batch index)`` in submission order): ``(finished, unfinished)``, the
    results of those it completed before dying and, in order, the indices of the others (the first of them is
    the one it died computing)."""
    import ray
    from ray.exceptions import RayActorError

    ray.wait([ref for ref, _ in refs], num_returns=len(refs), timeout=timeout)  # a dead actor's refs settle at once
    finished: list[tuple[int, Any]] = []
    unfinished: list[int] = []
    for ref, index in refs:
        try:
            finished.append((index, _remote(lambda ref=ref: ray.get(ref, timeout=0))))
        except (RayActorError, ray.exceptions.GetTimeoutError):
            unfinished.append(index)
    return finished, unfinished


def _remote(call: Any) -> Any:
    """``call()``, re-raising the worker's own exception (a UserError stays one line) instead of Ray's wrapper."""
    from ray.exceptions import RayTaskError

    try:
        return call()
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from exc
        raise


def _same_everywhere(identities: list[dict[str, Any]], spec: str) -> None:
    if any(identity != identities[0] for identity in identities):
        kinds = sorted({f"{i.get('device')}/{i.get('dtype')}" for i in identities})
        raise UserError(f"{spec}: the Ray workers resolve this model differently ({', '.join(kinds)}); give "
                        "the device and dtype explicitly, or use workers of one kind")
