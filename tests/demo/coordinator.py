#!/usr/bin/python3
"""A simulated federated-training coordinator for the ramguard demo.

It replays the ViT-H/14 investigation of daemon/README.md (3 rounds, 2 hosts) at one tenth
of the size: one model copy is 0.25 GB instead of 2.5 GB. This process really holds the memory it reports
(bytearray(n) writes n zero bytes, so every page is resident), because ramguardd watches this
PID's RSS: the floors and peaks it reports are measured, not told.

    build     peak     RSS between rounds   after completion    (the investigation / 10)
    baseline  2.94 GB  1.41 -> 1.73 GB      2.60 GB
    final     0.96 GB  0.64 -> 0.65 GB      0.07 GB

The baseline's growth is the investigation's bug: each round the aggregation step builds a function
whose global namespace holds the original model state (and the round's metadata), and the
namespace holds the function: a reference cycle that keeps ~1.3 model copies per round alive
until the cyclic garbage collector runs. Its teardown leaks the same way: the coordinator's
state lives in such a namespace, so dropping it frees nothing.

Round boundaries are between rounds (after rounds 1 and 2): the third round ends in the save
and the run end, whose lasting reading is the "after completion" figure.

Uses only the client package (client/python/ramguard) and the standard library.
"""

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "client", "python"))
import ramguard  # noqa: E402

MB = 1000**2
MODEL = 250 * MB          # one fp32 copy of ViT-H/14, 2.5 GB / 10
HOSTS = 2
ROUNDS = 3
RUNTIME = 70 * MB         # interpreter + framework, held until the process exits
HOLD = 0.6                # seconds each phase holds its memory, so 500 ms samples see it
GAPS = (0.675, 0.50, 0.50)  # aggregation end -> synchronization begin (full size: 6.75 s, 5.00 s)
SETTLE = 0.7              # wait after a round end (ramguard settles the floor in 500 ms)


def gb(nbytes):
    return f"{nbytes / 1e9:.2f} GB"


def say(text):
    print(f"  coordinator | {text}", flush=True)


def make_cycle(original, metadata):
    """The baseline's bug: a function whose global namespace holds the original state; the
    namespace holds the function. Unreachable once dropped, but only gc.collect() frees it."""
    namespace = {"original": original, "metadata": metadata}
    exec("def aggregate_step():\n    return original\n", namespace)  # noqa: S102
    return namespace["aggregate_step"]


class Coordinator:
    """The phases of one build. `held` maps names to the buffers this process holds."""

    def __init__(self, build, run):
        self.run = run
        self.baseline = build == "baseline"
        self.held = {}
        if self.baseline:  # the whole state lives in a namespace that is part of a cycle
            self.held["aggregate_step"] = make_cycle(self.held, bytearray(0))
        self.runtime = None

    def hold(self, name, nbytes):
        self.held.pop(name, None)  # a replaced buffer is freed first
        self.held[name] = bytearray(nbytes)

    def free(self, *names):
        for name in names:
            self.held.pop(name, None)

    def phase(self, name, round_no, body, release=lambda: None):
        """Marks the phase around body (allocate), a pause that lets the 500 ms sampler see
        the phase's memory, and release (free what the phase no longer needs): the phase ends
        with its memory handed back, so the gap to the next phase is only the coordinator's."""
        with self.run.phase(name) as p:
            body()
            time.sleep(HOLD)
            release()
        reply = p.end_reply or {}
        exact = "exact" if reply.get("peak_exact") else "sampled"
        where = f"round {round_no} {name}" if round_no else name
        say(f"{where:<23} holds {gb(ramguard.rss_bytes())}   ramguard: peak "
            f"{gb(p.peak_bytes)} ({exact}), {reply.get('phase_duration_seconds', 0.0):.1f} s")

    def load(self):
        # The framework's own memory: top the interpreter up to RUNTIME, held to the end.
        self.runtime = bytearray(max(0, RUNTIME - ramguard.rss_bytes()))
        self.hold("staging", MODEL)      # the checkpoint as read from disk
        self.hold("global", MODEL)       # the model state built from it
        if not self.baseline:
            self.free("staging")         # the final build drops the staging copy
        self.hold("momentum", MODEL)     # server optimizer state
        self.hold("history", 60 * MB)    # metrics and client bookkeeping
        if self.baseline:
            for h in range(HOSTS):       # receive buffers kept for reuse
                self.hold(f"recv{h}", 105 * MB)

    def aggregate(self, round_no):
        if self.baseline:
            for h in range(HOSTS):
                self.hold(f"update{h}", MODEL)   # all host updates at once
            self.hold("result", MODEL)
            # The bug: the original state and the round's metadata end up reachable only
            # through a function <-> namespace cycle, which is dropped right away.
            make_cycle(self.held.pop("global"), bytearray(60 * MB))
            self.held["global"] = self.held.pop("result")
        else:
            for h in range(HOSTS):               # streamed: one host update at a time
                self.hold("update", MODEL)
                self.hold("decode", 60 * MB)
                if h == HOSTS - 1:
                    time.sleep(HOLD / 2)         # let the sampler see the peak
                self.free("update", "decode")

    def finish_aggregation(self):
        self.free(*(f"update{h}" for h in range(HOSTS)))

    def synchronize(self, round_no):
        self.hold("outbound", MODEL)
        self.hold("history", (60 + 10 * round_no) * MB)

    def finish_synchronization(self):
        self.free("outbound")

    def save(self):
        self.hold("serialized", MODEL)
        if self.baseline:  # kept afterwards: referenced from the namespace
            self.hold("state_dict_copy", MODEL)
            self.hold("write_buffer", 50 * MB)
            self.hold("pickle_scratch", 340 * MB)

    def finish_save(self):
        self.free("pickle_scratch")
        if not self.baseline:
            self.free("serialized")

    def teardown(self):
        # Both builds drop their reference to the state. In the final build that frees it;
        # in the baseline the state dict is still reachable from its own cycle.
        self.held = None


