"""ramguard.run's local rules, before anything is sent: the daemon's rule for phase names (a
typo is the caller's ValueError at once), the failure text a run or phase left by an exception
carries (one line, the type first, within the daemon's limit, whatever __str__ does), and no
stray keyword arguments."""

import unittest

import ramguard
from ramguard import run, wire


class BrokenStr(Exception):
    def __str__(self):
        raise RuntimeError("no text")


class DescribeTest(unittest.TestCase):
    def test_type_then_message_on_one_line(self):
        self.assertEqual(run._describe(ValueError, ValueError("bad\nshape\x1b[31m")),
                         "ValueError: bad shape [31m")
        self.assertEqual(run._describe(KeyError, None), "KeyError")

    def test_a_broken_str_leaves_the_type(self):
        self.assertEqual(run._describe(BrokenStr, BrokenStr()), "BrokenStr")

    def test_cut_within_the_limit_on_a_character(self):
        text = run._describe(ValueError, ValueError("é" * 500))
        self.assertLessEqual(len(text.encode()), wire._FAILURE_MAX_BYTES)
        self.assertTrue(text.startswith("ValueError: éé"))
        text.encode("utf-8")  # whole characters only


class PhaseNameTest(unittest.TestCase):
    def test_the_daemons_rule(self):
        run._check_phase("aggregation")
        for bad in ("", "Aggregation", "x" * 65, None):
            with self.assertRaisesRegex(ValueError, "invalid phase name"):
                run._check_phase(bad)

    def test_a_run_refuses_a_bad_name_before_sending(self):
        client = ramguard.Client(socket_path="/nonexistent/ramguard.sock", strict=True)
        with self.assertRaisesRegex(ValueError, "invalid phase name 'Load'"):
            ramguard.Run(client, "r-1").phase("Load")


class LegacyArgumentsTest(unittest.TestCase):
    def test_unknown_keywords_are_a_type_error(self):
        run._no_legacy({})
        with self.assertRaisesRegex(TypeError, r"\['round'\]"):
            run._no_legacy({"round": 1})


if __name__ == "__main__":
    unittest.main()
