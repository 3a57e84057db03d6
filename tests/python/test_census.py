"""ramguard.census() (who holds the large objects) on real PyTorch and numpy objects,
in this process: storages counted once, groups named by their path from a root, objects held
only by a reference cycle named with the cycle's shape (without freeing them), the budget,
roots mode, nothing held after it returns, torch never imported by it; and the summary it
sends with a round end, against the fake server of test_ramguard_client."""

import gc
import json
import mmap
import os
import subprocess
import sys
import tempfile
import unittest
import weakref

import ramguard

try:  # Debian's python3-torch: a failure, not a skip, without it (the CMake test needs it)
    import numpy
    import torch
except ImportError as e:  # pragma: no cover
    raise SystemExit(f"test_census needs Debian's python3-torch and python3-numpy: {e}")

MB = 1000 * 1000
# Budgets that a loaded machine does not reach (a census here takes 0.1-0.5 s idle): the
# tests that check what a complete census finds must get one; the budget test sets its own.
BUDGET = 60.0


def state(tensors=5, elements=250_000, value=1.0):
    """A state dict: `tensors` fp32 tensors of `elements` each (1 MB each by default)."""
    return {f"layer{i}.weight": torch.full((elements,), value) for i in range(tensors)}


BASELINE_SOURCE = '''
def aggregate(updates):
    result = {k: v.clone() for k, v in previous.items()}
    history["result"] = result
    return result
'''


def baseline_round(previous):
    """The example's defect: a namespace holding `previous`, and a function whose globals are
    that namespace: a reference cycle keeping one state per round."""
    ns = {"previous": previous, "history": {}}
    exec(compile(BASELINE_SOURCE, "<aggregate>", "exec"), ns)  # noqa: S102
    return ns["aggregate"]


class Holder:
    pass


coordinator = Holder()  # a module global: its groups are named test_census.coordinator...


def group(result, holder_part):
    found = [g for g in result["groups"] if holder_part in g["holder"]]
    return found[0] if found else None


