package io.taishan.kv.server.security;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's credentials, from {@code auth.token-file}, re-read when the file changes so that
 * tokens can be added, rotated and revoked without a restart.
 *
 * <p>Every {@code auth.reload-interval} one thread reads the file and compares a digest of its
 * bytes with the last one seen (modification times can stay equal across a quick edit; the content
 * cannot). A changed file that parses replaces the credentials at once for every call after; one
 * that does not is reported once and the credentials in use stay, so a half-written edit never
 * locks every client out. Calls read the current credentials with one volatile load.
 */
public final class TokenStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TokenStore.class);

    private final Path file;
    private volatile Credentials current;
    @Nullable private final ScheduledExecutorService reloader;

    /** Digest of the bytes last read, good or bad: each change is reported once. */
    private byte[] lastSeen;

    private TokenStore(Path file, Credentials initial, byte[] digest, Duration reloadInterval) {
        this.file = file;
        this.current = initial;
        this.lastSeen = digest;
        if (reloadInterval.isZero()) {
            this.reloader = null;
        } else {
            this.reloader =
                    Executors.newSingleThreadScheduledExecutor(
                            runnable -> {
                                Thread thread = new Thread(runnable, "kv-token-file-reload");
                                thread.setDaemon(true);
                                return thread;
                            });
            long millis = Math.max(1, reloadInterval.toMillis());
            reloader.scheduleWithFixedDelay(
                    this::reloadQuietly, millis, millis, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Reads the file now and, unless {@code reloadInterval} is zero, watches it.
     *
     * @throws IllegalArgumentException naming the file and line of the first problem
     */
    public static TokenStore open(Path file, Duration reloadInterval) {
        byte[] bytes = read(file);
        Credentials credentials = TokenFile.parse(file, lines(bytes));
        return new TokenStore(file, credentials, sha256(bytes), reloadInterval);
    }

    /** The credentials in force. */
    public Credentials current() {
        return current;
    }

    public Path file() {
        return file;
    }

    /**
     * Re-reads the file if its content changed.
     *
     * @return whether new credentials are in force
     */
    synchronized boolean reloadIfChanged() {
        byte[] bytes;
        try {
            bytes = read(file);
        } catch (IllegalArgumentException e) {
            // Gone or unreadable: perhaps being replaced. Report it once per state.
            if (lastSeen.length != 0) {
                lastSeen = new byte[0];
                LOG.error(
                        "Token file not reloaded, the {} credential(s) in use stay: {}",
                        current.size(),
                        e.getMessage());
            }
            return false;
        }
        byte[] digest = sha256(bytes);
        if (Arrays.equals(digest, lastSeen)) {
            return false;
        }
        lastSeen = digest;
        try {
            Credentials next = TokenFile.parse(file, lines(bytes));
            current = next;
            LOG.info(
                    "Token file {} reloaded: {} credential(s), {} of them admin",
                    file,
                    next.size(),
                    next.adminCount());
            return true;
        } catch (IllegalArgumentException e) {
            LOG.error(
                    "Token file changed but not reloaded, the {} credential(s) in use stay: {}",
                    current.size(),
                    e.getMessage());
            return false;
        }
    }

    private void reloadQuietly() {
        try {
            reloadIfChanged();
        } catch (RuntimeException e) {
            LOG.error("Token file {} check failed", file, e);
        }
    }

    @Override
    public void close() {
        if (reloader != null) {
            reloader.shutdownNow();
        }
    }

    private static byte[] read(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    TokenFile.KEY + " " + file + " cannot be read: " + e, e);
        }
    }

    private static List<String> lines(byte[] bytes) {
        try (BufferedReader reader =
                new BufferedReader(
                        new InputStreamReader(
                                new ByteArrayInputStream(bytes), StandardCharsets.UTF_8))) {
            return reader.lines().toList();
        } catch (IOException e) {
            throw new IllegalStateException("reading from memory", e);
        }
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
