package io.taishan.benchmarks.state;

import java.nio.file.Path;
import javax.annotation.Nullable;

/**
 * Where a backend keeps its state: the process whose open files and memory grow with it, and the
 * directory it writes, if any. A harness reads both from outside ({@code /proc}, a walk of the
 * directory), so it needs no hook in the backend.
 *
 * @param process what the process is, for the report ("kv-server child JVM", "task JVM")
 * @param pid its process id
 * @param dataDir its state files, or null for a backend whose state is only on the heap
 */
public record StateHome(String process, long pid, @Nullable Path dataDir) {
    /** This JVM: a backend that keeps its state in the task's own process. */
    public static StateHome taskJvm(@Nullable Path dataDir) {
        return new StateHome("task JVM", ProcessHandle.current().pid(), dataDir);
    }
}
