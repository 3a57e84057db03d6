#!/usr/bin/env python3
"""spank_ramguard.so in a real one-node Slurm cluster.

Starts munged, slurmctld and slurmd as root with a private slurm.conf and plugstack.conf in a
temp dir (private ports chosen now, spool and state in the temp dir, proctrack/linuxproc,
task/none), and ramguardd on a private socket with a 2 GB budget, then checks:
  - srun --ramguard-estimate past the budget fails before the task runs (its marker file never
    appears) with the admission's reason on stderr;
  - an admitted srun of a Python coordinator that leaks across rounds (client/python/ramguard,
    whose start_run attaches to the step's run) ends with the growth verdict in the job's stderr,
    and the run is in the ledger with its Slurm labels;
  - an sbatch batch script is guarded (its run, its verdict lines in the job's output file);
  - a task killed by a signal ends its run `exited`;
  - ramguardd down: required=no runs the task with a warning, required=yes refuses it.
Every daemon it started is stopped by PID, also on failure. Exit 77 (skip) only when not root,
or munged or slurmd cannot start here.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
MB = 1000 ** 2


class Skip(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


COORDINATOR = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
import ramguard

def touched(n):
    b = bytearray(n)
    b[::4096] = b"\x01" * len(range(0, n, 4096))
    return b

client = ramguard.Client()
# Inside a guarded step this joins the step's run (RAMGUARD_RUN) instead of starting another.
run = client.start_run("ignored-inside-slurm")
print("attached", run.run_id, "owned" if run.owned else "not-owned", flush=True)
kept = []
for _ in range(5):
    with run.phase("aggregation"):
        kept.append(touched(48 * 1000 * 1000))  # never freed: a leak across rounds
    run.round_end()
    time.sleep(0.5)  # the boundary's settle window
'''


class Cluster:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.procs = {}  # name -> Popen, stopped by PID in stop()
        self.env = dict(os.environ, SLURM_CONF=os.path.join(work, "slurm.conf"))
        for k in list(self.env):
            if k.startswith(("SLURM_SPANK_", "RAMGUARD_")):
                del self.env[k]
        self.host = socket.gethostname().split(".")[0]
        self.rg_socket = os.path.join(work, "rg.sock")

    # -- daemons --------------------------------------------------------------------------

    def spawn(self, name, argv, **kw):
        log = open(os.path.join(self.work, name + ".out"), "w")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, **kw)
        return self.procs[name]

    def stop_one(self, name):
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop(self):
        for name in ["slurmd", "slurmctld", "ramguardd", "munged"]:
            self.stop_one(name)
        # A slurmstepd that outlived its slurmd (e.g. still retrying a step's completion message
        # after a failure here) is ours when it carries our SLURM_CONF: stopped by its PID.
        mine = ("SLURM_CONF=" + self.env["SLURM_CONF"]).encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != "slurmstepd":
                        continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mine in f.read().split(b"\0"):
                        os.kill(int(pid), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass

    def log(self, name):
        path = os.path.join(self.work, name)
        return open(path).read() if os.path.exists(path) else ""

    def start_munge(self):
        if not shutil.which(self.args.munged):
            raise Skip("munged not installed")
        key = os.path.join(self.work, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.munge_socket = os.path.join(self.work, "munge.sock")
        p = self.spawn("munged", [self.args.munged, "-F", "--force", "--socket", self.munge_socket,
                                  "--key-file", key, "--log-file", os.path.join(self.work, "munged.log"),
                                  "--pid-file", os.path.join(self.work, "munged.pid"),
                                  "--seed-file", os.path.join(self.work, "munged.seed")])
        if not wait_for(lambda: os.path.exists(self.munge_socket) or p.poll() is not None, 10) \
                or p.poll() is not None:
            raise Skip("munged cannot start here: " + self.log("munged.out") + self.log("munged.log"))

    def write_slurm_conf(self, required):
        for d in ("state", "spool"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)
        w = self.work
        conf = f"""ClusterName=rgtest
