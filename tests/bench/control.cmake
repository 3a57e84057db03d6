# control_bench: echo round trip vs mark round trip through libramguard against a real
# ramguardd (p50/p99 and ratios), and admissions per second with 64 concurrent clients.
ramguard_bench(control SOURCES control_bench.cpp DEPS ramguard_harness ramguard::client)
