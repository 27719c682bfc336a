package io.taishan.it.harness;

import org.apache.flink.configuration.Configuration;

/**
 * A state backend ready for jobs: the configuration entries that select and configure it, and
 * whatever it needs running (a kv-server) until {@link #close()}.
 */
public interface BackendFixture extends AutoCloseable {

    /** Entries added to every job's configuration, last, so they may override the harness's. */
    Configuration configuration();

    /** The class of the keyed state backend that the stateful operator must end up on. */
    String keyedBackendClassName();

    /**
     * True when restoring a retained checkpoint or native savepoint must move no data: the
     * scenarios then check, through the backend's metrics, that the restore wrote nothing and took
     * every shard from a snapshot.
     */
    default boolean restoresByMetadata() {
        return false;
    }

    @Override
    default void close() throws Exception {}

    static BackendFixture of(Configuration configuration, String keyedBackendClassName) {
        return new BackendFixture() {
            @Override
            public Configuration configuration() {
                return new Configuration(configuration);
            }

            @Override
            public String keyedBackendClassName() {
                return keyedBackendClassName;
            }
        };
    }
}