SlurmctldHost={self.host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={w}/state
SlurmdSpoolDir={w}/spool
SlurmctldPidFile={w}/slurmctld.pid
SlurmdPidFile={w}/slurmd.pid
SlurmctldLogFile={w}/slurmctld.log
SlurmdLogFile={w}/slurmd.log
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
PlugStackConfig={w}/plugstack.conf
KillWait=5
InactiveLimit=0
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""
        with open(os.path.join(w, "slurm.conf"), "w") as f:
            f.write(conf)
        with open(os.path.join(w, "plugstack.conf"), "w") as f:
            f.write(f"required {self.args.plugin} socket={self.rg_socket} default_plan=fedavg "
                    f"required={'yes' if required else 'no'} timeout=2s verdict_wait=3s\n")

    def start_slurm(self):
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        self.write_slurm_conf(required=False)
        conf = os.path.join(self.work, "slurm.conf")
        self.spawn("slurmctld", [self.args.slurmctld, "-D", "-c", "-i", "-f", conf])
        self.spawn("slurmd", [self.args.slurmd, "-D", "-f", conf, "-N", self.host])
        if not wait_for(lambda: self.node_state() == "idle" or self.dead(), 30, 0.3):
            raise Skip("slurmd/slurmctld did not bring the node up: state "
                       f"{self.node_state()!r}\n{self.log('slurmctld.log')[-2000:]}"
                       f"\n{self.log('slurmd.log')[-2000:]}\n{self.log('slurmd.out')[-1000:]}")
        if self.dead():
            raise Skip("slurmd or slurmctld exited:\n" + self.log("slurmd.out") +
                       self.log("slurmctld.out"))

    def dead(self):
        return any(self.procs[n].poll() is not None for n in ("slurmctld", "slurmd"))

    def node_state(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
                           text=True, timeout=10)
        return r.stdout.strip().rstrip("*")

    def reconfigure(self, required):
        wait_for(lambda: self.node_state() == "idle", 30, 0.3)
        self.write_slurm_conf(required)
        # slurmd hands plugstack.conf to each new slurmstepd; a reconfigure makes it re-read.
        subprocess.run(["scontrol", "reconfigure"], env=self.env, check=True, timeout=30)
        time.sleep(1.0)
        if not wait_for(lambda: self.node_state() == "idle", 40, 0.3):
            raise AssertionError("node not idle after reconfigure: " + self.node_state())

    def start_ramguardd(self):
        config = os.path.join(self.work, "ramguard.yaml")
        with open(config, "w") as f:
            f.write("budget: 2GB\ngrowth:\n  min_bytes: 32MB\n  settle: 300ms\n"
                    "release:\n  grace: 2s\n")
        p = self.spawn("ramguardd", [self.args.daemon, "--config", config, "--socket",
                                     self.rg_socket, "--state-dir",
                                     os.path.join(self.work, "rgstate"), "--metrics",
                                     "127.0.0.1:0"])
        if not wait_for(lambda: "daemon.ready" in self.log("ramguardd.out") or p.poll() is not None,
                        20):
            raise AssertionError("ramguardd did not start:\n" + self.log("ramguardd.out"))
        if p.poll() is not None:
            raise AssertionError("ramguardd exited:\n" + self.log("ramguardd.out"))

    # -- clients --------------------------------------------------------------------------

    def srun(self, *argv, timeout=60, env=None):
        e = dict(self.env, **(env or {}))
        r = subprocess.run(["srun", "-N1", "-n1", *argv], env=e, capture_output=True,
                           text=True, timeout=timeout, cwd=self.work)
        print(f"srun {' '.join(argv)} -> exit {r.returncode}", flush=True)
        return r

    def cli(self, *argv):
        r = subprocess.run([self.args.cli, "--socket", self.rg_socket, *argv], env=self.env,
                           capture_output=True, text=True, timeout=30)
        return r

    def runs_json(self):
        r = self.cli("--json", "runs", "--limit", "100")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout).get("runs", [])


def check(condition, what, detail=""):
    if not condition:
        raise AssertionError(what + ("\n" + str(detail) if detail else ""))
    print("ok:", what, flush=True)


def job_id_of(run):
    return run.get("labels", {}).get("slurm_job_id")


def test_refused(c):
    marker = os.path.join(c.work, "refused.marker")
    r = c.srun("--ramguard-estimate=100GB", "--ramguard-job=too-big", "touch", marker)
    out = r.stdout + r.stderr
    check(r.returncode != 0, "an estimate past the budget fails the step", out)
    time.sleep(0.5)
    check(not os.path.exists(marker), "the refused task never ran (no marker file)", out)
    check("refused" in out and "100.00 GB" in out and "budget" in out,
          "the admission's reason with its terms is on the user's stderr", out)


