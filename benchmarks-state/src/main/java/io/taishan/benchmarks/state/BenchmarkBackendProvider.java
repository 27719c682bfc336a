package io.taishan.benchmarks.state;

import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;

/**
 * Makes the keyed state backends that one benchmark module can run; the suite finds providers with
 * {@link ServiceLoader} and picks the one that knows the JMH parameter {@code backend}. HashMap is
 * provided here, Taishan by {@code benchmarks}, RocksDB by {@code benchmarks-rocksdb}: each of
 * those two modules carries its own native RocksDB jar, and they must never share a JVM.
 */
public interface BenchmarkBackendProvider {
    /** The values of the JMH parameter {@code backend} that this provider makes. */
    Set<String> backends();

    /**
     * Whether {@code backend} has a read cache, so that runs of the others skip the cache sizes.
     */
    default boolean hasReadCache(String backend) {
        return false;
    }

    BackendUnderTest open(String backend, BackendSettings settings) throws Exception;

    static BenchmarkBackendProvider forBackend(String backend) {
        List<BenchmarkBackendProvider> found =
                ServiceLoader.load(BenchmarkBackendProvider.class).stream()
                        .map(ServiceLoader.Provider::get)
                        .filter(provider -> provider.backends().contains(backend))
                        .toList();
        if (found.size() != 1) {
            throw new IllegalArgumentException(
                    "backend "
                            + backend
                            + " is made by "
                            + found.size()
                            + " providers on this classpath; this module's backends: "
                            + available());
        }
        return found.get(0);
    }

    /** Every backend that this classpath can make. */
    static Set<String> available() {
        Set<String> names = new TreeSet<>();
        ServiceLoader.load(BenchmarkBackendProvider.class)
                .forEach(provider -> names.addAll(provider.backends()));
        return names;
    }
}
