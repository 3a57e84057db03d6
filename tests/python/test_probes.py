"""ramguard.probes: this process's memory as the client reports it. rss_bytes from statm, the
allocator's figures mapped to the protocol's AllocatorStats (and withheld when they contradict
themselves, which the daemon would refuse), and the gc probe around a real gc.collect()."""

import gc
import os
import tempfile
import unittest

import ramguard
from ramguard import probes

STATS = {"available": True, "allocated_bytes": 100, "active_bytes": 120,
         "resident_bytes": 200, "free_bytes": 80}


class AllocatorWireTest(unittest.TestCase):
    def test_the_facts_as_the_protocol_names_them(self):
        self.assertEqual(probes._allocator_wire(STATS), {
            "allocated_bytes": 100, "active_bytes": 120, "resident_bytes": 200,
            "retained_bytes": 80})

    def test_nothing_when_the_probe_could_not_run(self):
        self.assertIsNone(probes._allocator_wire({"available": False, "reason": "no symbols"}))
        self.assertIsNone(probes._allocator_wire({}))

    def test_nothing_when_the_figures_contradict_themselves(self):
        self.assertIsNone(probes._allocator_wire(dict(STATS, allocated_bytes=201)))
        self.assertIsNone(probes._allocator_wire(dict(STATS, free_bytes=201)))
        self.assertIsNotNone(probes._allocator_wire(dict(STATS, allocated_bytes=200)))

    def test_the_live_probe_maps_to_consistent_facts(self):
        wire = probes._allocator_wire(ramguard.allocator_stats())
        self.assertIsNotNone(wire)  # glibc's mallinfo2 is there in this test's process
        self.assertLessEqual(wire["allocated_bytes"], wire["resident_bytes"])
        self.assertEqual(set(wire), {"allocated_bytes", "active_bytes", "resident_bytes",
                                     "retained_bytes"})


class RssTest(unittest.TestCase):
    def test_second_field_of_statm_in_pages(self):
        with tempfile.NamedTemporaryFile("w", suffix=".statm") as f:
            f.write("5 3 1 0 0 2 0\n")
            f.flush()
            self.assertEqual(probes.rss_bytes(f.name), 3 * os.sysconf("SC_PAGE_SIZE"))


class GcProbeTest(unittest.TestCase):
    def test_counts_what_the_collector_frees(self):
        gc.collect()
        for _ in range(100):
            a, b = [], []
            a.append(b)
            b.append(a)  # a cycle only the collector frees
        del a, b
        probe = probes._gc_probe()
        self.assertGreaterEqual(probe["collected_objects"], 200)
        self.assertGreater(probe["rss_before_bytes"], 0)
        self.assertGreater(probe["rss_after_bytes"], 0)
        self.assertGreaterEqual(probe["duration_seconds"], 0.0)


if __name__ == "__main__":
    unittest.main()
