package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.DurableCut;
import io.taishan.kv.proto.DurableFile;
import io.taishan.kv.proto.FilterState;
import io.taishan.kv.proto.Limits;
import io.taishan.kv.proto.SnapshotInfo;
import io.taishan.kv.proto.TableInfo;
import io.taishan.kv.proto.TtlLayout;
import io.taishan.kv.proto.TtlStateSpec;
import io.taishan.kv.proto.UploadSnapshotResponse;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.server.durable.CutFile;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.UploadResult;
import io.taishan.kv.server.storage.DurableSnapshots;
import io.taishan.kv.server.storage.FilterStatus;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.SnapshotMeta;
import io.taishan.kv.server.storage.StateTtl;
import io.taishan.kv.server.storage.TableMeta;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The storage's types as messages and back. */
final class Protos {
    private Protos() {}

    static Limits limits(KvLimits limits) {
        return Limits.newBuilder()
                .setMaxKeyBytes(limits.maxKeyBytes())
                .setMaxValueBytes(limits.maxValueBytes())
                .setMaxRequestBytes(limits.maxRequestBytes())
                .setMaxOpsPerRequest(limits.maxOpsPerRequest())
                .setMaxScanPageEntries(limits.maxScanPageEntries())
                .setMaxScanPageBytes(limits.maxScanPageBytes())
                .setMaxInlineValueBytes(limits.maxInlineValueBytes())
                .build();
    }

    static TableInfo table(TableMeta t) {
        return TableInfo.newBuilder()
                .setName(t.name())
                .setShardCount(t.shardCount())
                .setCreatedAtMillis(t.createdAtMillis())
                .build();
    }

    static SnapshotInfo snapshot(String table, int shard, SnapshotMeta m) {
        return SnapshotInfo.newBuilder()
                .setTable(table)
                .setShard(shard)
                .setSnapshotId(m.snapshotId())
                .setPinned(m.pinned())
                .setCreatedAtMillis(m.createdAtMillis())
                .setSizeBytes(m.sizeBytes())
                .setFileCount(m.fileCount())
                .setReused(m.reused())
                .setInCheckpointStorage(m.inCheckpointStorage())
                .setEvicted(!m.local())
                .build();
    }

    // The storage's FilterStatus and the message of the same name.
    static io.taishan.kv.proto.FilterStatus filter(FilterStatus f) {
        FilterState state =
                switch (f.state()) {
                    case AVAILABLE -> FilterState.FILTER_STATE_AVAILABLE;
                    case REBUILDING -> FilterState.FILTER_STATE_REBUILDING;
                    case UNAVAILABLE -> FilterState.FILTER_STATE_UNAVAILABLE;
                    case SAVED -> FilterState.FILTER_STATE_SAVED;
                    case EMPTY -> FilterState.FILTER_STATE_EMPTY;
                    case MISSING -> FilterState.FILTER_STATE_MISSING;
                };
        return io.taishan.kv.proto.FilterStatus.newBuilder()
                .setState(state)
                .setVersion(f.version())
                .setMemoryBytes(f.memoryBytes())
                .setSavedBytes(f.savedBytes())
                .setEstimatedFpp(f.estimatedFpp())
                .setRebuildRunning(f.rebuildRunning())
                .setRebuildQueued(f.rebuildQueued())
                .setRebuildKeysScanned(f.rebuildKeysScanned())
                .setKeysAtBuild(f.keysAtBuild())
                .setReason(f.reason())
                .build();
    }

    static TtlStateSpec ttlState(StateTtl ttl) {
        return TtlStateSpec.newBuilder()
                .setStateId(ttl.stateId())
                .setTtlMillis(ttl.ttlMillis())
                .setLayout(
                        switch (ttl.layout()) {
                            case VALUE -> TtlLayout.TTL_VALUE;
                            case MAP_ENTRY -> TtlLayout.TTL_MAP_ENTRY;
                            case LIST -> TtlLayout.TTL_LIST;
                        })
                .setFixedElementBytes(ttl.fixedElementBytes())
                .build();
    }

    /** Fails with INVALID_ARGUMENT, naming the table and the state, for a spec without a layout. */
    static StateTtl ttlState(String table, TtlStateSpec spec) {
        StateTtl.Layout layout =
                switch (spec.getLayout()) {
                    case TTL_VALUE -> StateTtl.Layout.VALUE;
                    case TTL_MAP_ENTRY -> StateTtl.Layout.MAP_ENTRY;
                    case TTL_LIST -> StateTtl.Layout.LIST;
                    default ->
                            throw KvServerException.invalid(
                                    "RegisterTtlStates of table '"
                                            + table
                                            + "': state "
                                            + Integer.toHexString(spec.getStateId())
                                            + " has no TTL layout");
                };
        try {
            return new StateTtl(
                    spec.getStateId(), spec.getTtlMillis(), layout, spec.getFixedElementBytes());
        } catch (IllegalArgumentException e) {
            throw KvServerException.invalid(
                    "RegisterTtlStates of table '" + table + "': " + e.getMessage());
        }
    }

    static UploadSnapshotResponse uploaded(DurableSnapshots.UploadedSnapshot snapshot) {
        UploadSnapshotResponse.Builder b =
                UploadSnapshotResponse.newBuilder().setUploadedBytes(snapshot.uploadedBytes());
        for (DurableSnapshots.UploadedCut cut : snapshot.cuts()) {
            UploadResult copies = cut.copies();
            DurableCut.Builder c =
                    DurableCut.newBuilder()
                            .setCutId(cut.durableId())
                            .addAllShards(cut.shards())
                            .setMetadataPack(file("", copies.metadataPack()));
            for (CutFile f : copies.dataFiles()) {
                c.addFiles(file(f.fileName(), f.remote()));
            }
            b.addCuts(c);
        }
        return b.build();
    }

    private static DurableFile file(String name, RemoteFile remote) {
        return DurableFile.newBuilder()
                .setName(name)
                .setPath(remote.path())
                .setSizeBytes(remote.sizeBytes())
                .setCrc32C(remote.crc32c())
                .build();
    }

    /**
     * A request's durable cuts by id.
     *
     * @throws KvServerException INVALID_ARGUMENT for a cut named twice, without a metadata pack, or
     *     with a file name that would leave its directory
     */
    static Map<String, DurableSnapshots.CutCopy> cutCopies(List<DurableCut> cuts) {
        Map<String, DurableSnapshots.CutCopy> byId = new LinkedHashMap<>();
        for (DurableCut cut : cuts) {
            String where = "durable cut '" + cut.getCutId() + "'";
            if (!cut.hasMetadataPack()) {
                throw KvServerException.invalid(where + " has no metadata pack");
            }
            try {
                List<CutFile> files = new ArrayList<>(cut.getFilesCount());
                for (DurableFile f : cut.getFilesList()) {
                    files.add(new CutFile(f.getName(), remote(f)));
                }
                DurableSnapshots.CutCopy copy =
                        new DurableSnapshots.CutCopy(
                                cut.getCutId(), files, remote(cut.getMetadataPack()));
                if (byId.put(cut.getCutId(), copy) != null) {
                    throw KvServerException.invalid(where + " is named twice");
                }
            } catch (IllegalArgumentException e) {
                throw KvServerException.invalid(where + ": " + e.getMessage());
            }
        }
        return byId;
    }

    private static RemoteFile remote(DurableFile f) {
        return new RemoteFile(f.getPath(), f.getSizeBytes(), f.getCrc32C());
    }
}
