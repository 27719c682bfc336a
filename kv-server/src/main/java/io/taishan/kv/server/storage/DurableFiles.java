package io.taishan.kv.server.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;

/**
 * File-system steps that survive a crash: everything that tells the server what exists (catalog,
 * epochs, snapshots) is written to a temporary name, fsynced, renamed, and its directory fsynced.
 */
public final class DurableFiles {
    private DurableFiles() {}

    static void fsync(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** Writes {@code content} to {@code target} so that a crash leaves the old or the new file. */
    static void writeAtomically(Path target, byte[] content) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        try (FileChannel ch =
                FileChannel.open(
                        tmp,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(ByteBuffer.wrap(content));
            ch.force(true);
        }
        moveAtomically(tmp, target);
    }

    /** Renames and makes the rename durable. */
    static void moveAtomically(Path source, Path target) throws IOException {
        Files.move(source, target, StandardCopyOption.ATOMIC_MOVE);
        fsync(target.getParent());
    }

    /**
     * Fills the empty directory {@code target} with the files of {@code source} without copying
     * their data: immutable files (SSTs, blobs) become hard links; the few small files RocksDB may
     * rewrite or append to once the copy is opened live (MANIFEST, CURRENT, OPTIONS, WAL) are
     * copied, so the source can never change under it.
     */
    static int linkFiles(Path source, Path target, boolean linkEverything, Predicate<String> skip)
            throws IOException {
        int count = 0;
        for (Path file : listFiles(source)) {
            String name = file.getFileName().toString();
            if (skip.test(name)) {
                continue;
            }
            Path dst = target.resolve(name);
            if (linkEverything || name.endsWith(".sst") || name.endsWith(".blob")) {
                Files.createLink(dst, file);
            } else {
                Files.copy(file, dst);
                fsync(dst);
            }
            count++;
        }
        fsync(target);
        return count;
    }

    static List<Path> listFiles(Path dir) throws IOException {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                if (Files.isRegularFile(p)) {
                    files.add(p);
                }
            }
        }
        files.sort(null);
        return files;
    }

    static void fsyncFilesAndDir(Path dir) throws IOException {
        for (Path file : listFiles(dir)) {
            fsync(file);
        }
        fsync(dir);
    }

    /**
     * Removes a tree so that a crash never leaves it half-deleted under its live name: it is first
     * renamed into {@code trashDir}, then deleted.
     */
    static void discard(Path tree, Path trashDir) throws IOException {
        if (!Files.exists(tree)) {
            return;
        }
        Path trashed = trashDir.resolve(UUID.randomUUID().toString());
        moveAtomically(tree, trashed);
        deleteTree(trashed);
    }

    /** Deletes a directory tree; a missing one is fine. */
    public static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(
                root,
                new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                            throws IOException {
                        Files.deleteIfExists(file);
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult postVisitDirectory(Path dir, IOException exc)
                            throws IOException {
                        if (exc != null && !(exc instanceof NoSuchFileException)) {
                            throw exc;
                        }
                        Files.deleteIfExists(dir);
                        return FileVisitResult.CONTINUE;
                    }
                });
    }

    /** Apparent size of the tree: a hard-linked file counts in every directory that holds it. */
    static long sizeOf(Path root) {
        if (!Files.exists(root)) {
            return 0;
        }
        long[] total = {0};
        try {
            Files.walkFileTree(
                    root,
                    new SimpleFileVisitor<>() {
                        @Override
                        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                            total[0] += attrs.size();
                            return FileVisitResult.CONTINUE;
                        }

                        @Override
                        public FileVisitResult visitFileFailed(Path file, IOException exc) {
                            // Files vanish while RocksDB compacts; a size is an estimate anyway.
                            return FileVisitResult.CONTINUE;
                        }
                    });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return total[0];
    }
}
