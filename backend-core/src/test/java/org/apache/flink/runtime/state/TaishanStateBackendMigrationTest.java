package org.apache.flink.runtime.state;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.server.EmbeddedKvServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
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

/** Flink's serializer upgrade and state migration suite on Taishan. */
@ExtendWith(ParameterizedTestExtension.class)
public class TaishanStateBackendMigrationTest
        extends StateBackendMigrationTestBase<TaishanStateBackend> {

    @TempDir private static Path checkpointDirs;

    private static EmbeddedKvServer server;

    @Parameter public SupplierWithException<CheckpointStorage, IOException> storageSupplier;

    @Parameters(name = "storage={0}")
    public static List<Object> modes() {
        return Arrays.asList(
                (SupplierWithException<CheckpointStorage, IOException>)
                        JobManagerCheckpointStorage::new,
                (SupplierWithException<CheckpointStorage, IOException>)
                        () ->
                                new FileSystemCheckpointStorage(
                                        Files.createTempDirectory(checkpointDirs, "checkpoints")
                                                .toUri()
                                                .toString()));
    }

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected TaishanStateBackend getStateBackend() {
        return new TaishanStateBackend().setKvAddress(server.address());
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() throws Exception {
        return storageSupplier.get();
    }
}
