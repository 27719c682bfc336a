package io.taishan.kv.server.storage;

/**
 * How much of what a shard acknowledged survives an unclean stop of the server, which decides
 * whether the leases issued before it can still be honoured afterwards.
 */
public enum WalMode {
    /**
     * No WAL: an unclean stop loses every write since the shard's last flush, so every lease issued
     * before it is fenced at the next start and the job goes back to its last checkpoint.
     */
    OFF,

    /**
     * WAL written to the OS on every write, never fsynced: a process crash (the OS keeps the file
     * pages) loses nothing; a machine crash or power loss may lose the tail, so leases survive an
     * unclean stop only when the machine did not reboot in between (same boot id).
     */
    ON,

    /**
     * WAL fsynced before every write is acknowledged: nothing acknowledged is lost on any crash, so
     * leases survive every unclean stop. Costs one fsync per shard per write request.
     */
    SYNC;

    public boolean writesLog() {
        return this != OFF;
    }

    /** The config values {@code wal.enabled} and {@code wal.sync} stand for. */
    public static WalMode of(boolean enabled, boolean sync) {
        if (sync && !enabled) {
            throw new IllegalArgumentException("wal.sync = true needs wal.enabled = true");
        }
        return !enabled ? OFF : sync ? SYNC : ON;
    }

    /** Whether writes acknowledged in a run with this mode survived its unclean stop. */
    boolean survivesUncleanStop(boolean sameBoot) {
        return this == SYNC || (this == ON && sameBoot);
    }
}
