# Shared by the side-by-side harnesses that run one JVM per cell on two classpaths
# (bin/taishan-keygroup-scaling, bin/taishan-durable-checkpoints): Taishan's (benchmarks) and
# Flink's RocksDB backend's (benchmarks-rocksdb), which must never share a JVM. Sourced, not run;
# needs $root (the checkout) and $out (the run's output directory).

# Flink's own Java 17 flags.
opens=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.time=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED)

taishan_cp="$out/cp-taishan/*"
rocksdb_cp="$out/cp-rocksdb/*"
machine="$out/machine.txt"

# The time and the load average, for the start and end line of every cell.
state() { echo "$(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"; }

# The classpath a backend's cells run on.
cp_of() { [ "$1" = ROCKSDB ] && echo "$rocksdb_cp" || echo "$taishan_cp"; }

build_both() {
  echo "# building benchmarks and benchmarks-rocksdb (mvn package -am, tests skipped)" >&2
  (cd "$root" && mvn -q -B -DskipTests -Dspotless.check.skip=true package \
    -pl benchmarks,benchmarks-rocksdb -am >&2)
}

# A private copy of both classpaths: a build elsewhere in the tree must not swap jars under a run.
copy_classpaths() {
  rm -rf "$out/cp-taishan" "$out/cp-rocksdb"
  mkdir -p "$out/cp-taishan" "$out/cp-rocksdb"
  cp "$root"/benchmarks/target/taishan-benchmarks-0.1.0-SNAPSHOT.jar "$root"/benchmarks/target/lib/*.jar "$out/cp-taishan/"
  cp "$root"/benchmarks-rocksdb/target/taishan-benchmarks-rocksdb-0.1.0-SNAPSHOT.jar "$root"/benchmarks-rocksdb/target/lib/*.jar "$out/cp-rocksdb/"
}

# machine.txt: the command ($1), the machine, Java and the commit measured.
write_machine() {
  local commit
  {
    echo "command: $1"
    echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2 " GiB memory, " $7 " GiB available"}'), open files limit $(ulimit -n), $(df -h "$out" | awk 'NR==2 {print $4 " free on " $1}')"
    if commit=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null); then
      (cd "$root" && git diff --quiet HEAD -- . 2>/dev/null) || commit="$commit (with uncommitted changes in the work tree)"
    else
      commit="none ($root is not a git work tree)"
    fi
    echo "java: $(java -version 2>&1 | head -1); git: $commit"
  } > "$machine"
}

# The report alone renders with the tree's build: the private copy is only for the runs.
use_tree_build() {
  taishan_cp="$root/benchmarks/target/taishan-benchmarks-0.1.0-SNAPSHOT.jar:$root/benchmarks/target/lib/*"
}
