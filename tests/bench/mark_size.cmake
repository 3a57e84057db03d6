# mark_size_bench: the event loop's work for one mark of a 1 GB and a 4 GB coordinator, in
# the process and tree scopes, next to the PSS read that runs off the loop.
ramguard_bench(mark_size SOURCES mark_size_bench.cpp DEPS ramguard::sampling)
ramguard_uses_memchild(mark_size_bench)
