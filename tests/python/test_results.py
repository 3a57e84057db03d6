"""ramguard.results: the loop's typed results. Built from replies keeping known fields only (a
newer daemon may send more), answering reply["field"] and .get() as the dicts they replaced did
(never a private attribute), and the words a verdict is shown with."""

import math
import unittest

import ramguard
from ramguard import results


class FieldsTest(unittest.TestCase):
    def test_known_fields_only_and_dict_access(self):
        reading = ramguard.Reading.from_reply({"rss_bytes": 5, "complete": True,
                                               "from_a_newer_daemon": 1})
        self.assertEqual(reading.rss_bytes, 5)
        self.assertEqual(reading["rss_bytes"], 5)
        self.assertEqual(reading.get("complete"), True)
        self.assertFalse(hasattr(reading, "from_a_newer_daemon"))
        self.assertIsNone(reading.get("from_a_newer_daemon"))
        self.assertEqual(reading.get("nothing", 7), 7)
        with self.assertRaises(KeyError):
            reading["from_a_newer_daemon"]
        with self.assertRaises(KeyError):
            reading["__dict__"]
        with self.assertRaises(KeyError):
            reading[0]

    def test_a_missing_reading_is_a_zero_one(self):
        self.assertEqual(ramguard.Reading.from_reply(None), ramguard.Reading())


class VerdictTest(unittest.TestCase):
    def verdict(self, **fields):
        return ramguard.Verdict.from_reply(dict({"kind": "growth_warning",
                                                 "severity": "WARNING"}, **fields))

    def test_result_and_heading(self):
        self.assertEqual(self.verdict().heading, "[warning] growth_warning fail")
        self.assertTrue(self.verdict().alarming)
        self.assertEqual(self.verdict(passed=True).result, "pass")
        cleared = self.verdict(cleared=True)
        self.assertEqual(cleared.result, "cleared")
        self.assertFalse(cleared.alarming)

    def test_release_words(self):
        kept = self.verdict(kind="release", severity="INFO")
        self.assertEqual(kept.result, "allocator")
        self.assertFalse(kept.alarming)
        unverified = self.verdict(kind="release", figures={"not_verified": 1.0})
        self.assertEqual(unverified.result, "not_verified")
        self.assertEqual(self.verdict(kind="release", severity="CRITICAL").result, "fail")

    def test_figures_are_the_verdicts_own(self):
        figures = {"ratio": 0.5}
        v = self.verdict(figures=figures)
        figures["ratio"] = 9.0
        self.assertEqual(v.figures, {"ratio": 0.5})

    def test_verdicts_of_a_reply(self):
        reply = {"verdicts": [{"kind": "leak"}, {"kind": "release"}]}
        self.assertEqual([v.kind for v in results._verdicts(reply)], ["leak", "release"])
        self.assertEqual(results._verdicts({}), [])


class NonFinitePathTest(unittest.TestCase):
    def test_names_the_first_nan_or_infinity(self):
        self.assertEqual(results._non_finite_path({"mark": {"figures": {"x": 1.0}}}), "")
        self.assertEqual(results._non_finite_path({"mark": {"budget": math.inf}}),
                         "mark.budget")
        self.assertEqual(results._non_finite_path({"a": [1.0, {"b": math.nan}]}), "a[1].b")
        self.assertEqual(results._non_finite_path(math.nan), "the value")


if __name__ == "__main__":
    unittest.main()
