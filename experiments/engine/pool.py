"""Tasks run a few at a time with a running estimate of the time left (`run_all`), in threads that a
stopping signal ends gently (`run_in_threads`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from experiments.engine.sittings import fit_seconds

IN_PROCESS_TRAINER = threading.Lock()
"""Held by a task around a Lightning `Trainer` it runs in the reproduction's own process (a fit
runs in a process of its own): Lightning's loops patch `DataLoader`'s class attributes while they
set up (`lightning_fabric.utilities.data._replace_dunder_methods`), which two threads at once
break (`DataLoader has no attribute '__old__setattr__'`)."""
SIGNAL_CHECK = 0.25
"""Seconds the main thread waits at most at a time while tasks run (`run_in_threads`): how late a
stopping signal that the kernel hands to another thread is handled."""


def recorded_seconds(result: object, since: float | None = None) -> float | None:
    """A task's result's own record of its fit's time (`fit_seconds` of a measurements record's
    `trained`: summed over its sittings), or None where it has none or, with `since`, where the
    fit ended before that time (a run trained before, measured only now)."""
    trained = result.get("trained") if isinstance(result, dict) else None
    if not isinstance(trained, dict) or (since is not None and trained["finished"] < since):
        return None
    return fit_seconds(trained)


def run_all(
    tasks: dict[Hashable, Callable[[], object]],
    jobs: int,
    describe: Callable[[Hashable, object], str] = lambda key, result: str(key),
    done_before: Callable[[Hashable], bool] = lambda key: False,
    label: Callable[[Hashable], str] | None = None,
    left: Callable[[Hashable], str | None] = lambda key: None,
) -> dict[Hashable, object]:
    """Run `tasks` `jobs` at a time; returns their results in the tasks' order.

    The tasks `done_before` says an earlier invocation finished are read back first (taking no
    time); then it prints how many tasks there are, how many were done before, which remain and
    an estimate of the time they take, and after each task how many remain and the estimate
    again. The estimate is a task's mean time, times the tasks left to compute, over `jobs`. A
    task's time is its wall time here, or, where its fit ended here, the fit's recorded time over
    every sitting (`recorded_seconds`) where that is longer (a run resumed here; not a run
    trained before and measured only here); until one is computed here,
    the mean of the recorded times of those done before; with neither, unknown. After a task
    fails, no other one starts; those running finish, then its exception is raised.
    Tasks are named by `label` (default: keys `(variant, seed)`), a task to run with what an
    earlier invocation left of it where `left` says (`fit.left_to_compute`).
    """
    if label is None:
        label = lambda key: f"{key[0]} seed={key[1]}" if isinstance(key, tuple) else str(key)  # noqa: E731
    kept = {key: tasks[key]() for key in tasks if done_before(key)}
    pending = [key for key in tasks if key not in kept]
    results: dict[Hashable, object] = {}
    computed: list[float] = []
    before = [s for s in map(recorded_seconds, kept.values()) if s is not None]
    start = time.time()

    def estimate() -> str:
        """The time the tasks left to compute take, or why it is not known."""
        to_compute = len(pending) - len(computed)
        times = computed or before
        if not times:
            return "time unknown until one is computed here"
        minutes = sum(times) / len(times) * to_compute / min(jobs, to_compute) / 60
        return f"about {minutes:.1f} min" + ("" if computed else ", from the recorded fit "
                                             "times of those done before")  # fmt: skip

    named = [label(key) + (f" ({rest})" if (rest := left(key)) else "") for key in pending]
    print(f"{len(tasks)} tasks, {jobs} at a time; {len(kept)} done before, {len(pending)} to run"
          + (": " + ", ".join(named) + "; " + estimate() if pending else ""),
          flush=True)  # fmt: skip
    for key, result in kept.items():  # in the tasks' order
        results[key] = result
        print(f"[{len(results)}/{len(tasks)}] {describe(key, result)} (done before)", flush=True)

    def one(key):
        began = time.time()
        results[key] = tasks[key]()
        wall = time.time() - began
        computed.append(max(wall, recorded_seconds(results[key], since=start) or 0.0))
        left = len(tasks) - len(results)
        more = f"; {left} left, {estimate()} more" if left else ""
        print(f"[{len(results)}/{len(tasks)}] {describe(key, results[key])} ({wall / 60:.1f} min; "
              f"{(time.time() - start) / 60:.1f} min in all{more})", flush=True)  # fmt: skip

    run_in_threads(one, pending, jobs)
    return {key: results[key] for key in tasks}


def run_in_threads(task: Callable[[Hashable], None], keys: list[Hashable], jobs: int) -> None:
    """`task(key)` for every key, `jobs` threads at a time. Once a task fails or an exception stops
    this thread (a signal's, from `sittings.stopping_gently`), no other task begins,
    and the exception is raised only after the tasks begun have ended.

    Around `ThreadPoolExecutor` by hand, for two of its ways with signals: its `submit` records a
    worker thread only after starting it, so a signal handled while a worker started left
    `shutdown` not waiting for that worker's task (the reproduction left `stopping_gently`, its
    handlers restored and `STOPPING` cleared, with the task running); and its waits have no
    timeout, so a signal the kernel hands to a worker thread was not handled until the main
    thread woke. Every wait here is timed (`SIGNAL_CHECK` seconds)."""
    workers: list[threading.Thread] = []
    abandoned = threading.Event()  # a task failed or this thread stopped waiting: none begins after

    def begin(key: Hashable) -> None:
        if abandoned.is_set():
            return
        try:
            task(key)
        except BaseException:
            abandoned.set()
            raise

    # Each worker records itself before it takes its first task.
    pool = ThreadPoolExecutor(jobs, initializer=lambda: workers.append(threading.current_thread()))
    try:
        futures = [pool.submit(begin, key) for key in keys]
        while True:
            done, running = wait(futures, SIGNAL_CHECK, return_when=FIRST_EXCEPTION)
            if not running or any(future.exception() for future in done):
                break
        for future in futures:
            if future.done():
                future.result()  # the first exception, in the tasks' order
    finally:
        abandoned.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in list(workers):
            while worker.is_alive():
                worker.join(SIGNAL_CHECK)
