package io.taishan.kv.server.rpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KeyValue;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiGetResponse;
import io.taishan.kv.proto.MultiScanRequest;
import io.taishan.kv.proto.MultiScanResponse;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ScanResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.ShardWriteResult;
import io.taishan.kv.proto.ValueResult;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.proto.WriteResponse;
import io.taishan.kv.server.rpc.stream.LargeValueBudget;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.ScanPage;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.SnapshotMeta;
import io.taishan.kv.server.storage.TableStore;
import io.taishan.kv.server.storage.TableWrite;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * Get, MultiGet, Scan, MultiScan and Write: the data path.
 *
 * <p>{@code Get} and {@code MultiGet} run on the network thread that read them (see {@link
 * CallExecutors}); whenever the read would wait (its table's lock held or awaited, its store to
 * open, a MultiGet of more than {@link #INLINE_MULTI_GET_KEYS} keys) they answer null and go on on
 * the call pool instead ({@link Responder#respondInline}). Error messages are built only once a
 * check has failed, and values read from RocksDB go into responses without a copy.
 *
 * <p>A Write is checked whole first ({@link WriteValidator}); how it is applied over several shards
 * is the storage's rule ({@link TableWrite}).
 */
final class DataRpcs {
    /**
     * A MultiGet of more keys runs on the pool: it would hold the network thread (and every call on
     * the connections it serves) for too long.
     */
    static final int INLINE_MULTI_GET_KEYS = 128;

    private static final GetResponse CHUNKED_GET =
            GetResponse.newBuilder().setFound(true).setValueChunked(true).build();
    private static final ValueResult CHUNKED_RESULT =
            ValueResult.newBuilder().setFound(true).setValueChunked(true).build();

    private final RequestTargets targets;
    private final RequestLimits limits;
    private final WriteValidator validator;
    private final LargeValueBudget largeValues;
    private final WriteStats writeStats;

    DataRpcs(
            RequestTargets targets,
            RequestLimits limits,
            LargeValueBudget largeValues,
            WriteStats writeStats) {
        this.targets = targets;
        this.limits = limits;
        this.validator = new WriteValidator(limits, targets, largeValues);
        this.largeValues = largeValues;
        this.writeStats = writeStats;
    }

    /** Null when {@code inline} and the read would wait. */
    @Nullable
    GetResponse get(GetRequest request, boolean inline) {
        TableStore table = targets.table(request.getTable());
        Shard shard = targets.ownedShard(table, request.getShard().getShard());
        ByteString key = request.getKey();
        if (!limits.keyFits(key)) {
            throw limits.keyTooLarge(key, "Get of " + shard);
        }
        long epoch = request.getShard().getEpoch();
        int maxInline = limits.maxInlineValueBytes();
        byte[] value =
                inline
                        ? shard.getIfReady(epoch, key.toByteArray(), maxInline)
                        : shard.getInline(epoch, key.toByteArray(), maxInline);
        if (value == Shard.NOT_READY) {
            return null;
        }
        if (value == Shard.CHUNKED) {
            return CHUNKED_GET;
        }
        // Wrapped, not copied: RocksDB made this array for this call and nobody else holds it.
        return value == null
                ? GetResponse.getDefaultInstance()
                : GetResponse.newBuilder()
                        .setFound(true)
                        .setValue(UnsafeByteOperations.unsafeWrap(value))
                        .build();
    }

    /** Null when {@code inline} and the read would wait; then nothing was answered yet. */
    @Nullable
    MultiGetResponse multiGet(MultiGetRequest request, boolean inline) {
        TableStore table = targets.table(request.getTable());
        int serializedBytes = request.getSerializedSize();
        if (!limits.requestFits(serializedBytes)) {
            throw limits.requestTooLarge(serializedBytes, multiGetWhere(table));
        }
        if (!limits.opCountFits(request.getKeysCount())) {
            throw limits.tooManyOps(request.getKeysCount(), multiGetWhere(table));
        }
        // Keys of one shard (and epoch) are read together, in one RocksDB MultiGet.
        Map<ShardRef, List<Integer>> groups = new LinkedHashMap<>();
        for (int i = 0; i < request.getKeysCount(); i++) {
            KeyRef ref = request.getKeys(i);
            Shard shard = targets.ownedShard(table, ref.getShard().getShard());
            if (!limits.keyFits(ref.getKey())) {
                throw limits.keyTooLarge(ref.getKey(), multiGetWhere(table) + " " + shard);
            }
            groups.computeIfAbsent(ref.getShard(), s -> new ArrayList<>()).add(i);
        }
        if (inline && request.getKeysCount() > INLINE_MULTI_GET_KEYS) {
            return null;
        }
        ValueResult[] results = new ValueResult[request.getKeysCount()];
        int maxInline = limits.maxInlineValueBytes();
        // One answer holds at most about a request's worth of values; the rest are read by chunks.
        long inlineLeft = limits.maxRequestBytes();
        for (Map.Entry<ShardRef, List<Integer>> g : groups.entrySet()) {
            List<byte[]> keys = new ArrayList<>(g.getValue().size());
            for (int i : g.getValue()) {
                keys.add(request.getKeys(i).getKey().toByteArray());
            }
            Shard shard = table.shard(g.getKey().getShard());
            long epoch = g.getKey().getEpoch();
            List<byte[]> values =
                    inline
                            ? shard.multiGetIfReady(epoch, keys, maxInline, inlineLeft)
                            : shard.multiGetInline(epoch, keys, maxInline, inlineLeft);
            if (values == null) {
                return null;
            }
            for (int j = 0; j < values.size(); j++) {
                byte[] v = values.get(j);
                ValueResult r;
                if (v == null) {
                    r = ValueResult.getDefaultInstance();
                } else if (v == Shard.CHUNKED) {
                    r = CHUNKED_RESULT;
                } else {
                    inlineLeft -= v.length;
                    // Wrapped: RocksDB made each array for this call and nobody else holds it.
                    r =
                            ValueResult.newBuilder()
                                    .setFound(true)
                                    .setValue(UnsafeByteOperations.unsafeWrap(v))
                                    .build();
                }
                results[g.getValue().get(j)] = r;
            }
        }
        return MultiGetResponse.newBuilder().addAllValues(Arrays.asList(results)).build();
    }

    private static String multiGetWhere(TableStore table) {
        return "MultiGet on table '" + table.name() + "'";
    }

    ScanResponse scan(ScanRequest request) {
        return scanPage(targets.table(request.getTable()), request);
    }

    /**
     * The first page of each scan, in order, until the answer holds a request's worth of bytes; the
     * scans after that get no page and are asked again by the client.
     */
    MultiScanResponse multiScan(MultiScanRequest request) {
        TableStore table = targets.table(request.getTable());
        if (!limits.opCountFits(request.getScansCount())) {
            throw limits.tooManyOps(
                    request.getScansCount(), "MultiScan on table '" + table.name() + "'");
        }
        MultiScanResponse.Builder b = MultiScanResponse.newBuilder();
        long bytes = 0;
        for (ScanRequest scan : request.getScansList()) {
            if (!scan.getTable().equals(table.name())) {
                throw KvServerException.invalid(
                        "MultiScan on table '"
                                + table.name()
                                + "' holds a scan of table '"
                                + scan.getTable()
                                + "'");
            }
            if (bytes >= limits.maxRequestBytes()) {
                break;
            }
            ScanResponse page = scanPage(table, scan);
            bytes += page.getSerializedSize();
            b.addPages(page);
        }
        return b.build();
    }

    private ScanResponse scanPage(TableStore table, ScanRequest request) {
        Shard shard = targets.ownedShard(table, request.getShard().getShard());
        checkScanBound(request.getStartKey(), shard);
        checkScanBound(request.getEndKey(), shard);
        checkScanBound(request.getPrefix(), shard);
        if (request.getLimit() < 0) {
            throw KvServerException.invalid(
                    "Scan of " + shard + ": negative page limit " + request.getLimit());
        }
        if (!request.getEndKey().isEmpty()
                && ByteString.unsignedLexicographicalComparator()
                                .compare(request.getStartKey(), request.getEndKey())
                        > 0) {
            throw KvServerException.invalid(
                    "Scan of " + shard + ": start key is after end key (bad range)");
        }
        ScanPage page =
                shard.scanInline(
                        request.getShard().getEpoch(),
                        request.getStartKey().toByteArray(),
                        request.getEndKey().toByteArray(),
                        request.getPrefix().toByteArray(),
                        limits.scanPageEntries(request.getLimit()),
                        limits.scanPageBytes(),
                        request.getKeysOnly(),
                        limits.maxInlineValueBytes());
        // Wrapped, not copied: the iterator made every key and value array for this page (the
        // empty value of a keys-only scan is shared, and never written).
        ScanResponse.Builder b = ScanResponse.newBuilder().setHasMore(page.hasMore());
        for (ScanPage.Entry e : page.entries()) {
            KeyValue.Builder kv =
                    KeyValue.newBuilder().setKey(UnsafeByteOperations.unsafeWrap(e.key()));
            if (e.value() == Shard.CHUNKED) {
                kv.setValueChunked(true);
            } else {
                kv.setValue(UnsafeByteOperations.unsafeWrap(e.value()));
            }
            b.addEntries(kv);
        }
        if (page.hasMore()) {
            b.setNextStartKey(UnsafeByteOperations.unsafeWrap(page.nextStartKey()));
        }
        return b.build();
    }

    private void checkScanBound(ByteString bound, Shard shard) {
        if (!limits.keyFits(bound)) {
            throw limits.keyTooLarge(bound, "Scan of " + shard);
        }
    }

    WriteResponse write(WriteRequest request) {
        TableStore table = targets.table(request.getTable());
        Map<Long, byte[]> staged = new HashMap<>(0);
        try {
            int[] opCounts = validator.validate(table, request, staged);
            WriteResponse written = apply(table, request, staged);
            writeStats.applied(request.getShardsCount(), opCounts);
            return written;
        } finally {
            // The values are in RocksDB (or the write failed): their heap goes.
            for (byte[] v : staged.values()) {
                largeValues.release(v.length);
            }
        }
    }

    private WriteResponse apply(TableStore table, WriteRequest request, Map<Long, byte[]> staged) {
        List<TableWrite.ShardOps> writes = new ArrayList<>(request.getShardsCount());
        for (ShardWrite w : request.getShardsList()) {
            writes.add(new TableWrite.ShardOps(w.getShard(), w.getEpoch(), w.getOpsList()));
        }
        TableWrite.Result applied = table.write(writes, staged::get);
        WriteResponse.Builder b = WriteResponse.newBuilder();
        for (int i = 0; i < writes.size(); i++) {
            int shard = writes.get(i).shard();
            ShardWriteResult.Builder r = ShardWriteResult.newBuilder().setShard(shard);
            for (SnapshotMeta m : applied.snapshots().get(i)) {
                writeStats.snapshotTaken(m.reused());
                r.addSnapshots(Protos.snapshot(table.name(), shard, m));
            }
            if (applied.filterVersions()[i] >= 0) {
                r.setFilterVersion(applied.filterVersions()[i]);
            }
            b.addResults(r);
        }
        return b.build();
    }
}
