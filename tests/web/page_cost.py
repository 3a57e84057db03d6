"""What the run page costs the daemon: a node of 64 guarded coordinators (memchild processes,
each a run with a few rounds of phases), one coordinator marking phases as fast as the daemon
answers, then 0, 1 and 10 viewers, each its own `ramguard ui` (one per person, as served)
fetching a run page's data every 2 s as the live page does. Prints, per window: the daemon's
CPU share, the mark round trip (p50/p99) and the page fetch time (p50/p99).

Not a ctest (its figures depend on the machine); docs/benchmarks.md quotes a run of it:
  RAMGUARD_DAEMON=build/daemon/ramguardd RAMGUARD_CLI=build/client/cli/ramguard \
  RAMGUARD_MEMCHILD=build/tests/tools/memchild RAMGUARD_CLIENT_PACKAGE=client/python/ramguard \
  python3 tests/web/page_cost.py [--seconds 20]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_page import MB, MemChild, Ui  # noqa: E402
from test_client_daemon import Daemon, load_copied_module  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=64)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="rg-page-cost-")
    daemon = Daemon(workdir, "control:\n  max_requests_per_second: 100000\n")
    rg = load_copied_module(os.environ["RAMGUARD_CLIENT_PACKAGE"])
    # Marks wait up to 5 s here: the round trip is what is measured, not dropped.
    client = rg.Client(daemon.socket, strict=True, mark_timeout_seconds=5.0)
    children, runs = [], []
    try:
        for i in range(args.runs):
            mem = MemChild()
            children.append(mem)
            run = client.start_run(f"coord-{i}", labels={"node": "n1"}, pid=mem.pid,
                                   model_bytes=5 * MB, declared_rounds=100)
            mem.do(f"alloc model {5 * MB}")
            for r in range(1, 4):
                with run.phase("aggregation", round_no=r):
                    pass
                run.round_end(round_no=r)
            runs.append(run)
        marker = runs[0]
        stop = threading.Event()
        mark_ms = []

        def mark_loop():
            while not stop.is_set():
                t = time.perf_counter()
                marker.mark("begin", "synchronization")
                marker.mark("end", "synchronization")
                mark_ms.append((time.perf_counter() - t) * 500)  # per mark
                time.sleep(0.01)

        threading.Thread(target=mark_loop, daemon=True).start()
        uis = []
        print(f"{args.runs} runs; windows of {args.seconds:.0f} s; viewers fetch a run page "
              "every 2 s")
        print("viewers  daemon CPU  mark p50/p99 ms  page fetch p50/p99 ms  pages")
        for viewers in (0, 1, 10):
            while len(uis) < viewers:
                uis.append(Ui(daemon.socket))
            fetch_ms = []
            halt = threading.Event()

            def view(ui, k):
                run_id = runs[(k * 7) % len(runs)].run_id
                while not halt.is_set():
                    t = time.perf_counter()
                    ui.get("api/run/" + run_id)
                    fetch_ms.append((time.perf_counter() - t) * 1000)
                    halt.wait(2.0)

            threads = [threading.Thread(target=view, args=(ui, k), daemon=True)
                       for k, ui in enumerate(uis[:viewers])]
            del mark_ms[:]
            cpu0, t0 = cpu_seconds(daemon.proc.pid), time.monotonic()
            for t in threads:
                t.start()
            time.sleep(args.seconds)
            halt.set()
            for t in threads:
                t.join()
            share = (cpu_seconds(daemon.proc.pid) - cpu0) / (time.monotonic() - t0)
            print(f"{viewers:7d}  {100 * share:9.1f}%  {pct(mark_ms, .5):6.2f}/{pct(mark_ms, .99):6.2f}"
                  f"      {pct(fetch_ms, .5):8.1f}/{pct(fetch_ms, .99):8.1f}       {len(fetch_ms)}")
        stop.set()
        for ui in uis:
            ui.stop()
    finally:
        for mem in children:
            mem.stop()
        client.close()
        daemon.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
