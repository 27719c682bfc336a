package io.taishan.kv.server.storage;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Properties;
import javax.annotation.Nullable;

/**
 * What the last run of a server on a data directory left behind: whether it stopped cleanly (every
 * shard flushed), on which boot of the machine it ran and with which {@link WalMode}. Read at
 * start, before anything is served, to decide whether leases issued before can still be trusted;
 * then rewritten as "running" for this run, and as "stopped" only once a clean shutdown has flushed
 * every shard.
 *
 * <p>The boot id ({@code /proc/sys/kernel/random/boot_id}) tells a process crash, after which the
 * OS still holds the WAL's unsynced pages, from a machine crash, which loses them. Where there is
 * none, every unclean stop counts as a machine crash.
 */
final class ServerRunRecord {
    static final String FILE_NAME = "server-run";
    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

    private final Path file;

    ServerRunRecord(Path dataDir) {
        this.file = dataDir.resolve(FILE_NAME);
    }

    /** What the previous run left, or null for a data directory no server has run on yet. */
    @Nullable
    PreviousRun previous() throws IOException {
        if (!Files.exists(file)) {
            return null;
        }
        Properties p = new Properties();
        p.load(new StringReader(Files.readString(file, StandardCharsets.UTF_8)));
        String state = p.getProperty("state");
        String wal = p.getProperty("wal");
        if (state == null || wal == null) {
            throw new IOException("corrupt " + file + ": no state or wal");
        }
        WalMode mode;
        try {
            mode = WalMode.valueOf(wal);
        } catch (IllegalArgumentException e) {
            throw new IOException("corrupt " + file + ": wal = '" + wal + "'");
        }
        return new PreviousRun(
                "stopped".equals(state), p.getProperty("boot-id"), mode, p.getProperty("started"));
    }

    /** Records that a run with this WAL mode has begun: an unclean stop is recognized from now. */
    void running(WalMode mode) throws IOException {
        write("running", mode);
    }

    /** Records a clean stop: only after every shard has been flushed. */
    void stopped(WalMode mode) throws IOException {
        write("stopped", mode);
    }

    private void write(String state, WalMode mode) throws IOException {
        StringBuilder text = new StringBuilder();
        text.append("# written by the kv-server; read at its next start\n");
        text.append("state=").append(state).append('\n');
        text.append("wal=").append(mode.name()).append('\n');
        String boot = currentBootId();
        if (boot != null) {
            text.append("boot-id=").append(boot).append('\n');
        }
        text.append("started=").append(Instant.now()).append('\n');
        DurableFiles.writeAtomically(file, text.toString().getBytes(StandardCharsets.UTF_8));
    }

    @Nullable
    static String currentBootId() {
        try {
            return Files.readString(BOOT_ID, StandardCharsets.US_ASCII).trim();
        } catch (IOException | SecurityException e) {
            return null;
        }
    }

    /**
     * @param stoppedCleanly the run flushed every shard before it ended
     * @param bootId the machine boot it ran on, null when unknown
     */
    record PreviousRun(
            boolean stoppedCleanly,
            @Nullable String bootId,
            WalMode walMode,
            @Nullable String startedAt) {

        /** Whether every write that run acknowledged is still in the live shards. */
        boolean keptEveryAcknowledgedWrite() {
            if (stoppedCleanly) {
                return true;
            }
            String now = currentBootId();
            return walMode.survivesUncleanStop(bootId != null && bootId.equals(now));
        }

        String describe() {
            String boot = currentBootId();
            boolean sameBoot = bootId != null && bootId.equals(boot);
            return "the previous run (started "
                    + startedAt
                    + ", WAL "
                    + walMode
                    + ") stopped uncleanly"
                    + (sameBoot ? " (a process crash)" : " (the machine may have crashed)");
        }
    }
}
