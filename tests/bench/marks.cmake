# marks_bench: marks per second and p50/p99 with 1, 8 and 64 coordinators marking at once
# against a real ramguardd (group commit), next to the echo round trip and one fdatasync.
ramguard_bench(marks SOURCES marks_bench.cpp DEPS ramguard_harness ramguard::client)
