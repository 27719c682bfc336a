package io.taishan.kv.server.durable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A directory no file can be created in, for as long as it is open. As root (CI runs as root, and
 * root ignores permission bits) through the immutable attribute ({@code chattr +i}: "Operation not
 * permitted"), otherwise through the permission bits ("Permission denied").
 */
final class ReadOnlyDir implements AutoCloseable {
    private final Path dir;
    private final boolean root;

    private ReadOnlyDir(Path dir, boolean root) {
        this.dir = dir;
        this.root = root;
    }

    static ReadOnlyDir lock(Path dir) throws IOException, InterruptedException {
        boolean root = "root".equals(System.getProperty("user.name"));
        if (root) {
            chattr("+i", dir);
        } else {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("r-xr-xr-x"));
        }
        return new ReadOnlyDir(dir, root);
    }

    /** What the operating system says to a file created in it. */
    String refusal() {
        return root ? "Operation not permitted" : "Permission denied";
    }

    @Override
    public void close() throws IOException, InterruptedException {
        if (root) {
            chattr("-i", dir);
        } else {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    private static void chattr(String flag, Path dir) throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder("chattr", flag, dir.toString())
                        .redirectErrorStream(true)
                        .start();
        String output = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IOException("chattr " + flag + " " + dir + " failed: " + output);
        }
    }
}
