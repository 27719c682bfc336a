package io.taishan.snapshot;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * Cuts as a kv-server node reports them after an upload, with their copies written as real files
 * (random names, as the node names them), so that Flink's handles can open and delete them.
 */
public final class TestDurableCuts {
    private TestDurableCuts() {}

    /**
     * A cut holding {@code shards}, its data files copied into {@code sharedDir} (or reused: the
     * given copies), its metadata pack into {@code exclusiveDir}.
     */
    public static DurableCut cut(
            List<Integer> shards,
            Path sharedDir,
            Path exclusiveDir,
            List<String> newFileNames,
            List<DurableFile> reused)
            throws IOException {
        List<DurableFile> files = new ArrayList<>(reused);
        for (String name : newFileNames) {
            files.add(copy(sharedDir, name, "bytes of " + name + " " + UUID.randomUUID()));
        }
        return new DurableCut(
                UUID.randomUUID().toString(),
                shards,
                files,
                copy(exclusiveDir, "", "MANIFEST CURRENT OPTIONS of " + shards));
    }

    /** A copy of a file of {@code content} under a random name in {@code dir}. */
    public static DurableFile copy(Path dir, String name, String content) throws IOException {
        Files.createDirectories(dir);
        byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
        Path file = dir.resolve(UUID.randomUUID().toString());
        Files.write(file, bytes);
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return new DurableFile(
                name,
                org.apache.flink.core.fs.Path.fromLocalFile(file.toFile()).toString(),
                bytes.length,
                (int) crc.getValue());
    }

    /** The local file behind a copy's path. */
    public static Path local(DurableFile file) {
        return Path.of(new org.apache.flink.core.fs.Path(file.path()).toUri().getPath());
    }
}
