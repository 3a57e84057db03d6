"""The Python client's units (ramguard.units) against what the daemon and libramguard are held
to: the shared case table tests/data/units_cases.tsv (read by the C++ unit tests too)."""

import os
import unittest

import ramguard

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = os.path.join(ROOT, "tests", "data", "units_cases.tsv")


def _unquote(field):
    if len(field) >= 2 and field[0] == '"' and field[-1] == '"':
        return field[1:-1].replace("\\t", "\t")
    return field


def read_cases():
    cases = []
    with open(CASES, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise AssertionError(f"units_cases.tsv:{number}: expected three columns")
            cases.append((number, fields[0], _unquote(fields[1]), _unquote(fields[2])))
    return cases


class UnitsCasesTest(unittest.TestCase):
    def test_every_case_of_the_shared_table(self):
        checked = {}
        for number, kind, given, expected in read_cases():
            where = f"units_cases.tsv:{number} {kind} {given!r}"
            with self.subTest(where):
                if kind == "size":
                    self.assertEqual(ramguard.parse_size(given), int(expected))
                elif kind == "size_rejected":
                    with self.assertRaises(ValueError) as caught:
                        ramguard.parse_size(given)
                    self.assertIn(f"invalid size '{given}'", str(caught.exception))
                    self.assertIn(expected, str(caught.exception))
                elif kind == "duration":
                    self.assertEqual(ramguard.parse_duration_ns(given), int(expected))
                elif kind == "duration_rejected":
                    with self.assertRaises(ValueError) as caught:
                        ramguard.parse_duration_ns(given)
                    self.assertIn(f"invalid duration '{given}'", str(caught.exception))
                    self.assertIn(expected, str(caught.exception))
                elif kind == "bytes":
                    self.assertEqual(ramguard.format_bytes(float(given)), expected)
                elif kind == "bytes_binary":
                    self.assertEqual(ramguard.format_bytes(float(given), binary=True), expected)
                elif kind == "seconds":
                    self.assertEqual(ramguard.format_seconds(float(given)), expected)
                else:
                    self.fail(f"{where}: unknown kind")
            checked[kind] = checked.get(kind, 0) + 1
        self.assertEqual(set(checked), {"size", "size_rejected", "duration", "duration_rejected",
                                        "bytes", "bytes_binary", "seconds"})

    def test_rounding_is_half_away_from_zero_as_in_c(self):
        # 0.5 and 2.5 bytes: Python's round() would give 0 and 2 (to even), C's round() 1 and 3.
        self.assertEqual(ramguard.parse_size("0.0005kB"), 1)
        self.assertEqual(ramguard.parse_size("0.0025kB"), 3)


if __name__ == "__main__":
    unittest.main()
