package io.taishan.kv.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.DeleteRange;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DurableCut;
import io.taishan.kv.proto.DurableFile;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.SnapshotMarker;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.durable.DurableOptions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Requests that a well-behaved client never sends, straight through the generated stub: each gets
 * the documented status, error code and a message naming what was wrong, and changes nothing.
 */
class RequestValidationTest {
    private static final int MAX_KEY = 100;
    private static final int MAX_VALUE = 1000;
    private static final int MAX_REQUEST = 64 * 1024;
    private static final int MAX_OPS = 50;

    private static EmbeddedKvServer server;
    private static ManagedChannel channel;
    private static KvServiceGrpc.KvServiceBlockingStub kv;

    @BeforeAll
    static void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .maxKeyBytes(MAX_KEY)
                                .maxValueBytes(MAX_VALUE)
                                .maxRequestBytes(MAX_REQUEST)
                                .maxOpsPerRequest(MAX_OPS)
                                .blockCacheBytes(16 << 20)
                                .writeBufferBytes(8 << 20)
                                .durable(
                                        new DurableOptions(
                                                true,
                                                null,
                                                Map.of(),
                                                null,
                                                1,
                                                1,
                                                Duration.ZERO,
                                                Duration.ofSeconds(30)))
                                .build());
        channel = NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
        kv = KvServiceGrpc.newBlockingStub(channel).withDeadlineAfter(1, TimeUnit.MINUTES);
        kv.createTable(CreateTableRequest.newBuilder().setName("t").setShardCount(4).build());
        kv.createTable(CreateTableRequest.newBuilder().setName("other").setShardCount(2).build());
    }

    @AfterAll
    static void stop() throws InterruptedException {
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        server.close();
    }

    private static long open(int shard) {
        return kv.openShard(OpenShardRequest.newBuilder().setTable("t").setShard(shard).build())
                .getEpoch();
    }

    private static WriteOp put(String key, String value) {
        return put(ByteString.copyFromUtf8(key), ByteString.copyFromUtf8(value));
    }

    private static WriteOp put(ByteString key, ByteString value) {
        return WriteOp.newBuilder().setPut(Put.newBuilder().setKey(key).setValue(value)).build();
    }

    private static ShardRef ref(int shard, long epoch) {
        return ShardRef.newBuilder().setShard(shard).setEpoch(epoch).build();
    }

    private static boolean found(int shard, long epoch, String key) {
        return kv.get(
                        GetRequest.newBuilder()
                                .setTable("t")
                                .setShard(ref(shard, epoch))
                                .setKey(ByteString.copyFromUtf8(key))
                                .build())
                .getFound();
    }

    private static void assertFails(
            ThrowingCallable call, Status.Code status, ErrorCode code, String... messageParts) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(status);
                            assertThat(e.getTrailers().get(KvErrors.ERROR_CODE_KEY))
                                    .isEqualTo(code.name());
                            assertThat(e.getStatus().getDescription()).contains(messageParts);
                        });
    }

    @Test
    void durableCallsThatAClientNeverSends() {
        String dir = "file:///tmp/never-written";
        UploadSnapshotRequest upload =
                UploadSnapshotRequest.newBuilder()
                        .setTable("t")
                        .setSnapshotId(77)
                        .addShards(0)
                        .setSharedDir(dir)
                        .setExclusiveDir(dir)
                        .build();
        assertFails(
                () -> kv.uploadSnapshot(upload.toBuilder().setSnapshotId(-1).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "negative snapshot id -1");
        assertFails(
                () -> kv.uploadSnapshot(upload.toBuilder().setSharedDir(" ").build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "shared_dir and exclusive_dir are required");
        assertFails(
                () -> kv.uploadSnapshot(upload.toBuilder().addShards(0).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "shard 0 named twice");
        assertFails(
                () -> kv.uploadSnapshot(upload.toBuilder().addShards(9).build()),
                Status.Code.OUT_OF_RANGE,
                ErrorCode.SHARD_OUT_OF_RANGE,
                "shard 9");
        assertFails(
                () -> kv.uploadSnapshot(upload),
                Status.Code.NOT_FOUND,
                ErrorCode.SNAPSHOT_NOT_FOUND,
                "snapshot 77 of table 't' shard 0");

        String id = "0b7e8f52-6a1d-4c39-9d0e-2f9a4c1b7e11";
        DurableFile pack = DurableFile.newBuilder().setPath(dir + "/pack").setSizeBytes(10).build();
        DurableCut cut =
                DurableCut.newBuilder()
                        .setCutId(id)
                        .addFiles(
                                DurableFile.newBuilder()
                                        .setName("000009.sst")
                                        .setPath(dir + "/a")
                                        .setSizeBytes(10))
                        .setMetadataPack(pack)
                        .build();
        RestoreShardsRequest restore =
                RestoreShardsRequest.newBuilder()
                        .setTable("t")
                        .setWriter("w")
                        .addShards(
                                io.taishan.kv.proto.ShardRestore.newBuilder()
                                        .setShard(0)
                                        .setSnapshotId(77)
                                        .setDurableCutId(id))
                        .addDurableCuts(cut)
                        .build();
        assertFails(
                () -> kv.restoreShards(restore.toBuilder().clearDurableCuts().build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "names durable cut " + id + ", which the request's durable cuts lack");
        assertFails(
                () -> kv.restoreShards(restore.toBuilder().addDurableCuts(cut).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "durable cut '" + id + "' is named twice");
        assertFails(
                () ->
                        kv.restoreShards(
                                restore.toBuilder()
                                        .setDurableCuts(0, cut.toBuilder().clearMetadataPack())
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "has no metadata pack");
        assertFails(
                () ->
                        kv.restoreShards(
                                restore.toBuilder()
                                        .setDurableCuts(
                                                0,
                                                cut.toBuilder()
                                                        .setFiles(
                                                                0,
                                                                cut.getFiles(0).toBuilder()
                                                                        .setName("../x.sst")))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "not a plain file name: '../x.sst'");
        assertFails(
                () ->
                        kv.restoreShards(
                                restore.toBuilder()
                                        .setShards(
                                                0,
                                                restore.getShards(0).toBuilder()
                                                        .setDurableCutId("x"))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "names no durable cut id: 'x'");
        // None of them fetched or registered anything.
        assertThat(server.storage().tableStore("t").allSnapshots())
                .noneMatch(s -> s.meta().snapshotId() == 77);
        assertThat(server.server().durableTransfers().orElseThrow().stats().downloadedFiles())
                .isZero();
    }

    @Test
    void healthAndClusterInfoDescribeTheNode() {
        var health = kv.health(HealthRequest.getDefaultInstance());
        assertThat(health.getStatus()).isEqualTo("SERVING");
        assertThat(health.getNodeAddress()).isEqualTo(server.address());
        assertThat(health.getTables()).isGreaterThanOrEqualTo(2);
        var info = kv.clusterInfo(ClusterInfoRequest.getDefaultInstance());
        assertThat(info.getNodesList()).containsExactly(server.address());
        assertThat(info.getSelfIndex()).isZero();
        assertThat(info.getLimits().getMaxKeyBytes()).isEqualTo(MAX_KEY);
        assertThat(info.getLimits().getMaxRequestBytes()).isEqualTo(MAX_REQUEST);
    }

    @Test
    void malformedNamesShardsAndRanges() {
        assertFails(
                () -> kv.createTable(CreateTableRequest.newBuilder().setShardCount(1).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "invalid table name ''");
        assertFails(
                () -> kv.openShard(OpenShardRequest.newBuilder().setShard(0).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "invalid table name");
        assertFails(
                () -> kv.createTable(CreateTableRequest.newBuilder().setName("z").build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "invalid shard count 0");
        assertFails(
                () ->
                        kv.openShard(
                                OpenShardRequest.newBuilder().setTable("t").setShard(-1).build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "negative shard -1",
                "'t'");
        assertFails(
                () -> kv.openShard(OpenShardRequest.newBuilder().setTable("t").setShard(4).build()),
                Status.Code.OUT_OF_RANGE,
                ErrorCode.SHARD_OUT_OF_RANGE,
                "shard 4 out of range for table 't' with 4 shards");
        assertFails(
                () ->
                        kv.openShard(
                                OpenShardRequest.newBuilder().setTable("nope").setShard(0).build()),
                Status.Code.NOT_FOUND,
                ErrorCode.TABLE_NOT_FOUND,
                "table 'nope' not found");
        long epoch = open(0);
        assertFails(
                () ->
                        kv.scan(
                                ScanRequest.newBuilder()
                                        .setTable("t")
                                        .setShard(ref(0, epoch))
                                        .setStartKey(ByteString.copyFromUtf8("b"))
                                        .setEndKey(ByteString.copyFromUtf8("a"))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "bad range",
                "table 't' shard 0");
        assertFails(
                () ->
                        kv.scan(
                                ScanRequest.newBuilder()
                                        .setTable("t")
                                        .setShard(ref(0, epoch))
                                        .setLimit(-5)
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "negative page limit");
        assertFails(
                () ->
                        kv.snapshot(
                                SnapshotRequest.newBuilder()
                                        .setTable("t")
                                        .addShards(ref(0, epoch))
                                        .setSnapshotId(-1)
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "negative snapshot id -1");
    }

    @Test
    void aBadOpAnywhereLeavesEveryShardUntouched() {
        long e1 = open(1);
        long e2 = open(2);
        WriteOp badRange =
                WriteOp.newBuilder()
                        .setDeleteRange(
                                DeleteRange.newBuilder()
                                        .setBeginKey(ByteString.copyFromUtf8("z"))
                                        .setEndKey(ByteString.copyFromUtf8("a")))
                        .build();
        assertFails(
                () ->
                        kv.write(
                                WriteRequest.newBuilder()
                                        .setTable("t")
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(1)
                                                        .setEpoch(e1)
                                                        .addOps(put("x", "1")))
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(2)
                                                        .setEpoch(e2)
                                                        .addOps(put("x", "1"))
                                                        .addOps(badRange))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "table 't' shard 2",
                "op #1",
                "bad range");
        assertFails(
                () ->
                        kv.write(
                                WriteRequest.newBuilder()
                                        .setTable("t")
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(1)
                                                        .setEpoch(e1)
                                                        .addOps(put("x", "1"))
                                                        .addOps(WriteOp.getDefaultInstance()))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "no op set");
        assertFails(
                () ->
                        kv.write(
                                WriteRequest.newBuilder()
                                        .setTable("t")
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(1)
                                                        .setEpoch(e1)
                                                        .addOps(put("x", "1")))
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(1)
                                                        .setEpoch(e1)
                                                        .addOps(put("y", "1")))
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "shard 1 appears twice");
        assertThat(found(1, e1, "x")).isFalse();
        assertThat(found(2, e2, "x")).isFalse();
    }

    @Test
    void oneStaleEpochFailsTheWholeWrite() {
        long e1 = open(1);
        long stale = open(3);
        long e3 = open(3);
        assertFails(
                () ->
                        kv.write(
                                WriteRequest.newBuilder()
                                        .setTable("t")
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(1)
                                                        .setEpoch(e1)
                                                        .addOps(put("stale-batch", "1")))
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(3)
                                                        .setEpoch(stale)
                                                        .addOps(put("stale-batch", "1")))
                                        .build()),
                Status.Code.FAILED_PRECONDITION,
                ErrorCode.FENCED,
                "table 't' shard 3",
                "epoch " + stale,
                "current epoch is " + e3);
        assertThat(found(1, e1, "stale-batch")).isFalse();
        assertThat(found(3, e3, "stale-batch")).isFalse();
    }

    @Test
    void oversizedKeysValuesAndRequestsExceedTheLimits() {
        long epoch = open(0);
        ByteString bigKey = ByteString.copyFrom(new byte[MAX_KEY + 1]);
        ByteString bigValue = ByteString.copyFrom(new byte[MAX_VALUE + 1]);
        assertFails(
                () -> kv.write(oneShard(epoch, put(bigKey, ByteString.EMPTY))),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "key of 101 bytes",
                "limit of 100 bytes",
                "table 't' shard 0");
        assertFails(
                () -> kv.write(oneShard(epoch, put(ByteString.copyFromUtf8("k"), bigValue))),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "value of 1001 bytes",
                "limit of 1000 bytes");
        assertFails(
                () ->
                        kv.get(
                                GetRequest.newBuilder()
                                        .setTable("t")
                                        .setShard(ref(0, epoch))
                                        .setKey(bigKey)
                                        .build()),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "key of 101 bytes");
        WriteOp[] many = new WriteOp[MAX_OPS + 1];
        Arrays.fill(many, put("k", "v"));
        assertFails(
                () -> kv.write(oneShard(epoch, many)),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "51 ops",
                "limit of 50 ops");
        MultiGetRequest.Builder mg = MultiGetRequest.newBuilder().setTable("t");
        for (int i = 0; i < 40; i++) {
            mg.addKeys(
                    KeyRef.newBuilder()
                            .setShard(ref(0, epoch))
                            .setKey(ByteString.copyFrom(new byte[MAX_KEY])));
        }
        for (int i = 0; i < 20; i++) {
            mg.addKeys(KeyRef.newBuilder().setShard(ref(0, epoch)).setKey(ByteString.EMPTY));
        }
        assertFails(
                () -> kv.multiGet(mg.build()),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "60 ops");
        assertThat(found(0, epoch, "k")).isFalse();
    }

    @Test
    void requestOverTheRequestLimitNamesIt() {
        // Values within their own limit, together over the request limit but under gRPC's own
        // inbound cap, so our check answers and names the limit.
        ShardWrite.Builder sw = ShardWrite.newBuilder().setShard(0).setEpoch(open(0));
        for (int i = 0; i < MAX_OPS; i++) {
            sw.addOps(
                    put(
                            ByteString.copyFromUtf8("big" + i),
                            ByteString.copyFrom(new byte[MAX_VALUE])));
        }
        WriteRequest request =
                WriteRequest.newBuilder()
                        .setTable("t")
                        .addShards(sw)
                        .addShards(
                                ShardWrite.newBuilder()
                                        .setShard(1)
                                        .setEpoch(open(1))
                                        .addAllOps(sw.getOpsList().subList(0, 20)))
                        .build();
        assertThat(request.getSerializedSize()).isGreaterThan(MAX_REQUEST);
        assertFails(
                () -> kv.write(request),
                Status.Code.RESOURCE_EXHAUSTED,
                ErrorCode.LIMIT_EXCEEDED,
                "request of " + request.getSerializedSize() + " bytes",
                "limit of " + MAX_REQUEST + " bytes");
    }

    /** A Write naming a staged value that was never uploaded changes nothing, and says why. */
    @Test
    void aWriteNamingAnUnknownStagedValueIsRefusedWhole() {
        long epoch = open(0);
        WriteOp staged =
                WriteOp.newBuilder()
                        .setPut(
                                Put.newBuilder()
                                        .setKey(ByteString.copyFromUtf8("big"))
                                        .setStagedValueId(42))
                        .build();
        assertFails(
                () -> kv.write(oneShard(epoch, put("before-staged", "v"), staged)),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "no staged value 42",
                "op #1");
        WriteOp both =
                WriteOp.newBuilder()
                        .setPut(
                                Put.newBuilder()
                                        .setKey(ByteString.copyFromUtf8("big"))
                                        .setValue(ByteString.copyFromUtf8("v"))
                                        .setStagedValueId(42))
                        .build();
        assertFails(
                () -> kv.write(oneShard(epoch, both)),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "both a value and a staged value id");
        assertThat(found(0, epoch, "before-staged")).isFalse();
        assertThat(found(0, epoch, "big")).isFalse();
    }

    private static WriteRequest oneShard(long epoch, WriteOp... ops) {
        return WriteRequest.newBuilder()
                .setTable("t")
                .addShards(
                        ShardWrite.newBuilder().setShard(0).setEpoch(epoch).addAllOps(List.of(ops)))
                .build();
    }

    @Test
    void missingSnapshotsAndMismatchedClones() {
        assertFails(
                () ->
                        kv.restore(
                                RestoreRequest.newBuilder()
                                        .setTable("t")
                                        .setShard(1)
                                        .setSnapshotId(99)
                                        .build()),
                Status.Code.NOT_FOUND,
                ErrorCode.SNAPSHOT_NOT_FOUND,
                "snapshot 99 of table 't' shard 1 not found");
        assertFails(
                () ->
                        kv.clone(
                                CloneRequest.newBuilder()
                                        .setSourceTable("t")
                                        .setShard(1)
                                        .setSnapshotId(1)
                                        .setTargetTable("other")
                                        .build()),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "shard counts differ");
        assertFails(
                () ->
                        kv.clone(
                                CloneRequest.newBuilder()
                                        .setSourceTable("t")
                                        .setShard(1)
                                        .setSnapshotId(1)
                                        .setTargetTable("missing")
                                        .build()),
                Status.Code.NOT_FOUND,
                ErrorCode.TABLE_NOT_FOUND,
                "table 'missing' not found");
        assertThat(
                        kv.dropSnapshot(
                                        DropSnapshotRequest.newBuilder()
                                                .setTable("t")
                                                .setShard(1)
                                                .setSnapshotId(99)
                                                .build())
                                .getDropped())
                .isFalse();
        assertFails(
                () ->
                        kv.listSnapshots(
                                ListSnapshotsRequest.newBuilder()
                                        .setTable("t")
                                        .setShard(9)
                                        .build()),
                Status.Code.OUT_OF_RANGE,
                ErrorCode.SHARD_OUT_OF_RANGE,
                "shard 9");
    }

    @Test
    void snapshotMarkerInAWriteReportsTheSnapshot() {
        long epoch = open(2);
        var response =
                kv.write(
                        WriteRequest.newBuilder()
                                .setTable("t")
                                .addShards(
                                        ShardWrite.newBuilder()
                                                .setShard(2)
                                                .setEpoch(epoch)
                                                .addOps(put("m", "1"))
                                                .addOps(
                                                        WriteOp.newBuilder()
                                                                .setSnapshot(
                                                                        SnapshotMarker.newBuilder()
                                                                                .setSnapshotId(5)
                                                                                .setPinned(true))))
                                .build());
        assertThat(response.getResultsList())
                .singleElement()
                .satisfies(
                        r -> {
                            assertThat(r.getShard()).isEqualTo(2);
                            assertThat(r.getSnapshotsList())
                                    .singleElement()
                                    .satisfies(
                                            s -> {
                                                assertThat(s.getSnapshotId()).isEqualTo(5);
                                                assertThat(s.getPinned()).isTrue();
                                                assertThat(s.getTable()).isEqualTo("t");
                                                assertThat(s.getShard()).isEqualTo(2);
                                            });
                        });
    }

    @Test
    void filterFetchesAreValidatedAndLeaseChecked() {
        long epoch = open(3);
        // The stream's first message is where a failure shows on the blocking stub.
        assertFails(
                () -> fetch("nope", ref(0, epoch)),
                Status.Code.NOT_FOUND,
                ErrorCode.TABLE_NOT_FOUND,
                "table 'nope'");
        assertFails(
                () -> fetch("t", ref(-1, epoch)),
                Status.Code.INVALID_ARGUMENT,
                ErrorCode.INVALID_ARGUMENT,
                "negative shard -1");
        assertFails(
                () -> fetch("t", ref(4, epoch)),
                Status.Code.OUT_OF_RANGE,
                ErrorCode.SHARD_OUT_OF_RANGE,
                "shard 4 out of range");
        assertFails(
                () -> fetch("t", ref(2, 0)),
                Status.Code.FAILED_PRECONDITION,
                ErrorCode.FENCED,
                "table 't' shard 2",
                "never opened");
        assertFails(
                () -> fetch("t", ref(3, epoch + 1)),
                Status.Code.FAILED_PRECONDITION,
                ErrorCode.FENCED,
                "epoch " + (epoch + 1));
        assertThat(fetch("t", ref(3, epoch)).hasHeader()).isTrue();
    }

    private static io.taishan.kv.proto.FetchFilterResponse fetch(String table, ShardRef shard) {
        return kv.fetchFilter(
                        FetchFilterRequest.newBuilder().setTable(table).setShard(shard).build())
                .next();
    }
}
