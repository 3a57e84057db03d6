# A census's placement on the event loop: maps + pagemap for 256 ranges of a 1 GiB process.
ramguard_bench(census_place SOURCES census_place_bench.cpp DEPS ramguard::procfs)
