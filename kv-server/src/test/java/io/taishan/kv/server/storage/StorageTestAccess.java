package io.taishan.kv.server.storage;

/** For tests outside this package: what they need to reach of the storage's internals. */
public final class StorageTestAccess {
    private StorageTestAccess() {}

    /** The live directory of the store that holds {@code shard}. */
    public static java.nio.file.Path liveDirOf(Shard shard) {
        return shard.store().liveDir();
    }

    /** The filter bundle a clean close saves for the store that holds {@code shard}. */
    public static java.nio.file.Path savedFiltersOf(Shard shard) {
        return liveDirOf(shard).resolve(FilterBundle.LIVE_FILE_NAME);
    }

    /**
     * Holds the table's read lock, as a write does from its epoch check to its end, until closed:
     * whatever changes leases (OpenShard, Restore) waits for it.
     */
    public static AutoCloseable holdAsADataCall(TableStore table) {
        table.lock().readLock().lock();
        return () -> table.lock().readLock().unlock();
    }

    /** Reads {@code shard}'s filter out of a saved filter bundle. */
    public static io.taishan.bloom.RebuildingFilter readSavedFilter(
            java.nio.file.Path bundle, int shard, io.taishan.bloom.FilterSizing sizing)
            throws java.io.IOException {
        try (FilterBundle.Reader saved = FilterBundle.open(bundle)) {
            return saved.read(shard, sizing);
        }
    }
}
