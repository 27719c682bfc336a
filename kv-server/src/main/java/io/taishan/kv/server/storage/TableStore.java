package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/** One table of this node: its metadata and the shards it has touched. */
public final class TableStore {
    private static final String SHARD_DIR_PREFIX = "shard-";

    private final StorageEngine engine;
    private final TableMeta meta;
    private final Path dir;
    private final ConcurrentHashMap<Integer, ShardStore> shards = new ConcurrentHashMap<>();
    private final TableTtl ttl;

    TableStore(StorageEngine engine, TableMeta meta, Path dir) throws IOException {
        this.engine = engine;
        this.meta = meta;
        this.dir = dir;
        this.ttl = new TableTtl(dir);
    }

    /** The table's states with a TTL, and what expiry did so far. */
    TableTtl ttl() {
        return ttl;
    }

    /** Registers states with a TTL (widening a registered state's TTL, never narrowing it). */
    public void registerTtlStates(List<StateTtl> states) {
        try {
            ttl.register(states);
        } catch (IOException e) {
            throw KvServerException.storage(
                    "cannot record the TTL states of table '" + name() + "'", e);
        }
    }

    public List<StateTtl> ttlStates() {
        return ttl.states();
    }

    /** Entries expiry deleted since the server started. */
    public long expiredEntries() {
        return ttl.expiredEntries();
    }

    /** Entries expiry looked at since the server started. */
    public long sweptEntries() {
        return ttl.sweptEntries();
    }

    /** When the last sweep of the table ended (epoch millis), 0 before the first. */
    public long lastSweepMillis() {
        return ttl.lastSweepMillis();
    }

    public TableMeta meta() {
        return meta;
    }

    public String name() {
        return meta.name();
    }

    public int shardCount() {
        return meta.shardCount();
    }

    Path dir() {
        return dir;
    }

    /** Fails with SHARD_OUT_OF_RANGE unless {@code shard} is in {@code [0, shardCount)}. */
    public void checkShard(int shard) {
        if (shard < 0 || shard >= meta.shardCount()) {
            throw new KvServerException(
                    ErrorCode.SHARD_OUT_OF_RANGE,
                    "shard "
                            + shard
                            + " out of range for table '"
                            + meta.name()
                            + "' with "
                            + meta.shardCount()
                            + " shards");
        }
    }

    /** The shard, loading its epoch and snapshots from disk on first use. */
    public ShardStore shard(int shard) {
        checkShard(shard);
        ShardStore store = shards.get(shard);
        if (store != null) {
            return store;
        }
        return shards.computeIfAbsent(
                shard,
                s -> {
                    try {
                        return new ShardStore(
                                engine, meta.name(), s, dir.resolve(SHARD_DIR_PREFIX + s));
                    } catch (IOException e) {
                        throw KvServerException.storage(
                                "cannot load table '" + meta.name() + "' shard " + s, e);
                    }
                });
    }

    /** The shards that exist on disk or in memory, ascending; untouched shards have no state. */
    public List<Integer> existingShards() {
        TreeSet<Integer> result = new TreeSet<>(shards.keySet());
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, SHARD_DIR_PREFIX + "*")) {
            for (Path p : ds) {
                try {
                    int s = Integer.parseInt(p.getFileName().toString().substring(6));
                    if (s >= 0 && s < meta.shardCount()) {
                        result.add(s);
                    }
                } catch (NumberFormatException ignored) {
                    // not ours
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new ArrayList<>(result);
    }

    Collection<ShardStore> loadedShards() {
        return shards.values();
    }

    public long diskBytes() {
        return DurableFiles.sizeOf(dir);
    }
}
