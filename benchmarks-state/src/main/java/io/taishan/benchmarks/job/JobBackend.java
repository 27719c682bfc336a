package io.taishan.benchmarks.job;

import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.configuration.Configuration;

/**
 * The state backend of one MiniCluster job run, as Flink configuration, and whatever it runs on (a
 * kv-server child JVM). HashMap is provided here, Taishan by {@code benchmarks}, RocksDB by {@code
 * benchmarks-rocksdb}: each of those two carries its own native RocksDB jar, and they never share a
 * JVM.
 */
public interface JobBackend extends AutoCloseable {
    /** The keys to add to the job's configuration. */
    Configuration configuration();

    /** For the report: what runs, and how it is configured. */
    String description();

    /**
     * Samples of what the store holds, taken from outside the job while it ran ({@link
     * StoreSample}); empty for a backend without a store of its own.
     */
    default List<StoreSample> storeSamples() {
        return List.of();
    }

    /** The pid of a store process the backend runs on (a kv-server child JVM), or -1. */
    default long serverPid() {
        return -1;
    }

    @Override
    void close() throws Exception;

    /**
     * What a kv-server held at one moment: its live entries and their bytes (every table), the
     * entries its expiry has deleted so far, and CPU time so far (of the process, of its expiry
     * thread, and of the sampler itself, which the first includes).
     */
    record StoreSample(
            long epochMillis,
            long liveEntries,
            long liveBytes,
            long expiredEntries,
            long lastSweepMillis,
            long processCpuNanos,
            long expiryCpuNanos,
            long samplerCpuNanos) {}

    /** Makes the backends of one classpath, found with {@link ServiceLoader}. */
    interface Provider {
        Set<String> backends();

        /**
         * @param serverConfig kv-server configuration keys for a backend that starts one (e.g.
         *     {@code ttl.sweep-interval}); others ignore it
         * @param sampleStore whether to sample the store every second ({@link #storeSamples}): the
         *     count reads the whole store, so runs that do not need it leave it off
         */
        JobBackend open(
                String backend,
                Path workDir,
                java.util.Map<String, String> serverConfig,
                boolean sampleStore)
                throws Exception;

        static Provider forBackend(String backend) {
            List<Provider> found =
                    ServiceLoader.load(Provider.class).stream()
                            .map(ServiceLoader.Provider::get)
                            .filter(p -> p.backends().contains(backend))
                            .toList();
            if (found.size() != 1) {
                Set<String> names = new TreeSet<>();
                ServiceLoader.load(Provider.class).forEach(p -> names.addAll(p.backends()));
                throw new IllegalArgumentException(
                        "backend " + backend + " is not on this classpath; it has " + names);
            }
            return found.get(0);
        }
    }
}
