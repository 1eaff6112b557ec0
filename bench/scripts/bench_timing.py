"""What the engine scripts share: timing one question as the Rust side reads it."""

import time


def best_of(fetch, warmup, runs):
    """Runs `fetch()` `warmup` times untimed, then `runs` times: each run's milliseconds and the
    last answer."""
    for _ in range(warmup):
        fetch()
    timings = []
    answer = None
    for _ in range(runs):
        started = time.perf_counter()
        answer = fetch()
        timings.append((time.perf_counter() - started) * 1000.0)
    return timings, answer
