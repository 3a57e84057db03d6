#!/usr/bin/python3
"""What ramguard.census() costs, in this process (figures, not pass/fail):

  synthetic coordinator: 10^4 tensors in a state dict (roots mode, registered roots only), then
  10^4 tensors among 10^6 other Python objects (full mode: the whole heap), each beside one
  gc.get_objects() pass timed in the same run (the ratio says how far the census is from the
  cheapest possible look at the heap); then the FedAvg example's state dicts (ViT-B/16, and
  ViT-L/16 with --vit-l), both modes.

Goals (docs/benchmarks.md): roots mode <= 50 ms at 10^4 tensors; full mode <= 1 s at 10^6
objects, or partial at its budget (1 s) and saying so. Needs Debian's python3-torch;
torchvision for the ViT lines (skipped with a note without it). Run by run_bench.sh."""

import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
import ramguard  # noqa: E402
import torch  # noqa: E402

REPEATS = 5


def timed(fn):
    """Median and max of REPEATS runs, in seconds, and the last result."""
    times, result = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), max(times), result


def gc_pass():
    return len(gc.get_objects())


def line(name, seconds, worst, result, gc_seconds):
    partial = result.get("partial") or "complete"
    print(f"{name:<44} median {seconds * 1e3:8.1f} ms  max {worst * 1e3:8.1f} ms  "
          f"x{seconds / gc_seconds:6.1f} gc.get_objects()  storages {result['storages']:>6}  "
          f"objects seen {result['objects_seen']:>8}  {partial}", flush=True)


def main():
    gc.disable()
    gc_seconds, _, objects = timed(gc_pass)
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}; heap at start "
          f"{objects} tracked objects, gc.get_objects() {gc_seconds * 1e3:.1f} ms")

    state = {f"layer{i}.weight": torch.zeros(16) for i in range(10_000)}
    gc_seconds, _, objects = timed(gc_pass)
    median, worst, result = timed(lambda: ramguard.census({"state": state}, mode="roots"))
    line("roots mode, 10^4 tensors", median, worst, result, gc_seconds)

    junk = [[{"k": i}, (i, str(i))] for i in range(1_000_000 // 3)]  # ~10^6 tracked objects
    gc_seconds, _, objects = timed(gc_pass)
    print(f"heap with the synthetic objects: {objects} tracked objects, gc.get_objects() "
          f"{gc_seconds * 1e3:.1f} ms")
    median, worst, result = timed(lambda: ramguard.census({"state": state}, mode="roots"))
    line("roots mode, 10^4 tensors, 10^6 objects", median, worst, result, gc_seconds)
    median, worst, result = timed(lambda: ramguard.census(budget_seconds=1.0))
    line("full mode (budget 1 s), 10^6 objects", median, worst, result, gc_seconds)
    median, worst, result = timed(lambda: ramguard.census(budget_seconds=60.0))
    line("full mode (budget 60 s), 10^6 objects", median, worst, result, gc_seconds)
    del junk, state

    try:
        import torchvision
    except ImportError as e:
        print(f"ViT lines skipped: {e}")
        return
    models = ["vit_b_16"] + (["vit_l_16"] if "--vit-l" in sys.argv else [])
    for name in models:
        model = getattr(torchvision.models, name)(weights=None)
        coordinator_state = {k: v.detach() for k, v in model.state_dict().items()}
        del model
        gc_seconds, _, objects = timed(gc_pass)
        median, worst, result = timed(
            lambda: ramguard.census({"state": coordinator_state}, mode="roots"))
        line(f"roots mode, {name} state ({len(coordinator_state)} tensors)", median, worst,
             result, gc_seconds)
        median, worst, result = timed(lambda: ramguard.census(budget_seconds=60.0))
        line(f"full mode, {name} state", median, worst, result, gc_seconds)
        del coordinator_state


if __name__ == "__main__":
    main()
