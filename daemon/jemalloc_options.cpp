// jemalloc's compiled-in options for ramguardd, read before main. One arena: the daemon
// allocates almost only on its io thread (civetweb's two workers render scrapes), and every
// extra arena keeps its own metadata and dirty pages; one arena is ~0.6 MiB less RSS at a
// thousand watched processes, with no throughput lost in control_bench. An operator's
// MALLOC_CONF still overrides it.
extern "C" {
// NOLINTNEXTLINE: jemalloc looks this symbol up by name.
const char* malloc_conf = "narenas:1";
}
