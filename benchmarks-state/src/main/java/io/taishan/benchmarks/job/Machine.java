package io.taishan.benchmarks.job;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the shared machine and this JVM are doing, for every figure the harness prints. */
public final class Machine {
    private Machine() {}

    /** The 1, 5 and 15 minute load averages, as /proc/loadavg gives them. */
    public static String loadAverage() {
        try {
            String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return parts[0] + " " + parts[1] + " " + parts[2];
        } catch (IOException e) {
            return "? ? ?";
        }
    }

    /** Heap in use right after a full collection: what the live objects hold. */
    public static long heapAfterGc() {
        // Two passes: the first may leave objects with finalizers or soft references behind.
        System.gc();
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** This process's resident memory (heap, off-heap caches, native RocksDB), 0 if unknown. */
    public static long residentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux
        }
        return 0;
    }

    /** CPU time of this process so far. */
    public static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }
}
