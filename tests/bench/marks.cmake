# marks_bench: marks per second and p50/p99 with 1, 8 and 64 coordinators marking at once
# against a real ramguardd (group commit), next to the limits measured in the same run
# (mark_limits.cpp: the echo round trip, the acknowledged mark alone and with many clients).
ramguard_bench(marks SOURCES marks_bench.cpp mark_limits.cpp DEPS ramguard_harness ramguard::client)
