package io.taishan.benchmarks.state;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import javax.annotation.Nullable;

/**
 * The CPU time used so far by this JVM and by the process that holds a backend's state ({@link
 * StateHome#pid()}), when that is another one: what a state operation costs the task's process and
 * what it costs the server, measured side by side.
 *
 * <p>This JVM's clock is the OS's process CPU time in nanoseconds; the other process's comes from
 * {@code /proc} through {@link ProcessHandle.Info#totalCpuDuration()}, in clock ticks (10 ms on
 * Linux), and costs a few file reads, so callers read it a few times per second, not per operation.
 */
final class CpuClocks {
    /** Both clocks at one moment, in nanoseconds. */
    record Reading(long taskJvmNanos, long stateProcessNanos) {}

    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    @Nullable private final ProcessHandle stateProcess;

    /** {@code stateProcessPid}: this JVM's own pid for a backend that keeps state here. */
    CpuClocks(long stateProcessPid) {
        this.stateProcess =
                stateProcessPid == ProcessHandle.current().pid()
                        ? null
                        : ProcessHandle.of(stateProcessPid).orElse(null);
    }

    Reading read() {
        long other =
                stateProcess == null
                        ? 0
                        : stateProcess.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        return new Reading(os.getProcessCpuTime(), other);
    }
}
