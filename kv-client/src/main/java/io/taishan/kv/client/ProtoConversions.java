package io.taishan.kv.client;

import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.Limits;
import io.taishan.kv.protocol.KvLimits;
import java.util.ArrayList;
import java.util.List;

/** From wire messages to the client API's records, and the few records a request carries back. */
final class ProtoConversions {
    private ProtoConversions() {}

    static TableInfo table(io.taishan.kv.proto.TableInfo table) {
        return new TableInfo(table.getName(), table.getShardCount(), table.getCreatedAtMillis());
    }

    static SnapshotInfo snapshot(io.taishan.kv.proto.SnapshotInfo s) {
        return new SnapshotInfo(
                s.getTable(),
                s.getShard(),
                s.getSnapshotId(),
                s.getPinned(),
                s.getCreatedAtMillis(),
                s.getSizeBytes(),
                s.getFileCount(),
                s.getReused(),
                s.getInCheckpointStorage(),
                !s.getEvicted());
    }

    /**
     * @param name the client's name for the node, for a server from before named nodes
     */
    static NodeHealth health(String name, String address, HealthResponse h) {
        return new NodeHealth(
                h.getNodeName().isEmpty() ? name : h.getNodeName(),
                address,
                h.getNodeIndex(),
                h.getStatus(),
                h.getOpenShards(),
                h.getTables(),
                h.getUptimeMillis(),
                h.getVersion(),
                h.getFilterBytes(),
                h.getFilterLimitBytes(),
                h.getFilterRebuilds());
    }

    static ShardStatus shard(String table, io.taishan.kv.proto.ShardStatus s) {
        io.taishan.kv.proto.FilterStatus f = s.getFilter();
        return new ShardStatus(
                table,
                s.getShard(),
                s.getEpoch(),
                s.getOpen(),
                filterState(f.getState()),
                f.getVersion(),
                f.getMemoryBytes(),
                f.getSavedBytes(),
                f.getEstimatedFpp(),
                f.getRebuildRunning(),
                f.getRebuildQueued(),
                f.getRebuildKeysScanned(),
                f.getKeysAtBuild(),
                f.getReason(),
                s.hasLastActiveMillis() ? s.getLastActiveMillis() : -1);
    }

    private static ShardStatus.FilterState filterState(io.taishan.kv.proto.FilterState state) {
        return switch (state) {
            case FILTER_STATE_AVAILABLE -> ShardStatus.FilterState.AVAILABLE;
            case FILTER_STATE_REBUILDING -> ShardStatus.FilterState.REBUILDING;
            case FILTER_STATE_UNAVAILABLE -> ShardStatus.FilterState.UNAVAILABLE;
            case FILTER_STATE_SAVED -> ShardStatus.FilterState.SAVED;
            case FILTER_STATE_EMPTY -> ShardStatus.FilterState.EMPTY;
            case FILTER_STATE_MISSING -> ShardStatus.FilterState.MISSING;
            case FILTER_STATE_UNSPECIFIED, UNRECOGNIZED -> ShardStatus.FilterState.UNKNOWN;
        };
    }

    /** A limit the server left unset (0) is taken as no limit. */
    static KvLimits limits(Limits l) {
        int maxValueBytes = orUnlimited(l.getMaxValueBytes());
        return new KvLimits(
                orUnlimited(l.getMaxKeyBytes()),
                maxValueBytes,
                orUnlimited(l.getMaxRequestBytes()),
                orUnlimited(l.getMaxOpsPerRequest()),
                orUnlimited(l.getMaxScanPageEntries()),
                orUnlimited(l.getMaxScanPageBytes()),
                // An older server sends every value inline.
                l.getMaxInlineValueBytes() > 0 ? l.getMaxInlineValueBytes() : maxValueBytes);
    }

    private static int orUnlimited(int limit) {
        return limit > 0 ? limit : Integer.MAX_VALUE;
    }

    static DurableCut durableCut(io.taishan.kv.proto.DurableCut c) {
        List<DurableFile> files = new ArrayList<>(c.getFilesCount());
        for (io.taishan.kv.proto.DurableFile f : c.getFilesList()) {
            files.add(durableFile(f));
        }
        return new DurableCut(
                c.getCutId(), c.getShardsList(), files, durableFile(c.getMetadataPack()));
    }

    static io.taishan.kv.proto.DurableCut durableCut(DurableCut c) {
        io.taishan.kv.proto.DurableCut.Builder b =
                io.taishan.kv.proto.DurableCut.newBuilder()
                        .setCutId(c.cutId())
                        .setMetadataPack(durableFile(c.metadataPack()));
        // A restore names the cut; which shards an upload asked for means nothing to it.
        for (DurableFile f : c.files()) {
            b.addFiles(durableFile(f));
        }
        return b.build();
    }

    private static DurableFile durableFile(io.taishan.kv.proto.DurableFile f) {
        return new DurableFile(f.getName(), f.getPath(), f.getSizeBytes(), f.getCrc32C());
    }

    private static io.taishan.kv.proto.DurableFile durableFile(DurableFile f) {
        return io.taishan.kv.proto.DurableFile.newBuilder()
                .setName(f.name())
                .setPath(f.path())
                .setSizeBytes(f.sizeBytes())
                .setCrc32C(f.crc32c())
                .build();
    }
}
