"""ramguard.wire: the protocol as the Python client speaks it. Its constants against
base/include/ramguard/base/protocol.hpp (what the daemon and libramguard use), and the protobuf
JSON mapping: 64-bit integers as strings, camelCase on the wire and snake_case in Python, map
fields' keys kept as data, NaN and infinities of figures and durations, None fields dropped."""

import math
import os
import re
import unittest

import ramguard
from ramguard import wire

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTOCOL_HPP = os.path.join(ROOT, "base", "include", "ramguard", "base", "protocol.hpp")


class ProtocolConstantsTest(unittest.TestCase):
    def constant(self, text, name):
        match = re.search(r"\b" + name + r"\s*=\s*([^;]+);", text)
        self.assertIsNotNone(match, f"{name} not found in {PROTOCOL_HPP}")
        return match.group(1).strip()

    def test_python_client_uses_the_daemons_values(self):
        with open(PROTOCOL_HPP, encoding="utf-8") as f:
            text = f.read()
        # Integer expressions such as 64 * 1024 evaluate alike in C++ and Python.
        for name, value in (("kVersion", ramguard.PROTOCOL_VERSION),
                            ("kMaxRequestBytes", ramguard.MAX_REQUEST_BYTES),
                            ("kMaxReplyBytes", ramguard.MAX_REPLY_BYTES)):
            expression = self.constant(text, name)
            self.assertRegex(expression, r"^[0-9 *]+$", name)
            self.assertEqual(eval(expression, {"__builtins__": {}}), value, name)
        self.assertEqual(self.constant(text, "kSocketEnv"), f'"{ramguard.SOCKET_ENV}"')
        self.assertEqual(self.constant(text, "kRunEnv"), f'"{ramguard.RUN_ENV}"')
        self.assertEqual(self.constant(text, "kRunAttachEnv"), f'"{ramguard.ATTACH_ENV}"')
        # The backoff, the phase name rule and the failure text's limit.
        self.assertEqual(int(self.constant(text, "kRetryFirstMilliseconds")),
                         round(wire.RETRY_FIRST_SECONDS * 1000))
        self.assertEqual(int(self.constant(text, "kRetryMaxMilliseconds")),
                         round(wire.RETRY_MAX_SECONDS * 1000))
        self.assertEqual(int(self.constant(text, "kMaxPhaseBytes")), wire.PHASE_MAX_BYTES)
        self.assertIn("a-z, 0-9, '_', '.', '-'", self.constant(text, "kPhaseNameRule"))
        self.assertEqual(int(self.constant(text, "kMaxFailureBytes")), wire.MAX_FAILURE_BYTES)

    def test_the_mirror_is_one_module(self):
        # The values above are defined in ramguard.wire, not copied into other modules: one
        # place to hold to protocol.hpp.
        for name in ("PROTOCOL_VERSION", "MAX_REQUEST_BYTES", "MAX_REPLY_BYTES", "SOCKET_ENV",
                     "RUN_ENV", "ATTACH_ENV", "RETRY_FIRST_SECONDS", "RETRY_MAX_SECONDS",
                     "CENSUS_TEXT_BYTES"):
            self.assertIs(getattr(ramguard, name), getattr(wire, name), name)
        package = os.path.dirname(wire.__file__)
        for module in os.listdir(package):
            if module.endswith(".py") and module not in ("wire.py", "__init__.py"):
                with open(os.path.join(package, module), encoding="utf-8") as f:
                    defined = re.findall(r"(?m)^(PROTOCOL_VERSION|MAX_RE\w+_BYTES|\w+_ENV|"
                                         r"RETRY_\w+_SECONDS|CENSUS_TEXT_BYTES) *=", f.read())
                self.assertEqual(defined, [], f"{module} defines protocol constants")


class MappingTest(unittest.TestCase):
    def test_requests_go_camel_case_with_64_bit_integers_as_strings(self):
        body = {"model_bytes": 2_500_000_000, "declared_rounds": 3, "hosts": None,
                "labels": {"build": "final", "seed": 7},
                "allocator": {"allocated_bytes": 1, "retained_bytes": 2},
                "ranges": [{"address": 4096, "nbytes": 8192}]}
        self.assertEqual(wire._to_wire(body), {
            "modelBytes": "2500000000", "declaredRounds": 3,  # int32: stays a number
            "labels": {"build": "final", "seed": "7"},         # keys are data, values strings
            "allocator": {"allocatedBytes": "1", "retainedBytes": "2"},
            "ranges": [{"address": "4096", "nbytes": "8192"}]})

    def test_a_bool_is_never_a_64_bit_integer(self):
        self.assertEqual(wire._to_wire({"model_bytes": True}), {"modelBytes": True})

    def test_replies_come_back_snake_case_with_ints_and_special_floats(self):
        reply = {"run": {"peakBytes": "17179869184", "startedUnixMs": "1700000000000",
                         "labels": {"buildId": "x"}, "durationSeconds": "Infinity",
                         "verdicts": [{"figures": {"ratio": "NaN", "slackBytes": 3.0}}],
                         "job": "12"}}
        out = wire._from_wire(reply)
        run = out["run"]
        self.assertEqual(run["peak_bytes"], 17179869184)
        self.assertEqual(run["started_unix_ms"], 1700000000000)
        self.assertEqual(run["labels"], {"buildId": "x"})  # a map's keys are not renamed
        self.assertEqual(run["duration_seconds"], math.inf)
        self.assertTrue(math.isnan(run["verdicts"][0]["figures"]["ratio"]))
        self.assertEqual(run["verdicts"][0]["figures"]["slackBytes"], 3.0)
        self.assertEqual(run["job"], "12")  # a string field stays a string

    def test_a_64_bit_field_that_is_not_a_number_is_left_as_it_came(self):
        self.assertEqual(wire._from_wire({"peakBytes": "many"}), {"peak_bytes": "many"})

    def test_names_round_trip(self):
        for snake in ("peak_bytes", "at_unix_us", "deadline_unix_us", "run_id", "hosts"):
            self.assertEqual(wire._snake(wire._camel(snake)), snake)
        self.assertEqual(wire._camel("phase_peak_bytes"), "phasePeakBytes")

    def test_every_int64_field_is_camel_case_of_a_snake_name(self):
        for name in wire._INT64_FIELDS:
            self.assertEqual(wire._camel(wire._snake(name)), name)


class LimitsTest(unittest.TestCase):
    def test_phase_names_follow_the_daemons_rule(self):
        for good in ("load", "aggregation", "sync.2", "a_b-c", "x" * 64):
            self.assertTrue(wire._PHASE_NAME_RE.match(good), good)
        for bad in ("", "Load", "x" * 65, "a b", "phase\n", "é"):
            self.assertIsNone(wire._PHASE_NAME_RE.match(bad), repr(bad))

    def test_mark_kinds_map_to_the_protocols_enum(self):
        self.assertEqual(set(wire._MARK_KINDS.values()), {"PHASE_BEGIN", "PHASE_END", "ROUND_END"})
        for kind, value in wire._MARK_KINDS.items():
            self.assertEqual(wire._MARK_KINDS[value], value, kind)

    def test_the_failure_text_fits_the_daemons_limit(self):
        self.assertLessEqual(wire._FAILURE_MAX_BYTES, wire.MAX_FAILURE_BYTES)


if __name__ == "__main__":
    unittest.main()
