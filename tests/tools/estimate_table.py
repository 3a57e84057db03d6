#!/usr/bin/python3
"""The first run's estimate against its exact peak, for the FedAvg coordinators under glibc and
jemalloc: the table in docs/admission.md. Starts the real ramguardd at its embedded defaults (an
empty configuration), runs every combination one at a time, each with a fresh job (no history:
the estimate is the plan's), and prints one markdown row per run:

    /usr/bin/python3 tests/tools/estimate_table.py --daemon build/daemon/ramguardd \\
        --models vit_s_16,vit_b_16 --shapes example,hosts --allocators glibc,jemalloc

shape "example" is client/python/examples/torch_fedavg.py (hosts simulated in the process),
"hosts" is torch_fedavg_hosts.py (hosts in processes, states sent serialized through pipes).
tests/python/test_estimate_allocators.py runs the same through measure().
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(ROOT, "client", "python", "examples")
SHAPES = {"example": os.path.join(EXAMPLES, "torch_fedavg.py"),
          "hosts": os.path.join(EXAMPLES, "torch_fedavg_hosts.py")}
JEMALLOC_CANDIDATES = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                       "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2")


def find_jemalloc():
    return next((p for p in JEMALLOC_CANDIDATES if os.path.exists(p)), None)


class Daemon:
    """ramguardd at its defaults on a temporary socket and state directory."""

    def __init__(self, binary, workdir):
        self.socket = os.path.join(workdir, "s.sock")
        config = os.path.join(workdir, "ramguard.yaml")
        open(config, "w").close()
        self.proc = subprocess.Popen(
            [binary, "--config", config, "--socket", self.socket, "--state-dir",
             os.path.join(workdir, "state"), "--metrics", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if "event=daemon.ready" in line:
                break
        else:
            raise RuntimeError(f"{binary} exited before it was ready")
        # Keep reading its log, so that it never blocks on a full pipe.
        import threading
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def coordinator_env(socket, allocator, jemalloc):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "RAMGUARD_RUN", "LD_PRELOAD", "MALLOC_CONF")}
    env.update(RAMGUARD_SOCKET=socket, PYTHONDONTWRITEBYTECODE="1")
    if allocator == "jemalloc":  # as the example's docstring recommends
        env.update(LD_PRELOAD=jemalloc, MALLOC_CONF="dirty_decay_ms:0,muzzy_decay_ms:0")
    elif allocator != "glibc":
        raise ValueError(f"allocator {allocator!r}: glibc or jemalloc")
    return env


def measure(socket, shape, model, allocator, rounds, hosts=2, job=None, workdir=None):
    """One first run: {"estimate_bytes", "peak_bytes", "phase", "ratio", "reason", ...}."""
    jemalloc = find_jemalloc()
    if allocator == "jemalloc" and jemalloc is None:
        raise RuntimeError("libjemalloc.so.2 not found (Debian's libjemalloc2)")
    checkpoints = tempfile.mkdtemp(prefix="rg-estimate-", dir=workdir)
    argv = ["/usr/bin/python3", SHAPES[shape], "--build", "final", "--model", model,
            "--rounds", str(rounds), "--hosts", str(hosts), "--checkpoint-dir", checkpoints,
            "--job", job or f"estimate-{shape}-{model}-{allocator}-{time.monotonic_ns()}",
            "--release-timeout-seconds", "1", "--mark-timeout-seconds", "5"]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                              env=coordinator_env(socket, allocator, jemalloc))
    finally:
        shutil.rmtree(checkpoints, ignore_errors=True)
    if proc.returncode not in (0, 1):  # 1: no release verdict within the second asked for
        raise RuntimeError(f"{shape} {model} {allocator} exited {proc.returncode}:\n"
                           f"{proc.stdout}{proc.stderr}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    admission = summary["admission"]
    top = max(summary["phases"], key=lambda p: p["peak_bytes"])
    return {"shape": shape, "model": model, "allocator": allocator, "rounds": rounds,
            "hosts": hosts, "model_bytes": summary["model_bytes"],
            "estimate_bytes": admission["estimate_bytes"], "reason": admission["reason"],
            "peak_bytes": summary["peak_bytes"], "phase": top["phase"],
            "phase_peak_bytes": top["peak_bytes"],
            "phase_peaks": {p["phase"]: max(q["peak_bytes"] for q in summary["phases"]
                                            if q["phase"] == p["phase"])
                            for p in summary["phases"]},
            "baseline_rss_bytes": summary["phases"][0]["rss_bytes"] if summary["phases"] else 0,
            "ratio": admission["estimate_bytes"] / summary["peak_bytes"],
            "seconds": round(time.monotonic() - started, 1), "output": proc.stdout}


def row(r):
    gb = lambda b: f"{b / 1e9:.2f} GB"  # noqa: E731
    return (f"| {r['shape']:<7} | {r['model']:<8} | {gb(r['model_bytes'])} | {r['allocator']:<8} "
            f"| {r['rounds']} | {gb(r['estimate_bytes'])} | {gb(r['peak_bytes'])} "
            f"({r['phase']}) | {r['ratio']:.2f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--daemon", default=os.path.join(ROOT, "build", "daemon", "ramguardd"))
    parser.add_argument("--models", default="vit_s_16,vit_b_16")
    parser.add_argument("--shapes", default="example,hosts")
    parser.add_argument("--allocators", default="glibc,jemalloc")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", help="also write every run's figures here")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="rg-estimate-table-")
    daemon = Daemon(args.daemon, workdir)
    results = []
    try:
        print("| shape   | model    | model   | allocator | rounds | estimate | exact peak "
              "(phase) | ratio |")
        print("|---|---|---:|---|---:|---:|---|---:|")
        for model in args.models.split(","):
            for shape in args.shapes.split(","):
                for allocator in args.allocators.split(","):
                    for _ in range(args.repeat):
                        r = measure(daemon.socket, shape, model, allocator, args.rounds,
                                    args.hosts, workdir=workdir)
                        results.append({k: v for k, v in r.items() if k != "output"})
                        print(row(r), flush=True)
    finally:
        daemon.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
