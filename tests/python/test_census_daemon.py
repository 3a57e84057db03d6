"""The census against the REAL ramguardd with a real PyTorch coordinator
(client/python/examples/torch_fedavg.py --census full, vit_b_16, 3 rounds, 2 hosts): the
baseline's reference cycle and the states it keeps are named in the report and in the growth
verdict; the final build's census explains its floor above the run's baseline; the daemon
places the storages in the process's mappings. Then a small coordinator holding a file-backed
mmap tensor and a /dev/shm tensor: both classified, their resident bytes as touched.

Environment (tests/python/CMakeLists.txt): RAMGUARD_DAEMON, RAMGUARD_CLI,
RAMGUARD_FEDAVG_EXAMPLE, RAMGUARD_TEST_TMPDIR.
"""

import json
import os
import subprocess
import sys
import textwrap
import unittest

import test_torch_fedavg as fedavg

VIT = fedavg.VIT_B_16_BYTES
MB = 1000 ** 2
# A budget that a loaded CI machine does not reach on this heap (~110,000 objects; a census
# takes 0.3-0.5 s on an idle one): the census is complete, so cycles are named.
CENSUS = ("--census", "full", "--census-budget-seconds", "10")


class CensusAgainstTheRealDaemon(fedavg.TorchFedAvgAgainstTheRealDaemon):
    # The inherited tests are test_torch_fedavg's: load_tests runs only this class's own.

    def report_json(self, run_id):
        out = subprocess.run([os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket,
                              "report", run_id, "--json"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_census_baseline_names_the_cycle_and_final_explains_its_floor(self):
        summary, lines = self.run_build("baseline", extra=CENSUS)
        run_id = summary["run_id"]
        report = self.report_json(run_id)
        holders = report["holders"]
        self.assertEqual([(h["round"], h["at_end"]) for h in holders],
                         [(1, False), (2, False), (3, False), (3, True)])
        for h in holders:
            self.assertEqual(h["partial"], "", h)
            self.assertEqual(h["placement"]["error"], "")
            # Every listed storage still held when the mark is read lies in an anonymous
            # mapping (jemalloc's extents); those the round's gc probe freed are not placed.
            held = [g for g in h["groups"][:12] if "freed by the gc probe" not in g["cycle"]]
            self.assertGreater(h["placement"]["anon_bytes"],
                               0.9 * sum(g["bytes"] for g in held) - MB, h)
        # Cycle-held states: 0, 1, 2 model copies after rounds 1-3 (each round's namespace keeps
        # the state before the previous one), named from the cycle.
        cyclic = [round(h["unreachable_bytes"] / VIT, 2) for h in holders[:3]]
        self.assertEqual(cyclic, [0.0, 1.0, 2.0], holders)
        round3 = holders[2]
        unreachable = [g for g in round3["groups"] if not g["reachable"]]
        self.assertTrue(all("aggregate.__globals__[" in g["holder"] for g in unreachable),
                        unreachable)
        self.assertIn("function `aggregate`", unreachable[0]["cycle"])
        # Round 3 has the gc probe: the census (before it) names the states the probe freed.
        self.assertTrue(all("freed by the gc probe" in g["cycle"] for g in unreachable),
                        unreachable)
        self.assertFalse([g for g in holders[1]["groups"] if "freed" in g["cycle"]])
        reachable = {g["holder"] for g in round3["groups"] if g["reachable"]}
        self.assertIn("coordinator.state", reachable)  # the root the example registers
        # The growth verdict names the holder that grew, and that only a cycle keeps it.
        growth = [v for v in report["verdicts"]
                  if v["kind"] in ("growth_warning", "leak") and not v["cleared"]]
        self.assertTrue(growth, report["verdicts"])
        named = [v for v in growth if "held by `aggregate.__globals__[" in v["summary"]]
        self.assertTrue(named, [v["summary"] for v in growth])
        self.assertIn("+1.00 model copy per round", named[0]["summary"])
        self.assertIn("reachable only through a reference cycle", named[0]["summary"])
        # The release names what the end's census found still held.
        release = report["release"]
        self.assertIn("The end's census", release["summary"])
        # The text report's section.
        text = self.report_text(run_id)
        self.assertIn("What holds the memory", text)
        self.assertIn("aggregate.__globals__[", text)
        self.assertIn("unexplained", text)

        final, _ = self.run_build("final", extra=CENSUS)
        freport = self.report_json(final["run_id"])
        last = [h for h in freport["holders"] if not h["at_end"]][-1]
        self.assertEqual(last["unreachable_bytes"], 0)
        state = [g for g in last["groups"] if g["holder"] == "coordinator.state"]
        self.assertEqual(len(state), 1, last["groups"])
        self.assertEqual(state[0]["bytes"], VIT)
        # The floor above the run's baseline is what the census holds, within 10%.
        baseline = freport["baseline"]
        above = last["counted_bytes"] - (baseline["anon_bytes"] + baseline["shmem_bytes"] +
                                         baseline["swap_bytes"])
        resident = last["placement"]["resident_bytes"]
        self.assertIsNotNone(resident)
        explained = resident + last["allocator_free_bytes"]
        self.assertLess(abs(above - explained), 0.1 * above, (above, explained, last))
        # compare shows each run's top holder.
        table = self.compare([run_id, final["run_id"]], "json")
        rows = json.loads(table)
        rows = rows.get("rows", rows) if isinstance(rows, dict) else rows
        self.assertIn("top_holder", json.dumps(rows))

    def test_census_places_file_backed_and_shared_memory_tensors(self):
        code = textwrap.dedent("""
            import json, os, sys, tempfile
            sys.path.insert(0, sys.argv[1])
            import torch, ramguard
            path = os.path.join(sys.argv[2], "weights.bin")
            with open(path, "wb") as f:
                f.write(b"\\0" * 16_000_000)
            mapped = torch.from_file(path, shared=True, size=4_000_000, dtype=torch.float32)
            mapped[:1_000_000].fill_(1.0)  # 4 MB of the 16 MB touched: resident
            shm = torch.ones(2_000_000).share_memory_()  # 8 MB in /dev/shm, all touched
            client = ramguard.Client(strict=True)
            with client.start_run("census-mmap", model_bytes=8_000_000) as run:
                run.census_roots(mapped=mapped, shm=shm)
                result = run.round_end(census="roots")
            print(json.dumps({"run_id": run.run_id, "warning": result.warning}))
        """)
        env = dict(self.coordinator_env(), PYTHONPATH="")
        client_dir = os.path.join(os.path.dirname(os.path.abspath(self.example)), "..")
        out = subprocess.run([sys.executable, "-c", code, client_dir, self.workdir],
                             capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(info["warning"], "")
        census = self.report_json(info["run_id"])["holders"][0]
        placement = census["placement"]
        self.assertEqual(placement["file_bytes"], 16_000_000)
        self.assertEqual(placement["shmem_bytes"], 8_000_000)
        self.assertEqual(placement["anon_bytes"], 0)
        self.assertTrue(placement["files"][0].endswith("weights.bin"), placement)
        # Resident: the 4 MB touched of the file + the 8 MB of shared memory, and the few
        # pages past the touched ones that the kernel maps with a fault (fault-around maps up
        # to 64 KiB of page cache around each fault); far from the untouched 12 MB.
        self.assertGreaterEqual(placement["resident_bytes"], 12_000_000)
        self.assertLess(placement["resident_bytes"], 12_000_000 + 512 * 1024)
        holders = {g["holder"]: g for g in census["groups"]}
        self.assertEqual(holders["shm"]["shared_bytes"], 8_000_000)
        self.assertEqual(holders["mapped"]["bytes"], 16_000_000)


def load_tests(loader, tests, pattern):
    # Only this module's tests: the base class's come with test_torch_fedavg.
    suite = unittest.TestSuite()
    for name in loader.getTestCaseNames(CensusAgainstTheRealDaemon):
        if name.startswith("test_census"):
            suite.addTest(CensusAgainstTheRealDaemon(name))
    return suite


if __name__ == "__main__":
    unittest.main()