class CensusTest(unittest.TestCase):
    def setUp(self):
        self.gc_was_enabled = gc.isenabled()
        gc.disable()  # cycles stay until a census says who holds them
        coordinator.__dict__.clear()

    def tearDown(self):
        coordinator.__dict__.clear()
        if self.gc_was_enabled:
            gc.enable()
        gc.collect()

    def test_views_and_shared_storages_count_once(self):
        base = torch.zeros(1_000_000)                 # 4 MB
        coordinator.views = {"base": base, "view": base[10:20], "detached": base.detach(),
                             "reshaped": base.view(1000, 1000), "as_numpy": base.numpy()}
        del base  # else this frame's local holds it first
        coordinator.other = torch.ones(500_000)       # 2 MB, its own storage
        result = ramguard.census(min_bytes=MB, budget_seconds=BUDGET)
        views = group(result, "coordinator.views")
        self.assertIsNotNone(views, result["groups"])
        self.assertEqual(views["bytes"], 4_000_000)
        self.assertEqual(views["storages"], 1)
        self.assertGreaterEqual(views["objects"], 4)  # tensors, view and array: one storage
        other = group(result, "coordinator.other")
        self.assertEqual(other["bytes"], 2_000_000)
        self.assertEqual(other["kind"], "tensor")
        self.assertEqual(other["dtype"], "float32")
        # The totals count each storage once too.
        listed = sum(g["bytes"] for g in result["groups"]) + result["other_bytes"]
        self.assertEqual(listed, result["host_bytes"])

    def test_a_state_dict_is_one_group_sized_in_model_copies(self):
        coordinator.state = state(tensors=8)          # 8 MB
        result = ramguard.census(model_bytes=8 * MB, budget_seconds=BUDGET)
        g = group(result, "test_census.coordinator.state")
        self.assertIsNotNone(g, [x["holder"] for x in result["groups"]])
        self.assertEqual((g["kind"], g["storages"], g["bytes"]), ("state", 8, 8 * MB))
        self.assertEqual(g["model_copies"], 1.0)
        self.assertTrue(g["reachable"])
        # Its address ranges: every storage, merged where adjacent, within the group's bytes.
        self.assertEqual(sum(n for _, n in g["ranges"]), 8 * MB)
        addresses = {t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage")
                     else t.storage().data_ptr() for t in coordinator.state.values()}
        starts = [a for a, _ in g["ranges"]]
        self.assertTrue(set(starts) <= addresses, (starts, addresses))

    def test_a_module_and_its_submodules_are_one_group(self):
        coordinator.model = torch.nn.Sequential(torch.nn.Linear(1000, 500),
                                                torch.nn.Linear(500, 1000))
        result = ramguard.census(budget_seconds=BUDGET)
        g = group(result, "test_census.coordinator.model")
        self.assertIsNotNone(g, [x["holder"] for x in result["groups"]])
        self.assertEqual(g["kind"], "module")
        self.assertEqual(g["storages"], 4)
        self.assertEqual(g["bytes"], 4 * (1000 * 500 + 500 + 500 * 1000 + 1000))

    def test_a_frame_local_is_named_with_its_function(self):
        def aggregate():
            updates = [state(tensors=2, value=float(i)) for i in range(3)]
            return ramguard.census(budget_seconds=BUDGET), updates
        result, _ = aggregate()
        held = sorted((g["holder"], g["bytes"]) for g in result["groups"]
                      if g["holder"].startswith("aggregate() local 'updates'"))
        self.assertEqual(held, [(f"aggregate() local 'updates'[{i}]", 2 * MB) for i in range(3)])

    def test_the_baseline_cycle_is_named_and_not_freed(self):
        coordinator.state = state(value=0.0)
        alive = []
        for round_no in range(1, 4):
            fn = baseline_round(coordinator.state)
            coordinator.state = fn([])
            alive.append(weakref.ref(next(iter(coordinator.state.values()))))
        del fn
        original_collect = gc.collect
        gc.collect = lambda *a: self.fail("the census collected")
        try:
            result = ramguard.census(model_bytes=5 * MB, budget_seconds=BUDGET)
        finally:
            gc.collect = original_collect
        cyclic = [g for g in result["groups"] if not g["reachable"]]
        # Rounds 1-3 made three namespaces; the newest state is the coordinator's, the states
        # before it are held only by the namespaces' cycles (the original state too).
        self.assertEqual(len(cyclic), 3, [(g["holder"], g["reachable"]) for g in result["groups"]])
        for g in cyclic:
            self.assertEqual(g["model_copies"], 1.0)
            self.assertIn("aggregate.__globals__[", g["holder"])
            self.assertIn("function `aggregate`", g["cycle"])
            self.assertIn("`__globals__` is `aggregate.__globals__`", g["cycle"])
        self.assertEqual(result["unreachable_bytes"], 15 * MB)
        self.assertTrue(group(result, "test_census.coordinator.state")["reachable"])
        # Nothing was freed: the cycles' states are alive until the collector runs.
        self.assertTrue(all(ref() is not None for ref in alive))
        coordinator.state = None
        gc.collect()
        self.assertTrue(all(ref() is None for ref in alive))

    def test_no_reference_is_left_behind(self):
        coordinator.state = state()
        coordinator.blob = bytearray(2 * MB)
        refs = [weakref.ref(t) for t in coordinator.state.values()]
        storages = [weakref.ref(t.untyped_storage()) for t in coordinator.state.values()] \
            if hasattr(torch.Tensor, "untyped_storage") else []
        cyc = baseline_round(state(value=2.0))
        refs.append(weakref.ref(cyc))
        refs += [weakref.ref(t) for t in cyc.__globals__["previous"].values()]
        del cyc
        for mode in ("full", "roots"):
            run = ramguard.Run(ramguard.Client(socket_path="/nonexistent/rg.sock"), "r")
            run.census_roots(coordinator=coordinator)
            run.census(mode, budget_seconds=BUDGET)
            self.assertTrue(run.last_census["groups"])
        del run
        coordinator.__dict__.clear()
        gc.collect()  # the test's own collection: the cycle goes, and nothing else holds them
        self.assertEqual([r for r in refs + storages if r() is not None], [])

    def test_roots_mode_walks_only_the_registered_roots(self):
        model = torch.nn.Linear(1000, 1000)
        updates = [state(tensors=2) for _ in range(2)]
        coordinator.unregistered = state(tensors=4)
        run = ramguard.Run(ramguard.Client(socket_path="/nonexistent/rg.sock"), "r")
        run.census_roots(model=model, updates=updates)
        result = run.census("roots", budget_seconds=BUDGET)
        holders = sorted(g["holder"] for g in result["groups"])
        self.assertEqual(holders, ["model", "updates[0]", "updates[1]"])
        self.assertEqual(result["host_bytes"], 4 * (1000 * 1000 + 1000) + 4 * MB)
        run.census_roots(updates=None)
        self.assertEqual([g["holder"] for g in run.census("roots", budget_seconds=BUDGET)["groups"]], ["model"])

    def test_a_census_past_its_budget_says_it_is_partial(self):
        coordinator.junk = [{"k": [i]} for i in range(200_000)]
        coordinator.state = state()
        result = ramguard.census(budget_seconds=0.001)
        self.assertIn("budget", result["partial"])
        self.assertLess(result["duration_seconds"], 0.5)
        full = ramguard.census(budget_seconds=BUDGET)
        self.assertEqual(full["partial"], "")

    def test_a_census_out_of_budget_while_grouping_says_so_and_sums_the_rest(self):
        # The budget runs out after the walk: the storages not yet grouped (the smallest) are
        # summed in other_bytes, and partial says how many.
        from ramguard import largeobjects
        coordinator.big = state(tensors=1)
        coordinator.many = [torch.full((4,), float(i)) for i in range(600)]
        grouping = largeobjects._census_groups

        def late(c, complete):
            c.deadline = 0.0  # spent once the walk is done
            return grouping(c, complete)
        largeobjects._census_groups = late
        try:
            result = ramguard.census(budget_seconds=BUDGET)
        finally:
            largeobjects._census_groups = grouping
        self.assertIn("while grouping", result["partial"])
        self.assertIn("not grouped, in other_bytes", result["partial"])
        self.assertEqual(group(result, "coordinator.big")["bytes"], MB)  # the largest first
        listed = sum(g["bytes"] for g in result["groups"]) + result["other_bytes"]
        self.assertEqual(listed, result["host_bytes"])

    def test_shared_and_file_backed_tensors_are_classified(self):
        coordinator.shared = torch.ones(500_000).share_memory_()
        with tempfile.NamedTemporaryFile(dir="/var/tmp") as f:
            f.write(b"\0" * (4 * 500_000))
            f.flush()
            coordinator.mapped = torch.from_file(f.name, shared=True, size=500_000,
                                                 dtype=torch.float32)
            result = ramguard.census(budget_seconds=BUDGET)
        g = group(result, "coordinator.shared")
        self.assertIsNotNone(g, [x["holder"] for x in result["groups"]])
        self.assertEqual((g["bytes"], g["shared_bytes"]), (2 * MB, 2 * MB))
        m = group(result, "coordinator.mapped")
        self.assertEqual(m["bytes"], 2 * MB)
        mapped = coordinator.mapped
        ptr = mapped.untyped_storage().data_ptr() if hasattr(mapped, "untyped_storage") \
            else mapped.storage().data_ptr()
        self.assertEqual(m["ranges"], [[ptr, 2 * MB]])

    def test_gpu_storages_are_listed_apart(self):
        # No GPU here: a meta tensor has no storage bytes, and nothing counts as host RAM.
        coordinator.meta = torch.empty(1_000_000, device="meta")
        result = ramguard.census(budget_seconds=BUDGET)
        self.assertIsNone(group(result, "coordinator.meta"))
        self.assertEqual(result["gpu_bytes"], 0)

    def test_bytes_mmap_and_numpy_above_the_threshold(self):
        coordinator.small = b"x" * 1000
        coordinator.blob = b"y" * (3 * MB)
        coordinator.array = numpy.ones(500_000)       # 4 MB
        coordinator.array_view = coordinator.array[::2]
        coordinator.mm = mmap.mmap(-1, 2 * MB)
        try:
            result = ramguard.census(min_bytes=MB, budget_seconds=BUDGET)
            self.assertIsNone(group(result, "coordinator.small"))
            self.assertEqual(group(result, "coordinator.blob")["bytes"], 3 * MB)
            self.assertEqual(group(result, "coordinator.array")["bytes"], 4 * MB)
            self.assertIsNone(group(result, "coordinator.array_view"))  # counted in array
            self.assertEqual(group(result, "coordinator.mm")["bytes"], 2 * MB)
        finally:
            coordinator.mm.close()

    def test_a_coordinator_without_torch(self):
        code = (
            "import sys, json, numpy, ramguard\n"
            "arrays = [numpy.zeros(250_000) for _ in range(2)]\n"
            "view = arrays[0][:10]\n"
            "payload = bytes(3_000_000)\n"
            "result = ramguard.census(min_bytes=1_000_000, budget_seconds=60)\n"
            "print(json.dumps({'torch': 'torch' in sys.modules, 'result': result}))\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(ramguard.__file__)
                   if not ramguard.__file__.endswith("__init__.py")
                   else os.path.dirname(os.path.dirname(ramguard.__file__)))
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True, env=env, timeout=60).stdout
        data = json.loads(out.splitlines()[-1])
        self.assertFalse(data["torch"])
        holders = {g["holder"]: g for g in data["result"]["groups"]}
        self.assertEqual(holders["__main__.arrays"]["bytes"], 4_000_000)
        self.assertEqual(holders["__main__.arrays"]["kind"], "arrays")
        self.assertEqual(holders["__main__.payload"]["bytes"], 3_000_000)
        self.assertEqual(data["result"]["host_bytes"], 7_000_000)



