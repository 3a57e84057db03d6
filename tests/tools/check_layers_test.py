#!/usr/bin/env python3
"""check_layers.py on small made-up trees: it must pass a clean one and name every violation."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run(root, *extra):
    return subprocess.run([sys.executable, SCRIPT, "--root", root, *extra],
                          capture_output=True, text=True, check=False)


class CheckLayersTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp(prefix="layers-")
        # "model" is declared but has no directory: tolerated.
        write(root, "daemon/CMakeLists.txt",
              "# order\nset(RAMGUARD_DAEMON_MODULES common model procfs runs store)\n")
        write(root, "daemon/main.cpp", '#include "store/store.hpp"\n')
        write(root, "daemon/common/units.hpp", "#pragma once\n")
        write(root, "daemon/procfs/parse.hpp", '#include "ramguard/base/units.hpp"\n#include "parse.hpp"\n')
        write(root, "daemon/runs/run.hpp", '#include "procfs/parse.hpp"\n#include <vector>\n')
        write(root, "daemon/store/store.hpp", '#include "runs/run.hpp"\n')
        write(root, "client/cpp/src/codec.hpp", "#pragma once\n")
        write(root, "client/cpp/src/client.cpp",
              '#include "codec.hpp"\n#include "ramguard/base/units.hpp"\n')
        for path, text in files.items():
            write(root, path, text)
        return root

    def test_clean_tree_passes_and_writes_the_stamp(self):
        root = self.tree({})
        stamp = os.path.join(root, "stamp")
        result = run(root, "--stamp", stamp)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("layer check: ok", result.stdout)
        self.assertIn("common < model < procfs < runs < store", result.stdout)
        self.assertTrue(os.path.exists(stamp))

    def test_upward_includes_are_named(self):
        root = self.tree({
            "daemon/runs/run.cpp": '#include "store/store.hpp"\n',
            "daemon/procfs/proc.cpp": '#include "../runs/run.hpp"\n',
        })
        stamp = os.path.join(root, "stamp")
        result = run(root, "--stamp", stamp)
        self.assertEqual(result.returncode, 1)
        self.assertIn('daemon/runs/run.cpp:1: runs includes "store/store.hpp", but store comes '
                      'after runs', result.stderr)
        self.assertIn('daemon/procfs/proc.cpp:1: procfs includes "../runs/run.hpp"', result.stderr)
        self.assertIn("2 violation(s)", result.stderr)
        self.assertFalse(os.path.exists(stamp))

    def test_control_reaches_admission_only_through_its_face_and_never_procfs(self):
        root = self.tree({
            "daemon/CMakeLists.txt":
                "set(RAMGUARD_DAEMON_MODULES common procfs admission runs control)\n",
            "daemon/admission/desk.hpp": "#pragma once\n",
            "daemon/admission/estimator.hpp": "#pragma once\n",
            "daemon/control/dispatcher.cpp":
                '#include "admission/desk.hpp"\n#include "admission/estimator.hpp"\n'
                '#include "procfs/parse.hpp"\n#include "runs/run.hpp"\n',
        })
        result = run(root)
        self.assertEqual(result.returncode, 1)
        self.assertIn('daemon/control/dispatcher.cpp:2: control includes '
                      '"admission/estimator.hpp"; control may use admission only through '
                      'admission/admission.hpp, admission/desk.hpp, admission/sources.hpp',
                      result.stderr)
        self.assertIn('daemon/control/dispatcher.cpp:3: control includes "procfs/parse.hpp"; '
                      'control may not use procfs', result.stderr)
        self.assertNotIn("dispatcher.cpp:1:", result.stderr)
        self.assertNotIn("dispatcher.cpp:4:", result.stderr)

    def test_warn_only_reports_but_passes(self):
        root = self.tree({"daemon/common/bad.hpp": '#include "procfs/parse.hpp"\n'})
        result = run(root, "--warn-only")
        self.assertEqual(result.returncode, 0)
        self.assertIn("common includes \"procfs/parse.hpp\"", result.stderr)

    def test_clients_may_use_only_the_base(self):
        root = self.tree({
            "client/cli/main.cpp": '#include "runs/run.hpp"\n#include "daemon/store/store.hpp"\n'
                                   '#include "common/units.hpp"\n',
        })
        result = run(root)
        self.assertEqual(result.returncode, 1)
        self.assertIn('client/cli/main.cpp:3: a client includes "common/units.hpp" from '
                      'daemon/common; clients share only the base', result.stderr)
        self.assertIn('client/cli/main.cpp:1: a client includes "runs/run.hpp" from daemon/runs',
                      result.stderr)
        self.assertIn('client/cli/main.cpp:2: a client includes "daemon/store/store.hpp"',
                      result.stderr)

    def test_the_base_includes_only_itself(self):
        root = self.tree({
            "base/include/ramguard/base/units.hpp": '#pragma once\n#include <string>\n',
            "base/src/units.cpp": '#include "ramguard/base/units.hpp"\n#include "common/log.hpp"\n',
        })
        result = run(root)
        self.assertEqual(result.returncode, 1)
        self.assertIn('base/src/units.cpp:2: the base includes "common/log.hpp"', result.stderr)
        self.assertNotIn("units.cpp:1:", result.stderr)
        self.assertNotIn("units.hpp", result.stderr)

    def test_undeclared_module_directory_is_an_error(self):
        root = self.tree({"daemon/extra/thing.cpp": "int x;\n"})
        result = run(root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("daemon/extra: a directory of sources that RAMGUARD_DAEMON_MODULES",
                      result.stderr)


if __name__ == "__main__":
    unittest.main()
