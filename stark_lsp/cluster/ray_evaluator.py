"""``RayEvaluator``: the ``Evaluator`` interface, with the work spread over Ray actors.

    with RayEvaluator("auto") as ev:
        result = ev.evaluate(task, source)

Thread-safe and blocking like ``Evaluator``: the search calls ``evaluate``
from several threads, and each call takes one idle actor (waiting in line when
all are busy). A bad candidate gets a failed result, never an exception; an
actor lost in the middle (its node went away, it was killed) is replaced and
the candidate retried once on another, else it fails as ``crashed`` with the
reason. ``EvaluatorUnavailable`` is raised only when no actor can work at all.
CUDA sources are compiled here first when this machine has nvcc (a compile
error then costs no GPU time); actors on this machine reuse the build from the
shared cache, others build again on their node.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as rex

from stark_lsp.cluster import connect
from stark_lsp.cluster.actor import EvalActor, task_payload
from stark_lsp.cluster.env import actor_env_vars
from stark_lsp.cluster.scheduler import ActorsUnavailable, ActorSet, Member
from stark_lsp.evaluate.evaluator import EvaluatorUnavailable, default_cache_dir
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.pool import WorkerStartError
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.tasks.spec import TaskSpec

log = logging.getLogger(__name__)
READY_TIMEOUT_S = 300.0  # an actor's first evaluation worker imports torch (and creates a CUDA context)
SLACK_S = 300.0  # beyond the candidate's own limits before a silent actor counts as stuck
_LOST = (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError)


class RayEvaluator:
    def __init__(self, cluster: str = "auto", device: str = "auto", cpu_actors: int = 2,
                 max_actors: int | None = None, retries: int = 1, cache_dir: Path | None = None,
                 memory_fraction: float = 0.0, local_cpus: int | None = None,
                 ready_timeout_s: float = READY_TIMEOUT_S, sandbox: str = "auto"):
        self.sandbox = sandbox
        self.cluster = cluster
        self.retries = max(0, retries)
        self.ready_timeout_s = ready_timeout_s
        self.cache_dir = Path(cache_dir) if cache_dir else None
        try:
            self.where = connect.attach(cluster, local_cpus=local_cpus)
        except Exception as e:
            raise EvaluatorUnavailable(f"cannot join the Ray cluster {cluster!r}: {e}") from e
        self._attached = True
        try:
            self.placement = connect.placement(device, cpu_actors, max_actors)
        except Exception as e:
            self.close()
            raise EvaluatorUnavailable(str(e)) from e
        runtime_env: dict[str, Any] = {"env_vars": actor_env_vars(device=self.placement.device)}
        if connect.is_remote_client():  # the nodes get this very version of the package
            import stark_lsp

            runtime_env["py_modules"] = [stark_lsp]
        self._actor_cls = ray.remote(max_restarts=0, max_task_retries=0)(EvalActor).options(
            runtime_env=runtime_env, **self.placement.options)
        self._builder: Any = None
        self._builder_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self.evaluations = 0  # answers that came back from an actor
        self.retried = 0  # candidates retried after losing their actor
        self.actors = ActorSet(self.placement.actors, self._start_actor, self._stop_actor)

    # -- the Evaluator interface --------------------------------------------------
    def __enter__(self) -> "RayEvaluator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        actors = getattr(self, "actors", None)
        if actors is not None:
            idle = [m for m in actors.members() if not m.busy]
            if idle:  # let idle actors stop their workers cleanly; the rest are killed
                ray.wait([m.handle.close.remote() for m in idle], num_returns=len(idle), timeout=10)
            actors.close()
        if self._attached:
            self._attached = False
            connect.detach()

    def hardware_info(self) -> dict[str, Any]:
        members = self.actors.wait_ready(1, timeout=self.ready_timeout_s)
        if not members:
            raise EvaluatorUnavailable(f"no evaluation actor became ready: {self.actors.error()}")
        info = dict(members[0].info)
        info.update(actors=self.placement.actors, cluster=self.where)
        return info

    def hardware(self) -> str:
        try:
            info = self.hardware_info()
        except EvaluatorUnavailable as e:
            return f"unknown ({e})"
        return f"{info.get('label') or info.get('device', 'unknown')} [Ray: {self.placement.describe()}]"

    def evaluate(self, task: TaskSpec, source: str, options: EvalOptions | None = None) -> EvalResult:
        opts = options or EvalOptions()
        t0 = time.perf_counter()
        result = self._prebuild(task, source, opts) or self._dispatch(task, source, opts)
        result.seconds = time.perf_counter() - t0
        return result

    # -- the queue over the actors ------------------------------------------------------
    def _dispatch(self, task: TaskSpec, source: str, opts: EvalOptions) -> EvalResult:
        payload = task_payload(task)  # read each time: the user may edit the harness between searches
        limit = opts.run_timeout_s + opts.compile_timeout_s + SLACK_S
        lost: list[str] = []
        for attempt in range(self.retries + 1):
            try:
                member = self.actors.acquire()
            except ActorsUnavailable as e:
                raise EvaluatorUnavailable(str(e)) from e
            try:
                reply = ray.get(member.handle.evaluate.remote(payload, source, opts.to_dict()), timeout=limit)
            except rex.GetTimeoutError:
                self.actors.replace(member, "stuck")
                return EvalResult(Status.TIMEOUT, f"the evaluation actor gave no answer within {limit:.0f} s: "
                                                  f"it was killed and replaced")
            except _LOST as e:
                self.actors.replace(member, type(e).__name__)
                lost.append(f"actor {member.index}: {_reason(e)}")
                if attempt < self.retries:
                    with self._stats_lock:
                        self.retried += 1
                continue
            except rex.RayTaskError as e:  # the actor's own code raised
                cause = getattr(e, "cause", None)
                if isinstance(cause, (EvaluatorUnavailable, WorkerStartError)):
                    self.actors.replace(member, "its evaluation worker cannot start")
                    raise EvaluatorUnavailable(f"evaluation actor {member.index}: {cause}") from e
                self.actors.release(member)
                return EvalResult(Status.RUNTIME_ERROR, f"evaluator error in actor {member.index}: {_first_line(e)}",
                                  output=str(e)[-4000:])
            self.actors.release(member)
            with self._stats_lock:
                self.evaluations += 1
            return EvalResult.from_dict(reply)
        tries = "once" if len(lost) == 1 else f"{len(lost)} times"
        return EvalResult(Status.CRASHED, f"the evaluation actor died {tries} while evaluating this candidate "
                                          f"(node lost or actor killed): {'; '.join(lost)}")

    # -- CUDA builds on the driver -----------------------------------------------------------
    def _prebuild(self, task: TaskSpec, source: str, opts: EvalOptions) -> EvalResult | None:
        """A compile error found here (no actor needed), else None."""
        if task.kind != "cuda":
            return None
        builder = self._cuda_builder()
        if builder is None:
            return None
        from stark_lsp.evaluate.sandbox.policy import SandboxRefused

        try:
            art = builder.build(source, opts.nvcc_flags, timeout_s=opts.compile_timeout_s, task=task)
        except SandboxRefused as e:
            raise EvaluatorUnavailable(str(e)) from e
        if art.report.ok:
            return None
        msg = next((d.message for d in art.report.diagnostics if d.severity == "error"), "compile failed")
        return EvalResult(Status.COMPILE_ERROR, msg, compile=art.report)

    def _cuda_builder(self) -> Any:
        from stark_lsp.evaluate.cuda_build import CudaBuilder, nvcc_path

        with self._builder_lock:
            if self._builder is None:
                if nvcc_path() is None:
                    self._builder = False  # the actors build on their nodes
                else:
                    try:
                        hw = self.hardware_info()
                    except EvaluatorUnavailable:
                        hw = {}
                    cap = str(hw.get("capability", "9.0")) if hw.get("is_gpu") else "9.0"
                    from stark_lsp.evaluate.sandbox.policy import probe

                    sb = probe() if self.sandbox != "off" else None  # nvcc reads candidate source: sandboxed
                    self._builder = CudaBuilder(self.cache_dir or default_cache_dir(), arch="sm_" + cap.replace(".", ""),
                                                sandbox=sb if sb is not None and sb.available else None,
                                                required=self.sandbox == "required")
            return self._builder or None

    # -- actors --------------------------------------------------------------------------
    def _start_actor(self, n: int) -> Member:
        handle = self._actor_cls.remote(self.placement.device, str(self.cache_dir) if self.cache_dir else None,
                                        sandbox=self.sandbox)
        try:
            info = ray.get(handle.ready.remote(), timeout=self.ready_timeout_s)
        except rex.GetTimeoutError:
            _kill(handle)
            raise RuntimeError(f"actor not ready within {self.ready_timeout_s:.0f} s "
                               f"(cluster resources: {ray.available_resources()})") from None
        except Exception as e:
            _kill(handle)
            raise RuntimeError(_first_line(e)) from e
        return Member(index=n, handle=handle, info=info)

    @staticmethod
    def _stop_actor(member: Member) -> None:
        _kill(member.handle)


def _kill(handle: Any) -> None:
    try:
        ray.kill(handle, no_restart=True)
    except Exception as e:  # already gone
        log.debug("ray.kill: %s", e)


def _reason(e: BaseException) -> str:
    """The first line of a lost actor's error, and Ray's 'because ...' line when there is one."""
    why = next((ln.strip() for ln in str(e).splitlines() if "because" in ln), "")
    first = _first_line(e)
    return f"{first} {why}" if why and why != first else first


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        if line.strip() and not line.startswith("ray::"):
            return line.strip()[:300]
    return type(e).__name__
