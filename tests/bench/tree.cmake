# tree_bench: a tree-scope reading of a coordinator with 1, 8 and 32 workers against the sum of
# their statm preads (the physical limit), with and without re-walking the tree.
ramguard_bench(tree SOURCES tree_bench.cpp DEPS ramguard::sampling)