class CensusWithTheMarks(unittest.TestCase):
    """What a round end sends, against test_ramguard_client's fake server: a census when asked,
    every N rounds, and at every round end while a growth warning stands; none otherwise."""

    def setUp(self):
        from test_ramguard_client import FakeServer, reply_to
        self.warn_on_round = None

        def handler(request):
            if "runStart" in request:
                return reply_to(request, runStart={"runId": "r-1"})
            if "mark" in request:
                verdicts = []
                if request["mark"].get("round") == self.warn_on_round:
                    verdicts = [{"kind": "growth_warning", "severity": "WARNING",
                                 "round": self.warn_on_round, "summary": "grows"}]
                return reply_to(request, mark={"round": request["mark"].get("round", 0),
                                               "verdicts": verdicts})
            if "runEnd" in request:
                return reply_to(request, runEnd={})
            if "report" in request:
                return reply_to(request, report={"run": {}})
            return reply_to(request)
        self.server = FakeServer(handler)
        coordinator.state = state(tensors=2)

    def tearDown(self):
        self.server.close()
        coordinator.__dict__.clear()

    def censuses(self):
        return [(r["mark"].get("round"), "census" in r["mark"]) for r in self.server.requests
                if "mark" in r]

    def test_asked_every_n_and_while_growth_stands(self):
        client = ramguard.Client(self.server.path, census_every_rounds=3,
                                 mark_timeout_seconds=5, release_wait_seconds=0,
                                 census_budget_seconds=BUDGET)
        run = client.start_run("census-job", model_bytes=2 * MB)
        run.round_end(census="roots")            # asked: 1
        run.round_end()                          # 2: not due
        run.round_end()                          # 3: every 3
        self.warn_on_round = 4
        run.round_end()                          # 4: warning raised in its reply
        run.round_end()                          # 5: the warning stands
        run.round_end(census=False)              # 6: refused explicitly
        self.assertEqual(self.censuses(), [(1, True), (2, False), (3, True), (4, False),
                                           (5, True), (6, False)])
        sent = next(r["mark"]["census"] for r in self.server.requests
                    if "mark" in r and r["mark"].get("round") == 3)
        holders = [g["holder"] for g in sent["groups"]]
        self.assertIn("test_census.coordinator.state", holders)
        group = sent["groups"][holders.index("test_census.coordinator.state")]
        self.assertEqual(group["bytes"], str(2 * MB))  # 64-bit integers travel as strings
        self.assertEqual(run.last_census["mode"], "full")
        run.end(census="full", release_wait_seconds=0)
        end = next(r["runEnd"] for r in self.server.requests if "runEnd" in r)
        self.assertIn("census", end)
        self.assertEqual(end["census"]["mode"], "full")
        client.close()

    def test_a_gc_probe_round_sends_the_ranges_still_held_after_the_probe(self):
        # The census goes before the probe (the cycle is named), the mark's reading after it:
        # the ranges the daemon places must be those still held then, as the reading's.
        client = ramguard.Client(self.server.path, mark_timeout_seconds=5,
                                 release_wait_seconds=0, census_budget_seconds=BUDGET)
        run = client.start_run("census-job", model_bytes=2 * MB)
        enabled = gc.isenabled()
        gc.disable()  # the cycle lives until the probe collects it
        try:
            for probe in (False, True):
                coordinator.state = state(tensors=2, value=1.0)
                fn = baseline_round(coordinator.state)
                coordinator.state = fn([])  # the previous state: held only by fn's cycle
                del fn
                run.round_end(gc_probe=probe, census="full")
                sent = [r["mark"] for r in self.server.requests if "mark" in r][-1]
                groups = {g["holder"]: g for g in sent["census"]["groups"]}
                held = groups["test_census.coordinator.state"]
                cyclic = [g for g in sent["census"]["groups"] if not g["reachable"]]
                self.assertEqual(len(cyclic), 1, list(groups))
                self.assertEqual(sum(int(r["nbytes"]) for r in held["ranges"]), 2 * MB)
                self.assertEqual(cyclic[0]["bytes"], str(2 * MB))  # what the census found
                self.assertIn("function `aggregate`", cyclic[0]["cycle"])
                if probe:
                    self.assertIn("gc", sent)
                    self.assertEqual(cyclic[0].get("ranges", []), [])
                    self.assertIn("freed by the gc probe", cyclic[0]["cycle"])
                    self.assertEqual(run.last_census["gc_freed_bytes"], 2 * MB)
                else:
                    self.assertEqual(sum(int(r["nbytes"]) for r in cyclic[0]["ranges"]), 2 * MB)
                    self.assertNotIn("freed", cyclic[0]["cycle"])
                    self.assertNotIn("gc_freed_bytes", run.last_census)
                    gc.collect()
        finally:
            if enabled:
                gc.enable()
        # The census kept only weak references: what it watched is gone with the state.
        coordinator.state = None
        gc.collect()
        self.assertFalse([o for o in gc.get_objects() if isinstance(o, torch.Tensor)
                          and o.numel() == 250_000])
        client.close()

    def test_a_census_mark_waits_for_its_placement_too(self):
        # ramguardd places the census's ranges before it answers: the mark's deadline (which
        # the daemon drops it past) allows for that beyond the mark timeout.
        client = ramguard.Client(self.server.path, mark_timeout_seconds=1.0,
                                 census_budget_seconds=BUDGET)
        run = client.start_run("census-job")
        run.round_end(census="roots")
        run.round_end(census=False)
        waits = [(int(r["mark"]["deadlineUnixUs"]) - int(r["mark"]["atUnixUs"])) / 1e6
                 for r in self.server.requests if "mark" in r]
        self.assertEqual(len(waits), 2)
        self.assertGreater(waits[0], 1.19)
        self.assertLess(waits[1], 1.1)
        client.close()

    def test_control_characters_are_escaped_before_sending(self):
        coordinator.__dict__["we\x1bird"] = state(tensors=1)
        coordinator.__dict__["weird"] = coordinator.__dict__.pop("we\x1bird")
        client = ramguard.Client(self.server.path, mark_timeout_seconds=5,
                                 census_budget_seconds=BUDGET)
        run = client.start_run("census-job")
        run.round_end(census=True)
        sent = next(r["mark"]["census"] for r in self.server.requests if "mark" in r)
        holders = [g["holder"] for g in sent["groups"]]
        self.assertIn("test_census.coordinator.we\\x1bird", holders)
        self.assertTrue(all(h.isprintable() for h in holders), holders)
        client.close()

if __name__ == "__main__":
    unittest.main()