def test_leak(c):
    coord = os.path.join(c.work, "coordinator.py")
    with open(coord, "w") as f:
        f.write(COORDINATOR)
    r = c.srun("--ramguard-estimate=400MB", "--ramguard-rounds=5", "--job-name=leaky",
               sys.executable, coord, c.args.python_client, timeout=90)
    out = r.stdout + r.stderr
    print(r.stderr, flush=True)
    check(r.returncode == 0, "the admitted coordinator's step succeeds", out)
    attached = [l.split() for l in r.stdout.splitlines() if l.startswith("attached ")]
    check(attached and attached[0][2] == "not-owned",
          "the Python client's start_run attached to the step's run", out)
    run_id = attached[0][1]
    check("ramguard: run " + run_id in r.stderr, "the run's summary line is in the job's stderr", out)
    check(any(k in r.stderr for k in ("growth_warning", " leak:")),
          "the growth verdict is in the job's stderr", out)
    runs = {x["runId"]: x for x in c.runs_json()}
    check(run_id in runs, "the run is in the ledger", json.dumps(list(runs)))
    labels = runs[run_id].get("labels", {})
    check(labels.get("slurm_step_id") == "0" and labels.get("slurm_user") == "root"
          and labels.get("slurm_cluster") == "rgtest" and labels.get("slurm_job_id", "").isdigit(),
          "the run carries its Slurm labels", json.dumps(labels))
    check(runs[run_id].get("job") == "leaky", "the run's job is the Slurm job name",
          json.dumps(runs[run_id]))
    listed = c.cli("--json", "runs", "--label", "slurm_job_id=" + labels["slurm_job_id"])
    check(listed.returncode == 0
          and [x["runId"] for x in json.loads(listed.stdout).get("runs", [])] == [run_id],
          "ramguard runs --label slurm_job_id=N lists exactly the job's run",
          listed.stdout[:2000] + listed.stderr)
    text = c.cli("runs", "--label", "slurm_job_id=" + labels["slurm_job_id"])
    check(text.returncode == 0 and run_id in text.stdout, "... also as a table", text.stdout)
    cmp = c.cli("compare", "--label", "slurm_job_id=" + labels["slurm_job_id"])
    check(cmp.returncode == 0 and run_id in cmp.stdout,
          "compare --label slurm_job_id=N finds the run", cmp.stdout + cmp.stderr)


def test_signal(c):
    # The estimate from the environment this time (SLURM_SPANK_RAMGUARD_*), not an option.
    r = c.srun("--job-name=killed", "bash", "-c", "kill -9 $$",
               env={"SLURM_SPANK_RAMGUARD_ESTIMATE": "100MB"})
    out = r.stdout + r.stderr
    check(r.returncode != 0, "the killed task fails its step", out)
    # srun terminates a step whose task died by a signal at once and may stop reading before
    # slurmstepd's lines after the death arrive (a batch job's output file always gets them):
    # the step's log has them for sure.
    check(wait_for(lambda: "(killed) exited" in c.log("slurmd.log")
                   and "CRITICAL exited:" in c.log("slurmd.log"), 10),
          "the run's end `exited` and its verdict are in the step's messages",
          c.log("slurmd.log")[-2000:])
    killed = [x for x in c.runs_json() if x.get("job") == "killed"]
    check(killed and killed[0]["state"] == "exited"
          and any(v["kind"] == "exited" for v in killed[0].get("verdicts", [])),
          "the ledger has the exited run with its exited verdict", json.dumps(killed)[:2000])
    check(int(killed[0].get("estimateBytes", 0)) == 100 * MB,
          "SLURM_SPANK_RAMGUARD_ESTIMATE was the admitted estimate", json.dumps(killed[0])[:2000])


