package io.taishan.kv.server.durable;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.flink.core.fs.EntropyInjector;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.FileSystem.WriteMode;
import org.apache.flink.core.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One upload call: which files of the request are reused, uploaded or packed; the file tasks; the
 * result; and, after a failure, the deletion of every object the call wrote.
 *
 * <p>Each object gets its name (a random UUID) once, before its first attempt, and every attempt
 * writes that name again (overwrite): an attempt whose success was lost with its answer leaves no
 * second object, and a failed call knows every name it may have written. Those names are the only
 * remote files the call ever deletes.
 */
final class CutUpload {
    private static final Logger LOG = LoggerFactory.getLogger(CutUpload.class);

    private static final int BUFFER_BYTES = 128 << 10;

    /** One object this call writes. */
    private static final class Target {
        /** The data file it copies; null for the pack. */
        final String localName;

        /** What it will hold: the data file's size, or the pack's planned length. */
        final long expectedBytes;

        final FileSystem fs;
        final Path path;
        volatile boolean attempted;
        volatile RemoteFile written;

        Target(String localName, long expectedBytes, FileSystem fs, Path path) {
            this.localName = localName;
            this.expectedBytes = expectedBytes;
            this.fs = fs;
            this.path = path;
        }
    }

    private final UploadRequest request;
    private final TransferStats stats;
    private final List<Target> dataTargets = new ArrayList<>();
    private final List<CutFile> reused = new ArrayList<>();
    private final List<String> packed = new ArrayList<>();
    private Target packTarget;

    private CutUpload(UploadRequest request, TransferStats stats) {
        this.request = request;
        this.stats = stats;
    }

    static Transfer<UploadResult> create(
            UploadRequest request, Transfer.Attempts attempts, TransferStats stats) {
        CutUpload upload = new CutUpload(request, stats);
        try {
            upload.plan();
        } catch (TransferFailedException e) {
            return Transfer.failed(e, stats, TransferStats.Direction.UPLOAD);
        }
        return upload.transfer(attempts);
    }

    /** Sizes every file, picks what is reused, names every object (no remote call but naming). */
    private void plan() throws TransferFailedException {
        FileSystem sharedFs = fileSystem(request.sharedDir());
        FileSystem exclusiveFs = fileSystem(request.exclusiveDir());
        long packBytes = 0;
        for (String name : request.fileNames()) {
            long size = localSize(name);
            if (!UploadRequest.isDataFile(name)) {
                packed.add(name);
                packBytes += size;
                continue;
            }
            RemoteFile copy =
                    request.reusable().get(new FileIdentity(request.storeId(), name, size));
            if (copy != null && copy.sizeBytes() == size) {
                reused.add(new CutFile(name, copy));
            } else {
                dataTargets.add(
                        new Target(
                                name, size, sharedFs, objectPath(sharedFs, request.sharedDir())));
            }
        }
        if (!packed.isEmpty()) {
            packTarget =
                    new Target(
                            null,
                            packBytes(packBytes),
                            exclusiveFs,
                            objectPath(exclusiveFs, request.exclusiveDir()));
        }
    }

    private Transfer<UploadResult> transfer(Transfer.Attempts attempts) {
        List<Transfer.FileTask> tasks = new ArrayList<>();
        long total = 0;
        for (Target target : dataTargets) {
            tasks.add(transfer -> uploadFile(transfer, target));
            total += target.expectedBytes;
        }
        if (packTarget != null) {
            tasks.add(transfer -> uploadPack(transfer, packTarget));
            total += packTarget.expectedBytes;
        }
        String description =
                "upload of "
                        + tasks.size()
                        + " object(s) of store "
                        + request.storeId()
                        + " from "
                        + request.localDir()
                        + " to "
                        + request.sharedDir()
                        + " ("
                        + reused.size()
                        + " file(s) reused)";
        return new Transfer<>(
                description,
                request.sharedDir(),
                tasks,
                total,
                this::result,
                this::deleteWritten,
                attempts,
                stats,
                TransferStats.Direction.UPLOAD);
    }

    private void uploadFile(Transfer<?> transfer, Target target)
            throws TransferFailedException, InterruptedException {
        java.nio.file.Path local = request.localDir().resolve(target.localName);
        RemoteFile written =
                transfer.withRetries(
                        "upload of " + local + " to " + target.path,
                        () -> {
                            try (InputStream in = Files.newInputStream(local)) {
                                return write(transfer, target, out -> copy(in, out));
                            } catch (TransferFailedException e) {
                                throw e;
                            } catch (IOException e) {
                                throw TransferFailedException.local(
                                        local.toString(), "cannot read " + local, e);
                            }
                        });
        finished(transfer, target, written, local.toString());
    }

    private void uploadPack(Transfer<?> transfer, Target target)
            throws TransferFailedException, InterruptedException {
        java.nio.file.Path dir = request.localDir();
        RemoteFile written =
                transfer.withRetries(
                        "upload of the metadata pack of " + dir + " to " + target.path,
                        () -> {
                            try {
                                return write(
                                        transfer,
                                        target,
                                        out -> MetadataPack.write(dir, packed, out));
                            } catch (TransferFailedException e) {
                                throw e;
                            } catch (IOException e) {
                                throw TransferFailedException.local(
                                        dir.toString(), "cannot pack the files of " + dir, e);
                            }
                        });
        finished(transfer, target, written, dir.toString());
    }

