package io.taishan.it.soak;

import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import javax.annotation.Nullable;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * What a leak would show in one JVM process: open file descriptors, threads and resident memory
 * from {@code /proc/<pid>} (Linux), and heap through the JVM's {@link MemoryMXBean}, reached
 * through the attach API for another process. Heap after an explicit full GC is the live heap: heap
 * merely used rises and falls with garbage.
 */
final class JvmProbe implements AutoCloseable {
    private static final double MIB = 1 << 20;

    private final String name;
    private final Path proc;
    @Nullable private final MemoryMXBean memory;
    @Nullable private final JMXConnector connector;
    @Nullable private final String heapUnreachable;

    private JvmProbe(
            String name,
            Path proc,
            @Nullable MemoryMXBean memory,
            @Nullable JMXConnector connector,
            @Nullable String heapUnreachable) {
        this.name = name;
        this.proc = proc;
        this.memory = memory;
        this.connector = connector;
        this.heapUnreachable = heapUnreachable;
    }

    /** This JVM: the test's, where the MiniCluster and with it the keyed backends run. */
    static JvmProbe self() {
        return new JvmProbe(
                "this JVM", Path.of("/proc/self"), ManagementFactory.getMemoryMXBean(), null, null);
    }

    /**
     * Another JVM, its heap through the attach API and its local management agent; if that fails
     * (attach disabled, another user), only the {@code /proc} figures, and {@link
     * #heapUnreachable()} says why.
     */
    static JvmProbe attach(String name, long pid) {
        Path proc = Path.of("/proc", Long.toString(pid));
        try {
            VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
            String address;
            try {
                address = vm.startLocalManagementAgent();
            } finally {
                vm.detach();
            }
            JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address));
            MemoryMXBean memory =
                    ManagementFactory.newPlatformMXBeanProxy(
                            connector.getMBeanServerConnection(),
                            ManagementFactory.MEMORY_MXBEAN_NAME,
                            MemoryMXBean.class);
            return new JvmProbe(name, proc, memory, connector, null);
        } catch (Exception | LinkageError e) {
            return new JvmProbe(name, proc, null, null, e.toString());
        }
    }

    String name() {
        return name;
    }

    @Nullable
    String heapUnreachable() {
        return heapUnreachable;
    }

    /** Open file descriptors, and how many of them are RocksDB table files ({@code .sst}). */
    long[] openFiles() throws IOException {
        long all = 0;
        long tables = 0;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
            for (Path fd : fds) {
                all++;
                try {
                    if (Files.readSymbolicLink(fd).toString().endsWith(".sst")) {
                        tables++;
                    }
                } catch (NoSuchFileException closedMeanwhile) {
                    all--;
                }
            }
        }
        return new long[] {all, tables};
    }

    /** VmRSS in MiB and Threads, from {@code /proc/<pid>/status}. */
    double[] residentMibAndThreads() throws IOException {
        double rss = Double.NaN;
        double threads = Double.NaN;
        List<String> status = Files.readAllLines(proc.resolve("status"));
        for (String line : status) {
            if (line.startsWith("VmRSS:")) {
                rss = Long.parseLong(line.replaceAll("\\D", "")) / 1024.0;
            } else if (line.startsWith("Threads:")) {
                threads = Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        return new double[] {rss, threads};
    }

    /** Heap used now, in MiB; NaN if unreachable. */
    double heapUsedMib() {
        return memory == null ? Double.NaN : memory.getHeapMemoryUsage().getUsed() / MIB;
    }

    /** Runs a full GC and returns the heap used right after it, in MiB; NaN if unreachable. */
    double liveHeapMib() {
        if (memory == null) {
            return Double.NaN;
        }
        memory.gc();
        return heapUsedMib();
    }

    @Override
    public void close() {
        if (connector != null) {
            try {
                connector.close();
            } catch (IOException e) {
                // The process may be gone already; nothing to release then.
            }
        }
    }
}