def test_sbatch(c):
    script = os.path.join(c.work, "batch.sh")
    output = os.path.join(c.work, "batch.out")
    marker = os.path.join(c.work, "batch.marker")
    with open(script, "w") as f:
        f.write(f"#!/bin/bash\n#SBATCH --ramguard-estimate=200MB\n#SBATCH --job-name=batchy\n"
                f"#SBATCH --ramguard-scope=tree\n"
                f"#SBATCH --output={output}\n"
                f"echo run=$RAMGUARD_RUN > {marker}\nsleep 1\n")
    r = subprocess.run(["sbatch", "--parsable", script], env=c.env, capture_output=True,
                       text=True, timeout=30, cwd=c.work)
    check(r.returncode == 0, "sbatch takes the script", r.stdout + r.stderr)
    job = r.stdout.strip().split(";")[0]
    done = wait_for(lambda: subprocess.run(["squeue", "-h", "-j", job], env=c.env,
                                           capture_output=True, text=True).stdout.strip() == ""
                    and os.path.exists(output) and "ramguard: run" in open(output).read(), 60, 0.3)
    text = open(output).read() if os.path.exists(output) else ""
    check(done, "the batch job finished with the run's summary in its output", text)
    runs = [x for x in c.runs_json() if job_id_of(x) == job]
    check(len(runs) == 1 and runs[0]["labels"].get("slurm_step_id") == "batch",
          "the batch step is one run labelled slurm_step_id=batch", json.dumps(runs)[:2000])
    report = c.cli("--json", "report", runs[0]["runId"])
    check(report.returncode == 0 and json.loads(report.stdout)["run"].get("scope") == "tree",
          "--ramguard-scope=tree is the run's scope", report.stdout[:2000] + report.stderr)
    check(open(marker).read().strip() == "run=" + runs[0]["runId"],
          "the batch script saw RAMGUARD_RUN of its run", open(marker).read())


def test_daemon_down(c):
    c.stop_one("ramguardd")
    marker = os.path.join(c.work, "unguarded.marker")
    r = c.srun("--ramguard-estimate=100MB", "touch", marker)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and os.path.exists(marker),
          "required=no: with ramguardd down the task runs", out)
    check("unguarded" in r.stderr, "required=no: the user is warned the step is unguarded", out)

    c.reconfigure(required=True)
    marker = os.path.join(c.work, "required.marker")
    r = c.srun("--ramguard-estimate=100MB", "touch", marker)
    out = r.stdout + r.stderr
    check(r.returncode != 0, "required=yes: with ramguardd down the step fails", out)
    time.sleep(0.5)
    check(not os.path.exists(marker), "required=yes: the task never ran", out)
    check("required and unreachable" in r.stderr, "required=yes: the reason is on stderr", out)

    # A daemon that accepts and never answers: the plugin's per-call timeout (2 s here) bounds
    # the wait, and slurmstepd goes on (required=yes: refused, saying so).
    with socket.socket(socket.AF_UNIX) as hung:
        hung.bind(c.rg_socket)
        hung.listen(8)
        marker = os.path.join(c.work, "hung.marker")
        started = time.monotonic()
        r = c.srun("--ramguard-estimate=100MB", "touch", marker)
        elapsed = time.monotonic() - started
    os.unlink(c.rg_socket)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and not os.path.exists(marker) and "required and unreachable" in out,
          "a daemon that never answers: the step is refused, not hung", out)
    check(elapsed < 15, f"a daemon that never answers costs the step {elapsed:.1f} s (< 15 s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python-client", required=True)
    ap.add_argument("--munged", default="munged")
    ap.add_argument("--slurmctld", default="slurmctld")
    ap.add_argument("--slurmd", default="slurmd")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    args = ap.parse_args()
    for name in ("plugin", "daemon", "cli", "python_client"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    if os.geteuid() != 0:
        print("SKIP: needs root (munged, slurmctld and slurmd run as root here)")
        return SKIP
    for tool in ("slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scontrol"):
        if not shutil.which(getattr(args, tool, tool)):
            print(f"SKIP: {tool} not installed (Debian: slurm-wlm)")
            return SKIP
    work = tempfile.mkdtemp(prefix="rgslurm-")
    os.chmod(work, 0o755)
    c = Cluster(args, work)
    started = time.monotonic()
    failed = True
    try:
        c.start_munge()
        c.start_ramguardd()
        c.start_slurm()
        test_refused(c)
        test_leak(c)
        test_signal(c)
        test_sbatch(c)
        test_daemon_down(c)
        failed = False
        print(f"slurm_spank_test: all checks passed in {time.monotonic() - started:.1f} s")
        return 0
    except Skip as e:
        failed = False
        print("SKIP:", e)
        return SKIP
    except Exception as e:  # an assertion, or a tool that failed or timed out
        print("FAIL:", type(e).__name__, e)
        for name in ("slurmd.log", "ramguardd.out"):
            print(f"--- {name} (tail)\n{c.log(name)[-3000:]}")
        return 1
    finally:
        c.stop()
        if args.keep or failed:
            print("logs kept in", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
