# shared_tree_bench: a tree-scope periodic reading of a coordinator whose 8, 16 and 32 workers
# map one 2 GB /dev/shm segment (counted once), against the sum of their status preads.
ramguard_bench(shared_tree SOURCES shared_tree_bench.cpp DEPS ramguard::procfs)
