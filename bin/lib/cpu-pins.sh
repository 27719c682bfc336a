# Shared by the harnesses that take --tm-cpus/--kv-cpus (bin/taishan-nexmark,
# bin/taishan-state-compare): the benchmark JVMs, which play the TaskManager, on some CPUs and
# Taishan's kv-server on others, as a kv-server runs off the TaskManager's cores in production.
# Sourced, not run.

# pin_cpus TM_CPUS KV_CPUS (taskset -c lists, either may be empty): sets tm_pin and kv_pin, the
# taskset prefixes of a command (empty arrays without a list), and exports TAISHAN_BENCH_KV_CPUS,
# with which ChildKvServer starts a kv-server child under taskset.
pin_cpus() {
  tm_pin=()
  kv_pin=()
  [ -z "$1$2" ] && return 0
  command -v taskset > /dev/null || { echo "--tm-cpus/--kv-cpus need taskset (util-linux)" >&2; exit 2; }
  if [ -n "$1" ]; then tm_pin=(taskset -c "$1"); fi
  if [ -n "$2" ]; then
    kv_pin=(taskset -c "$2")
    export TAISHAN_BENCH_KV_CPUS="$2"
  fi
}

# pin_options TM_CPUS KV_CPUS: the options as given, for a run's recorded command line.
pin_options() {
  if [ -n "$1" ]; then printf ' --tm-cpus %s' "$1"; fi
  if [ -n "$2" ]; then printf ' --kv-cpus %s' "$2"; fi
}
