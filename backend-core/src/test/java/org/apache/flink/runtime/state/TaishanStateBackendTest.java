package org.apache.flink.runtime.state;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;
import org.apache.flink.util.function.SupplierWithException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink's own keyed-backend conformance suite against {@link TaishanStateBackend} and a real
 * kv-server on loopback, with both checkpoint storages, and durable checkpoints into the file
 * system's. It lives in Flink's package so that the suite's package-private tests could be
 * overridden if ever needed.
 */
@ExtendWith(ParameterizedTestExtension.class)
public class TaishanStateBackendTest extends StateBackendTestBase<TaishanStateBackend> {

    @TempDir private static Path tempFolder;

    private static EmbeddedKvServer server;

    @Parameter(0)
    public SupplierWithException<CheckpointStorage, IOException> storageSupplier;

    /** Durable checkpoints: into the file-system storage's directories. */
    @Parameter(1)
    public boolean durable;

    @Parameters(name = "storage={0}, durable={1}")
    public static List<Object[]> modes() {
        SupplierWithException<CheckpointStorage, IOException> fileSystem =
                () ->
                        new FileSystemCheckpointStorage(
                                Files.createTempDirectory(tempFolder, "checkpoints").toUri(), 0);
        return Arrays.asList(
                new Object[] {
                    (SupplierWithException<CheckpointStorage, IOException>)
                            JobManagerCheckpointStorage::new,
                    false
                },
                new Object[] {fileSystem, false},
                new Object[] {fileSystem, true});
    }

    @BeforeAll
    static void startServer() {
        Properties durable = new Properties();
        durable.setProperty("durable.enabled", "true");
        server = EmbeddedKvServer.start(KvServerConfig.builder().properties(durable).build());
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        return new TaishanStateBackend()
                .setKvAddress(server.address())
                .setDurableCheckpoints(durable);
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() throws Exception {
        return storageSupplier.get();
    }

    @Override
    protected boolean supportsAsynchronousSnapshots() {
        return true;
    }

    @Override
    protected boolean isSerializerPresenceRequiredOnRestore() {
        // Like RocksDB, values are deserialized lazily with the serializer registered after
        // restore.
        return false;
    }

    @Override
    protected boolean isSafeToReuseKVState() {
        return true;
    }
}
