package io.taishan.it.harness;

import io.taishan.kv.testing.KvServerProcess;
import java.nio.file.Path;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * The Taishan backend on a real kv-server. The server runs as a child JVM ({@link KvServerProcess},
 * the runnable jar named by {@code -Dtaishan.kvserver.jar}), because Flink's test utilities put
 * {@code frocksdbjni} in this JVM and the server needs {@code rocksdbjni}. The job sees nothing but
 * configuration: the factory's class name and the server's address.
 */
public final class TaishanBackendFixture implements BackendFixture {
    public static final String FACTORY_CLASS = "io.taishan.backend.TaishanStateBackendFactory";
    public static final String KEYED_BACKEND_CLASS = "io.taishan.backend.TaishanKeyedStateBackend";
    public static final String ADDRESS_KEY = "taishan.kv.address";

    private final KvServerProcess server;

    private TaishanBackendFixture(KvServerProcess server) {
        this.server = server;
    }

    /** A test parameter: one kv-server per test, its data under the test's directory. */
    public static BackendUnderTest backend() {
        return new BackendUnderTest("taishan", TaishanBackendFixture::start);
    }

    public static TaishanBackendFixture start(Path workDir) {
        return new TaishanBackendFixture(KvServerProcess.start(workDir.resolve("kv-data")));
    }

    @Override
    public Configuration configuration() {
        server.checkAlive();
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, FACTORY_CLASS);
        config.setString(ADDRESS_KEY, server.address());
        return config;
    }

    @Override
    public String keyedBackendClassName() {
        return KEYED_BACKEND_CLASS;
    }

    /** Its restores clone or roll back remote shard snapshots; only a canonical savepoint loads. */
    @Override
    public boolean restoresByMetadata() {
        return true;
    }

    /** The server's own account of what happened, for failure messages. */
    public String serverOutput() {
        return server.recentOutput();
    }

    @Override
    public void close() {
        server.close();
    }
}
