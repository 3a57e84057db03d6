# A round end at round 10,000 against round 10 (the run machine alone, no I/O).
ramguard_bench(round_end SOURCES round_end_bench.cpp DEPS ramguard::runs)