def admit(client, job):
    # Its states are whole bytearrays (mmapped, returned to the OS when freed): malloc keeps
    # none of them, so no allocator term (docs/admission.md); the estimate is the replay's.
    admission = client.admit(job, model_bytes=MODEL, plan="fedavg", hosts=HOSTS, allocator="")
    verdict, sign = ("admitted", "<=") if admission.admitted else ("REFUSED", ">")
    say(f"admission before claiming {HOSTS} GPU hosts (plan fedavg, model {gb(MODEL)}):")
    say(f"  baseline {gb(admission.baseline_bytes)} + reserved {gb(admission.reserved_bytes)} + "
        f"estimate {gb(admission.estimate_bytes)} {sign} budget {gb(admission.budget_bytes)} - "
        f"margin {gb(admission.margin_bytes)}: {verdict}, headroom {gb(admission.headroom_bytes)}")
    return admission


def wait_for_release(client, run_id, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = client.report(run_id)
        for v in report.get("run", {}).get("verdicts", []):
            if v.get("kind") == "release":
                return v
        time.sleep(0.2)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", choices=("baseline", "final"), required=True)
    parser.add_argument("--job", default="vit-h14-demo")
    parser.add_argument("--run-id-file", help="write the run id here")
    parser.add_argument("--release-timeout", type=float, default=15.0,
                        help="seconds to wait for the daemon's release verdict")
    args = parser.parse_args()

    if args.build == "baseline":
        # The baseline's cycles outlived the collector's young generations in the real run;
        # with automatic collection off, this short replay keeps them just as reliably.
        gc.disable()
    client = ramguard.Client()
    admission = admit(client, args.job)
    if not admission:
        say(f"not starting: {admission.reason}")
        return 3
    run = client.start_run(args.job, labels={"build": args.build}, admission=admission,
                           model_bytes=MODEL, declared_rounds=ROUNDS, hosts=HOSTS)
    if args.run_id_file:
        with open(args.run_id_file, "w") as f:
            f.write(run.run_id + "\n")
    say(f"run {run.run_id} started, pid {os.getpid()}, "
        f"baseline {gb(run.baseline.get('rss_bytes', 0))}")

    coordinator = Coordinator(args.build, run)
    coordinator.phase("load", 0, coordinator.load)
    for round_no in range(1, ROUNDS + 1):
        coordinator.phase("aggregation", round_no, lambda: coordinator.aggregate(round_no),
                          coordinator.finish_aggregation)
        time.sleep(GAPS[round_no - 1])  # evaluating the aggregated model
        coordinator.phase("synchronization", round_no,
                          lambda: coordinator.synchronize(round_no),
                          coordinator.finish_synchronization)
        if round_no < ROUNDS:
            # The final build probes the collector (RSS before/after gc.collect()); the
            # baseline never did, which is how its cycle stayed hidden.
            run.round_end(round=round_no, gc_probe=not coordinator.baseline)
            say(f"round {round_no} ended                holds {gb(ramguard.rss_bytes())}")
            time.sleep(SETTLE)
    coordinator.phase("save", 0, coordinator.save, coordinator.finish_save)
    # No wait inside end(): this coordinator drops its state after the end and then waits for
    # the release verdict itself (end() waiting would hold the state through the grace).
    end = run.end(release_wait_seconds=0)
    coordinator.teardown()
    say(f"run ended, peak {gb(end.get('peak_bytes', 0))}; state dropped, "
        f"holds {gb(ramguard.rss_bytes())}; waiting for the release verdict")
    release = wait_for_release(client, run.run_id, args.release_timeout)
    if release is None:
        say("no release verdict arrived")
        return 1
    if coordinator.baseline:
        before = ramguard.rss_bytes()
        collected = gc.collect()
        after = ramguard.rss_bytes()
        say(f"gc.collect() found {collected} objects: RSS {gb(before)} -> {gb(after)}, "
            f"{gb(before - after)} was held by reference cycles")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
