package io.taishan.kv.server.durable;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.util.FileUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One download call: the files into a staging directory beside the target, each verified by size
 * and CRC32C and fsynced, the metadata pack unpacked there, then one atomic rename of the staging
 * directory to the target. A failed call deletes its staging directory; a crash leaves it, under a
 * name {@link #isStagingDir} recognizes.
 *
 * <p>A file the request names a {@link DownloadRequest#localCopies local copy} of is hard-linked
 * from it (same file system: the node's data directory), checked by size only: the local file was
 * verified when it came and files are never rewritten in place. Cuts of one store share most of
 * their files, so a restore that needs several of them reads each copy once. A link that fails (the
 * other cut was deleted meanwhile) falls back to the download.
 */
final class CutDownload {
    private static final Logger LOG = LoggerFactory.getLogger(CutDownload.class);

    private static final int BUFFER_BYTES = 128 << 10;
    private static final String STAGING_MARK = ".download-";
    private static final Pattern STAGING_NAME =
            Pattern.compile(
                    ".+"
                            + Pattern.quote(STAGING_MARK)
                            + "[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}");

    private final DownloadRequest request;
    private final TransferStats stats;
    private final Path target;
    private final Path staging;
    private final Set<String> dataNames = new HashSet<>();
    private volatile List<String> unpacked = List.of();
    private final LongAdder linkedBytes = new LongAdder();

    private CutDownload(DownloadRequest request, TransferStats stats) {
        this.request = request;
        this.stats = stats;
        this.target = request.targetDir().toAbsolutePath();
        this.staging =
                target.resolveSibling(target.getFileName() + STAGING_MARK + UUID.randomUUID());
        request.files().forEach(file -> dataNames.add(file.fileName()));
    }

    /** Whether a directory is what a download left when its process died. */
    static boolean isStagingDir(Path dir) {
        Path name = dir.getFileName();
        return name != null && STAGING_NAME.matcher(name.toString()).matches();
    }

    static Transfer<DownloadResult> create(
            DownloadRequest request, Transfer.Attempts attempts, TransferStats stats) {
        CutDownload download = new CutDownload(request, stats);
        try {
            download.prepare();
        } catch (TransferFailedException e) {
            return Transfer.failed(e, stats, TransferStats.Direction.DOWNLOAD);
        }
        return download.transfer(attempts);
    }

    /** Checks the target and the disk, and creates the staging directory. */
    private void prepare() throws TransferFailedException {
        Path parent = target.getParent();
        String where = target.toString();
        if (Files.exists(target)) {
            throw TransferFailedException.local(
                    where, "cannot download into " + target, new IOException("it exists"));
        }
        if (!Files.isDirectory(parent)) {
            throw TransferFailedException.local(
                    where,
                    "cannot download into " + target,
                    new NoSuchFileException(parent.toString(), null, "no such directory"));
        }
        try {
            long usable = Files.getFileStore(parent).getUsableSpace();
            long needed = request.bytesToDownload();
            if (usable < needed) {
                throw TransferFailedException.local(
                        where,
                        "cannot download into " + target,
                        new IOException(
                                "no space: " + needed + " bytes needed, " + usable + " available"));
            }
            Files.createDirectory(staging);
        } catch (TransferFailedException e) {
            throw e;
        } catch (IOException e) {
            throw TransferFailedException.local(where, "cannot download into " + target, e);
        }
    }

    private Transfer<DownloadResult> transfer(Transfer.Attempts attempts) {
        List<Transfer.FileTask> tasks = new ArrayList<>();
        for (CutFile file : request.files()) {
            tasks.add(transfer -> downloadFile(transfer, file));
        }
        if (request.metadataPack() != null) {
            tasks.add(transfer -> downloadPack(transfer, request.metadataPack()));
        }
        int linked = request.localCopies().size();
        String description =
                "download of "
                        + tasks.size()
                        + " object(s)"
                        + (linked == 0 ? "" : ", " + linked + " of them linked from this node,")
                        + " into "
                        + target;
        return new Transfer<>(
                description,
                target.toString(),
                tasks,
                request.totalBytes(),
                this::moveIntoPlace,
                this::deleteStaging,
                attempts,
                stats,
                TransferStats.Direction.DOWNLOAD);
    }

    private void downloadFile(Transfer<?> transfer, CutFile file)
            throws TransferFailedException, InterruptedException {
        RemoteFile remote = file.remote();
        Path local = staging.resolve(file.fileName());
        Path copy = request.localCopies().get(file.fileName());
        if (copy != null && link(copy, local, remote)) {
            linkedBytes.add(remote.sizeBytes());
            transfer.moved(remote.sizeBytes());
            transfer.fileDone();
            return;
        }
        transfer.withRetries(
                "download of " + remote.path() + " to " + local,
                () -> {
                    try (RemoteStreams.Input in = open(transfer, remote, file.fileName());
                            FileChannel out =
                                    FileChannel.open(
                                            local,
                                            StandardOpenOption.CREATE,
                                            StandardOpenOption.WRITE,
                                            StandardOpenOption.TRUNCATE_EXISTING)) {
                        byte[] buffer = new byte[BUFFER_BYTES];
                        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                            ByteBuffer chunk = ByteBuffer.wrap(buffer, 0, n);
                            while (chunk.hasRemaining()) {
                                out.write(chunk);
                            }
                        }
                        in.verify(remote.crc32c());
                        out.force(true);
                        return null;
                    } catch (TransferFailedException e) {
                        throw e;
                    } catch (IOException e) {
                        throw TransferFailedException.local(
                                local.toString(), "cannot write " + local, e);
                    }
                });
        stats.downloaded(remote.sizeBytes());
        transfer.fileDone();
    }

    private void downloadPack(Transfer<?> transfer, RemoteFile pack)
            throws TransferFailedException, InterruptedException {
        List<String> names =
                transfer.withRetries(
                        "download of the metadata pack " + pack.path() + " to " + staging,
                        () -> {
                            try (RemoteStreams.Input in = open(transfer, pack, "metadata pack")) {
                                List<String> files = MetadataPack.unpack(in, staging, dataNames);
                                in.verify(pack.crc32c());
                                return files;
                            } catch (TransferFailedException e) {
                                throw e;
                            } catch (MetadataPack.FormatException e) {
                                throw TransferFailedException.corrupt(
                                        pack.path(),
                                        pack.path() + " is corrupt: " + e.getMessage());
                            } catch (IOException e) {
                                throw TransferFailedException.local(
                                        staging.toString(),
                                        "cannot unpack " + pack.path() + " into " + staging,
                                        e);
                            }
                        });
        unpacked = List.copyOf(names);
        stats.downloaded(pack.sizeBytes());
        transfer.fileDone();
    }

    private static RemoteStreams.Input open(Transfer<?> transfer, RemoteFile remote, String what)
            throws TransferFailedException {
        String path = remote.path();
        FSDataInputStream in;
        try {
            org.apache.flink.core.fs.Path remotePath = new org.apache.flink.core.fs.Path(path);
            FileSystem fs = remotePath.getFileSystem();
            in = fs.open(remotePath);
        } catch (FileNotFoundException e) {
            throw TransferFailedException.missing(path, path + " (" + what + ") is missing", e);
        } catch (IOException | IllegalArgumentException e) {
            throw TransferFailedException.storage(
                    path, "cannot open " + path + " (" + what + ")", e);
        }
        return new RemoteStreams.Input(in, path, remote.sizeBytes(), transfer);
    }

    /** Every file is there and verified: the staging directory becomes the target, at once. */
    private DownloadResult moveIntoPlace() throws TransferFailedException {
        try {
            fsync(staging);
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            fsync(target.getParent());
        } catch (IOException e) {
            throw TransferFailedException.local(
                    target.toString(), "cannot move " + staging + " to " + target, e);
        }
        List<String> names = new ArrayList<>(dataNames.size() + unpacked.size());
        request.files().forEach(file -> names.add(file.fileName()));
        names.addAll(unpacked);
        return new DownloadResult(target, names, request.totalBytes() - linkedBytes.sum());
    }

    /**
     * Whether {@code local} is now a link to {@code copy} with {@code remote}'s size; if not, it is
     * gone, so that the download never writes through a link into the other cut's file.
     */
    private static boolean link(Path copy, Path local, RemoteFile remote)
            throws TransferFailedException {
        try {
            Files.createLink(local, copy);
            long size = Files.size(local);
            if (size == remote.sizeBytes()) {
                return true;
            }
            LOG.warn(
                    "{} has {} bytes, not the {} of {}: downloading it",
                    copy,
                    size,
                    remote.sizeBytes(),
                    remote.path());
        } catch (IOException e) {
            LOG.info("Cannot link {} to {} ({}): downloading it", local, copy, e.toString());
        }
        try {
            Files.deleteIfExists(local);
        } catch (IOException e) {
            throw TransferFailedException.local(
                    local.toString(), "cannot remove the failed link " + local, e);
        }
        return false;
    }

    private void deleteStaging() {
        try {
            // Flink's own recursive delete: this package writes through Flink already.
            FileUtils.deleteDirectory(staging.toFile());
        } catch (IOException e) {
            LOG.warn("Could not delete {} of a failed download: {}", staging, e.toString());
        }
    }

    private static void fsync(Path path) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
