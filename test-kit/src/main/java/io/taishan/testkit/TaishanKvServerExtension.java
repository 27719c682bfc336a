package io.taishan.testkit;

import io.taishan.backend.TaishanOptions;
import io.taishan.backend.TaishanStateBackend;
import io.taishan.backend.TaishanStateBackendFactory;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A kv-server in the test's JVM ({@link EmbeddedKvServer}: 127.0.0.1, an ephemeral port, a
 * temporary data directory deleted afterwards) for Flink job tests on {@link TaishanStateBackend},
 * as Flink's {@code MiniClusterExtension} is for the cluster:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final TaishanKvServerExtension KV_SERVER = new TaishanKvServerExtension();
 *
 * @Test
 * void myJob(TaishanStateBackend backend) throws Exception {
 *     StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
 *     env.setStateBackend(backend);   // or KV_SERVER.stateBackend()
 *     ...
 * }
 * }</pre>
 *
 * <p>Registered on a static field (or with {@code @ExtendWith}), one server serves every test of
 * the class, started before the first and stopped after the last; on an instance field, each test
 * gets its own. Test methods and constructors may take a {@link TaishanStateBackend} (a new one
 * each time, connected to this server), the {@link EmbeddedKvServer} itself or a {@link KvStore}
 * client of it (shared, closed with the server) to look at what a job left in the store.
 *
 * <p>The server uses {@code org.rocksdb:rocksdbjni}, which must not share a classpath with Flink's
 * own RocksDB ({@code frocksdbjni}, brought by {@code flink-statebackend-rocksdb}, which {@code
 * flink-test-utils} depends on): the same class names, different natives. The extension refuses to
 * start when it finds Flink's RocksDB, naming the exclusion to add.
 */
public final class TaishanKvServerExtension
        implements BeforeAllCallback,
                AfterAllCallback,
                BeforeEachCallback,
                AfterEachCallback,
                ParameterResolver {

    /** A class only Flink's RocksDB ({@code frocksdbjni}) has. */
    static final String FLINK_ROCKSDB_CLASS = "org.rocksdb.FlinkCompactionFilter";

    private final KvServerConfig config;

    @Nullable private EmbeddedKvServer server;
    @Nullable private KvStore client;

    /** The unique id of the test or class whose start started the server, so its end stops it. */
    @Nullable private String startedBy;

    /** The server's defaults on an ephemeral port of 127.0.0.1, with a temporary data directory. */
    public TaishanKvServerExtension() {
        this(KvServerConfig.builder().build());
    }

    /**
     * A server started with this config (e.g. {@code KvServerConfig.builder().walEnabled(true)
     * .build()}); without a data directory in it, a temporary one is used and deleted afterwards.
     */
    public TaishanKvServerExtension(KvServerConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        startFor(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        stopFor(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        startFor(context);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        stopFor(context);
    }

    private synchronized void startFor(ExtensionContext context) {
        if (server != null) {
            return; // a per-class server, or a nested class inside its class
        }
        checkNoFlinkRocksDb(context);
        server = EmbeddedKvServer.start(config);
        startedBy = context.getUniqueId();
    }

    private synchronized void stopFor(ExtensionContext context) {
        if (server == null || !context.getUniqueId().equals(startedBy)) {
            return;
        }
        try {
            if (client != null) {
                client.close();
            }
        } finally {
            client = null;
            EmbeddedKvServer stopping = server;
            server = null;
            startedBy = null;
            stopping.close();
        }
    }

    /** The running server. */
    public synchronized EmbeddedKvServer server() {
        if (server == null) {
            throw new IllegalStateException(
                    "the kv-server is not running: it runs from the start of the test class (static"
                            + " field) or test (instance field) that registered this extension to"
                            + " its end");
        }
        return server;
    }

    /** {@code 127.0.0.1:port}, for {@code taishan.kv.address}. */
    public String address() {
        return server().address();
    }

    /** A new backend on this server, with the other options at their defaults. */
    public TaishanStateBackend stateBackend() {
        return new TaishanStateBackend().setKvAddress(address());
    }

    /**
     * {@code state.backend.type} and {@code taishan.kv.address} for this server: for a {@code
     * MiniCluster}'s configuration or {@code
     * StreamExecutionEnvironment.getExecutionEnvironment(Configuration)}.
     */
    public Configuration flinkConfiguration() {
        Configuration c = new Configuration();
        c.set(StateBackendOptions.STATE_BACKEND, TaishanStateBackendFactory.class.getName());
        c.set(TaishanOptions.KV_ADDRESS, address());
        return c;
    }

    /** A client of this server, made at the first call and closed when the server stops. */
    public synchronized KvStore kvStore() {
        if (client == null) {
            client = KvStores.connect(KvClientConfig.forAddresses(address()).build());
        }
        return client;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == TaishanStateBackend.class
                || type == EmbeddedKvServer.class
                || type == KvStore.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        if (type == TaishanStateBackend.class) {
            return stateBackend();
        }
        if (type == EmbeddedKvServer.class) {
            return server();
        }
        return kvStore();
    }

    private static void checkNoFlinkRocksDb(ExtensionContext context) {
        checkNoFlinkRocksDb(
                context.getTestClass()
                        .map(Class::getClassLoader)
                        .orElse(TaishanKvServerExtension.class.getClassLoader()));
    }

    static void checkNoFlinkRocksDb(ClassLoader loader) {
        try {
            // Not initialized: nothing native is loaded by looking.
            Class.forName(FLINK_ROCKSDB_CLASS, false, loader);
        } catch (ClassNotFoundException expected) {
            return;
        }
        throw new ExtensionConfigurationException(
                "Flink's RocksDB (frocksdbjni) is on the test classpath, and the embedded"
                        + " kv-server's org.rocksdb:rocksdbjni has the same class names: one of"
                        + " them would run on the other's classes. Exclude"
                        + " org.apache.flink:flink-statebackend-rocksdb from flink-test-utils"
                        + " (see the taishan-test-kit README), or run the kv-server outside this"
                        + " JVM (TaishanKvServerContainer).");
    }
}
