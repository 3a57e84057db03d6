"""The first run's estimate (the fedavg plan, no history) against the REAL daemon's exact peak
for both FedAvg coordinators under both C allocators: client/python/examples/torch_fedavg.py
(hosts simulated in the process) and torch_fedavg_hosts.py (hosts in processes, states sent
serialized through pipes), each under glibc malloc and under jemalloc, with vit_s_16 (88 MB of
fp32 state), 2 rounds, 2 hosts. estimate / peak must be within [0.87, 1.15]; a glibc
coordinator's reason names the allocator term and its remedy, a jemalloc one's has none.

The runs are tests/tools/estimate_table.py's (the table in docs/admission.md): one definition of
how a run is measured. Environment (tests/python/CMakeLists.txt): RAMGUARD_DAEMON,
RAMGUARD_ESTIMATE_TABLE (the script), RAMGUARD_TEST_TMPDIR.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

LOW, HIGH = 0.87, 1.15


def load_table():
    spec = importlib.util.spec_from_file_location("estimate_table",
                                                  os.environ["RAMGUARD_ESTIMATE_TABLE"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FirstEstimateUnderBothAllocators(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Missing torch or jemalloc is a failure, not a skip: this is the estimate's evidence.
        probe = subprocess.run(["/usr/bin/python3", "-c", "import torch, torchvision"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise AssertionError("/usr/bin/python3 cannot import torch and torchvision (install "
                                 f"python3-torch and python3-torchvision):\n{probe.stderr}")
        cls.table = load_table()
        if cls.table.find_jemalloc() is None:
            raise AssertionError("libjemalloc.so.2 not found (install Debian's libjemalloc2)")
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-estimate-", dir=base)
        cls.daemon = cls.table.Daemon(os.environ["RAMGUARD_DAEMON"], cls.workdir)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def test_both_shapes_under_both_allocators(self):
        started = time.monotonic()
        for shape in ("example", "hosts"):
            for allocator in ("glibc", "jemalloc"):
                with self.subTest(shape=shape, allocator=allocator):
                    r = self.table.measure(self.daemon.socket, shape, "vit_s_16", allocator,
                                           rounds=2, workdir=self.workdir)
                    sys.stderr.write(self.table.row(r) + f" {r['seconds']} s\n")
                    self.assertIn(f"claimed 2 hosts", r["output"])
                    if shape == "hosts":
                        self.assertIn("states sent through pipes", r["output"])
                    reason = r["reason"]
                    self.assertTrue(reason.startswith("admitted"), reason)
                    self.assertIn("plan fedavg, aggregation dominates", reason)
                    if allocator == "glibc":
                        self.assertIn("; allocator: glibc malloc keeps ~", reason)
                        self.assertIn("remedy: run it under jemalloc", reason)
                    else:
                        self.assertNotIn("allocator", reason)
                    self.assertGreaterEqual(r["ratio"], LOW, r)
                    self.assertLessEqual(r["ratio"], HIGH, r)
        sys.stderr.write(f"four runs: {time.monotonic() - started:.1f} s\n")


if __name__ == "__main__":
    unittest.main()