    private void finished(Transfer<?> transfer, Target target, RemoteFile written, String local)
            throws TransferFailedException {
        if (written.sizeBytes() != target.expectedBytes) {
            throw TransferFailedException.local(
                    local,
                    "cannot upload " + local,
                    new IOException(
                            "it changed while it was read: "
                                    + written.sizeBytes()
                                    + " bytes written, "
                                    + target.expectedBytes
                                    + " expected when the upload began"));
        }
        target.written = written;
        stats.uploaded(written.sizeBytes());
        transfer.fileDone();
    }

    /** What writes an object's bytes. */
    private interface Content {
        void writeTo(OutputStream out) throws IOException;
    }

    /**
     * One attempt at one object. A failure of the storage is a {@link TransferFailedException}; any
     * other {@code IOException} came from reading the local files, and passes through.
     */
    private static RemoteFile write(Transfer<?> transfer, Target target, Content content)
            throws IOException {
        target.attempted = true;
        String path = target.path.toString();
        RemoteStreams.Output out;
        try {
            out =
                    new RemoteStreams.Output(
                            target.fs.create(target.path, WriteMode.OVERWRITE),
                            path,
                            transfer,
                            "file".equals(target.fs.getUri().getScheme()));
        } catch (IOException e) {
            throw TransferFailedException.storage(path, "cannot create " + path, e);
        }
        try {
            content.writeTo(out);
            out.close();
        } catch (IOException e) {
            out.abandon();
            throw e;
        }
        return new RemoteFile(path, out.count(), out.crc32c());
    }

    private UploadResult result() {
        List<CutFile> uploaded = new ArrayList<>(dataTargets.size());
        long uploadedBytes = 0;
        for (Target target : dataTargets) {
            uploaded.add(new CutFile(target.localName, target.written));
            uploadedBytes += target.written.sizeBytes();
        }
        RemoteFile pack = packTarget == null ? null : packTarget.written;
        if (pack != null) {
            uploadedBytes += pack.sizeBytes();
        }
        long reusedBytes = 0;
        for (CutFile file : reused) {
            reusedBytes += file.remote().sizeBytes();
            stats.reused(file.remote().sizeBytes());
        }
        LOG.debug(
                "Store {}: uploaded {} file(s) and {} packed, {} bytes; reused {} file(s), {} bytes",
                request.storeId(),
                uploaded.size(),
                packed.size(),
                uploadedBytes,
                reused.size(),
                reusedBytes);
        return new UploadResult(
                request.storeId(), uploaded, reused, pack, packed, uploadedBytes, reusedBytes);
    }

    /** After a failure: the objects this call named and tried to write, and no other. */
    private void deleteWritten() {
        List<Target> all = new ArrayList<>(dataTargets);
        if (packTarget != null) {
            all.add(packTarget);
        }
        for (Target target : all) {
            if (!target.attempted) {
                continue;
            }
            try {
                target.fs.delete(target.path, false);
            } catch (FileNotFoundException e) {
                // Never created: the attempt failed before.
            } catch (IOException | RuntimeException e) {
                LOG.warn(
                        "Could not delete {}, an object of a failed upload (if it was created at"
                                + " all; then it stays, referenced by no checkpoint): {}",
                        target.path,
                        e.toString());
            }
        }
    }

    private long localSize(String name) throws TransferFailedException {
        java.nio.file.Path file = request.localDir().resolve(name);
        try {
            BasicFileAttributes attributes =
                    Files.readAttributes(
                            file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isRegularFile()) {
                throw TransferFailedException.local(
                        file.toString(),
                        "cannot upload " + file,
                        new IOException("not a regular file"));
            }
            return attributes.size();
        } catch (IOException e) {
            if (e instanceof TransferFailedException tfe) {
                throw tfe;
            }
            throw TransferFailedException.local(file.toString(), "cannot upload " + file, e);
        }
    }

    private static FileSystem fileSystem(String dir) throws TransferFailedException {
        try {
            return new Path(dir).getFileSystem();
        } catch (IOException | IllegalArgumentException e) {
            throw new TransferFailedException(
                    TransferFailedException.Reason.STORAGE,
                    dir,
                    "no file system for " + dir + ": " + e.getMessage(),
                    e,
                    false);
        }
    }

    /** A new object's path: a random name under {@code dir}, entropy injected as Flink does. */
    private static Path objectPath(FileSystem fs, String dir) throws TransferFailedException {
        Path path = new Path(dir, UUID.randomUUID().toString());
        try {
            return EntropyInjector.addEntropy(fs, path);
        } catch (IOException e) {
            throw TransferFailedException.storage(dir, "cannot name an object in " + dir, e);
        }
    }

    private static void copy(InputStream in, OutputStream out) throws IOException {
        byte[] buffer = new byte[BUFFER_BYTES];
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
            out.write(buffer, 0, n);
        }
    }

    /** The pack's length: its header and end, and per file a name, size and CRC32C around it. */
    private long packBytes(long contentBytes) {
        long bytes = 4 + 1 + 2 + contentBytes;
        for (String name : packed) {
            bytes += 2 + name.getBytes(StandardCharsets.UTF_8).length + 8 + 4;
        }
        return bytes;
    }
}
