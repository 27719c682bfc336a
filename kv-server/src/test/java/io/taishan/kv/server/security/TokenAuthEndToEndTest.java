package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.PermissionDeniedException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.DescribeShardsRequest;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DropShardSnapshotsRequest;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.KvServiceGrpc.KvServiceBlockingStub;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.ListTablesRequest;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiScanRequest;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardsRequest;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.RegisterTtlStatesRequest;
import io.taishan.kv.proto.ReportTtlTimeRequest;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardRestore;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.TtlLayout;
import io.taishan.kv.proto.TtlStateSpec;
import io.taishan.kv.proto.UploadHeader;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.protocol.BearerTokens;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.protocol.ScanRange;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.testing.TestCertificates;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bearer tokens scoped by table prefix on a TLS server: no token or an unknown one is
 * UNAUTHENTICATED on every call but Health; team A's token gets PERMISSION_DENIED for every call on
 * team B's table, even with B's valid epoch in hand, and B's data, snapshots and table are
 * untouched afterwards; the admin token does everything; listings show only what a token covers.
 */
class TokenAuthEndToEndTest {
    static final String ADMIN = "admin-0123456789abcdef0123456789";
    static final String TEAM_A = "team-a-0123456789abcdef012345678";
    static final String TEAM_B = "team-b-0123456789abcdef012345678";

    @TempDir static Path dir;

    private static TestCertificates certs;
    private static EmbeddedKvServer server;
    private static KvStore admin;
    private static ShardLease bLease;

    @BeforeAll
    static void start() throws IOException {
        certs = TestCertificates.create(dir.resolve("certs"));
        Path tokens = dir.resolve("tokens");
        Files.writeString(
                tokens,
                String.join(
                        "\n",
                        "# token scope name",
                        ADMIN + " * ops",
                        "",
                        TEAM_A + "\tteam_a_ team-a",
                        TEAM_B + " team_b_,shared_ team-b",
                        ""));
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .blockCacheBytes(8 << 20)
                                .writeBufferBytes(8 << 20)
                                .tlsCertFile(certs.server().certFile())
                                .tlsKeyFile(certs.server().keyFile())
                                .authTokenFile(tokens)
                                .build());
        admin = connect(ADMIN);
        admin.createTable("team_b_t", 2);
        bLease = admin.openShard("team_b_t", 0);
        admin.write(new WriteBatch("team_b_t").put(bLease, b("k"), b("b's value")));
        admin.snapshot(List.of(bLease), 10, false);
        admin.write(new WriteBatch("team_b_t").put(bLease, b("after"), b("10")));
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static KvClientConfig.Builder config(@Nullable String token) {
        return KvClientConfig.forAddresses(server.address())
                .requestTimeout(Duration.ofSeconds(10))
                .tls(KvClientTls.trusting(certs.caCert()))
                .token(token);
    }

    static KvStore connect(@Nullable String token) {
        return KvStores.connect(config(token).build());
    }

    /** A raw stub, as a client that ignores the client library would use; null: no token. */
    static <T> T withRawStub(
            @Nullable String header, java.util.function.Function<KvServiceBlockingStub, T> body)
            throws Exception {
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", server.port())
                        .sslContext(
                                GrpcSslContexts.forClient()
                                        .trustManager(certs.caCert().toFile())
                                        .build())
                        .build();
        try {
            KvServiceBlockingStub stub =
                    KvServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
            if (header != null) {
                Metadata headers = new Metadata();
                headers.put(BearerTokens.AUTHORIZATION, header);
                stub = stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
            }
            return body.apply(stub);
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    static void assertRefused(Runnable call, Status.Code status, String code) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(status);
                            assertThat(e.getTrailers().get(KvErrors.ERROR_CODE_KEY))
                                    .isEqualTo(code);
                        });
    }

    @Test
    void withoutATokenEveryCallButHealthIsUnauthenticated() throws Exception {
        assertThatThrownBy(() -> connect(null))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("UNAUTHENTICATED")
                .hasMessageContaining("no bearer token");
        withRawStub(
                null,
                stub -> {
                    assertThat(stub.health(HealthRequest.getDefaultInstance()).getStatus())
                            .isEqualTo("SERVING");
                    // With a lease that is valid: still no data.
                    assertRefused(
                            () -> stub.get(get(bLease, "k")),
                            Status.Code.UNAUTHENTICATED,
                            "UNAUTHENTICATED");
                    assertRefused(
                            () -> stub.listTables(ListTablesRequest.getDefaultInstance()),
                            Status.Code.UNAUTHENTICATED,
                            "UNAUTHENTICATED");
                    return null;
                });
    }

    @Test
    void anUnknownOrMalformedTokenIsUnauthenticated() throws Exception {
        assertThatThrownBy(() -> connect(ADMIN + "x"))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("unknown bearer token")
                .hasMessageNotContaining(ADMIN);
        for (String header :
                new String[] {"Basic " + ADMIN, ADMIN, "Bearer " + ADMIN.substring(1)}) {
            withRawStub(
                    header,
                    stub -> {
                        assertRefused(
                                () -> stub.get(get(bLease, "k")),
                                Status.Code.UNAUTHENTICATED,
                                "UNAUTHENTICATED");
                        return null;
                    });
        }
    }

    @Test
    void teamATokenGetsNothingOfTeamBsTableByAnyCall() throws Exception {
        ShardRef bRef = ShardRef.newBuilder().setShard(0).setEpoch(bLease.epoch()).build();
        Map<String, Consumer<KvServiceBlockingStub>> calls = new LinkedHashMap<>();
        calls.put(
                "CreateTable",
                s ->
                        s.createTable(
                                CreateTableRequest.newBuilder()
                                        .setName("team_b_new")
                                        .setShardCount(1)
                                        .build()));
        calls.put(
                "DescribeTable",
                s ->
                        s.describeTable(
                                DescribeTableRequest.newBuilder().setName("team_b_t").build()));
        calls.put(
                "OpenShard",
                s ->
                        s.openShard(
                                OpenShardRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setShard(0)
                                        .build()));
        calls.put(
                "OpenShards",
                s ->
                        s.openShards(
                                OpenShardsRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addShards(0)
                                        .setWipe(true)
                                        .build()));
        calls.put(
                "RestoreShards (B's snapshot into A's table)",
                s ->
                        s.restoreShards(
                                RestoreShardsRequest.newBuilder()
                                        .setTable("team_a_copy")
                                        .addShards(
                                                ShardRestore.newBuilder()
                                                        .setShard(0)
                                                        .setSourceTable("team_b_t")
                                                        .setSnapshotId(10))
                                        .build()));
        calls.put(
                "UploadSnapshot",
                s ->
                        s.uploadSnapshot(
                                UploadSnapshotRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setSnapshotId(10)
                                        .addShards(0)
                                        .setSharedDir("file:///tmp/a-was-here/shared")
                                        .setExclusiveDir("file:///tmp/a-was-here/chk-10")
                                        .build()));
        calls.put(
                "DropShardSnapshots",
                s ->
                        s.dropShardSnapshots(
                                DropShardSnapshotsRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setSnapshotId(10)
                                        .addShards(0)
                                        .build()));
        calls.put(
                "MultiScan",
                s ->
                        s.multiScan(
                                MultiScanRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addScans(
                                                ScanRequest.newBuilder()
                                                        .setTable("team_b_t")
                                                        .setShard(bRef))
                                        .build()));
        calls.put("Get", s -> s.get(get(bLease, "k")));
        calls.put(
                "MultiGet",
                s ->
                        s.multiGet(
                                MultiGetRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addKeys(
                                                KeyRef.newBuilder()
                                                        .setShard(bRef)
                                                        .setKey(ByteString.copyFrom(b("k"))))
                                        .build()));
        calls.put(
                "Scan",
                s -> s.scan(ScanRequest.newBuilder().setTable("team_b_t").setShard(bRef).build()));
        calls.put(
                "Write",
                s ->
                        s.write(
                                WriteRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addShards(
                                                ShardWrite.newBuilder()
                                                        .setShard(0)
                                                        .setEpoch(bLease.epoch())
                                                        .addOps(
                                                                WriteOp.newBuilder()
                                                                        .setPut(
                                                                                Put.newBuilder()
                                                                                        .setKey(
                                                                                                ByteString
                                                                                                        .copyFrom(
                                                                                                                b(
                                                                                                                        "k")))
                                                                                        .setValue(
                                                                                                ByteString
                                                                                                        .copyFrom(
                                                                                                                b(
                                                                                                                        "a was here"))))))
                                        .build()));
        calls.put(
                "Snapshot",
                s ->
                        s.snapshot(
                                SnapshotRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addShards(bRef)
                                        .setSnapshotId(99)
                                        .build()));
        calls.put(
                "Restore",
                s ->
                        s.restore(
                                RestoreRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setShard(0)
                                        .setSnapshotId(10)
                                        .build()));
        calls.put(
                "Clone B to A",
                s ->
                        s.clone(
                                CloneRequest.newBuilder()
                                        .setSourceTable("team_b_t")
                                        .setShard(0)
                                        .setSnapshotId(10)
                                        .setTargetTable("team_a_copy")
                                        .build()));
        calls.put(
                "Clone A to B",
                s ->
                        s.clone(
                                CloneRequest.newBuilder()
                                        .setSourceTable("team_a_t")
                                        .setShard(0)
                                        .setSnapshotId(10)
                                        .setTargetTable("team_b_t")
                                        .build()));
        calls.put(
                "ListSnapshots",
                s ->
                        s.listSnapshots(
                                ListSnapshotsRequest.newBuilder().setTable("team_b_t").build()));
        calls.put(
                "DropSnapshot",
                s ->
                        s.dropSnapshot(
                                DropSnapshotRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setShard(0)
                                        .setSnapshotId(10)
                                        .build()));
        calls.put(
                "DropSnapshotsBelow",
                s ->
                        s.dropSnapshotsBelow(
                                DropSnapshotsBelowRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .setSnapshotId(100)
                                        .build()));
        calls.put(
                "DropTable",
                s -> s.dropTable(DropTableRequest.newBuilder().setName("team_b_t").build()));
        calls.put(
                "FetchFilter",
                s ->
                        s.fetchFilter(
                                        FetchFilterRequest.newBuilder()
                                                .setTable("team_b_t")
                                                .setShard(bRef)
                                                .build())
                                .hasNext());
        calls.put(
                "FetchFilters",
                s ->
                        s.fetchFilters(
                                        FetchFiltersRequest.newBuilder()
                                                .setTable("team_b_t")
                                                .addShards(bRef)
                                                .build())
                                .hasNext());
        calls.put(
                "ReadValue",
                s ->
                        s.readValue(
                                        GetRequest.newBuilder()
                                                .setTable("team_b_t")
                                                .setShard(bRef)
                                                .setKey(ByteString.copyFromUtf8("k"))
                                                .build())
                                .hasNext());
        calls.put("UploadValue", s -> uploadValue(s, "team_b_t", bRef));
        calls.put(
                "DescribeShards",
                s ->
                        s.describeShards(
                                DescribeShardsRequest.newBuilder().setTable("team_b_t").build()));
        calls.put(
                "RegisterTtlStates",
                s ->
                        s.registerTtlStates(
                                RegisterTtlStatesRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addStates(
                                                TtlStateSpec.newBuilder()
                                                        .setStateId(1)
                                                        .setTtlMillis(1)
                                                        .setLayout(TtlLayout.TTL_VALUE))
                                        .build()));
        calls.put(
                "ReportTtlTime",
                s ->
                        s.reportTtlTime(
                                ReportTtlTimeRequest.newBuilder()
                                        .setTable("team_b_t")
                                        .addShards(bRef)
                                        .setTtlTimeMillis(Long.MAX_VALUE)
                                        .build()));

        List<String> refused = new ArrayList<>();
        withRawStub(
                BearerTokens.headerValue(TEAM_A),
                stub -> {
                    for (Map.Entry<String, Consumer<KvServiceBlockingStub>> call :
                            calls.entrySet()) {
                        assertThatThrownBy(() -> call.getValue().accept(stub))
                                .as(call.getKey())
                                .isInstanceOfSatisfying(
                                        StatusRuntimeException.class,
                                        e -> {
                                            assertThat(e.getStatus().getCode())
                                                    .as(call.getKey())
                                                    .isEqualTo(Status.Code.PERMISSION_DENIED);
                                            assertThat(e.getTrailers().get(KvErrors.ERROR_CODE_KEY))
                                                    .isEqualTo("PERMISSION_DENIED");
                                            assertThat(e.getStatus().getDescription())
                                                    .contains("'team-a'")
                                                    .contains("team_b_")
                                                    .doesNotContain(TEAM_A);
                                        });
                        refused.add(call.getKey());
                    }
                    return null;
                });
        assertThat(refused).hasSize(calls.size());

        // Every call of the service that names a table was tried (Health, ClusterInfo and
        // ListTables name none).
        assertThat(
                        KvServiceGrpc.getServiceDescriptor().getMethods().stream()
                                .filter(
                                        m ->
                                                CallRules.of(m.getFullMethodName()).kind()
                                                        == CallRules.Kind.TABLES)
                                .count())
                .isEqualTo(calls.size() - 1);

        // Nothing happened to B's table.
        assertThat(admin.get(bLease, b("k"))).isEqualTo(b("b's value"));
        assertThat(admin.get(bLease, b("after"))).isEqualTo(b("10"));
        assertThat(admin.listSnapshots("team_b_t"))
                .extracting(x -> x.snapshotId())
                .containsExactly(10L);
        assertThat(admin.listTables())
                .extracting(TableInfo::name)
                .doesNotContain("team_b_new", "team_a_copy");
        assertThat(admin.describeTable("team_b_t")).isPresent();
    }

    @Test
    void teamAWorksInItsOwnTablesAndTheClientSaysPermissionDeniedForOthers() {
        try (KvStore a = connect(TEAM_A)) {
            a.createTable("team_a_t", 2);
            ShardLease lease = a.openShard("team_a_t", 0);
            a.write(new WriteBatch("team_a_t").put(lease, b("x"), b("1")));
            assertThat(a.get(lease, b("x"))).isEqualTo(b("1"));
            a.snapshot(List.of(lease), 10, false);
            a.createTable("team_a_t2", 2);
            a.cloneShard("team_a_t", 0, 10, "team_a_t2");
            assertThat(a.listTables())
                    .extracting(TableInfo::name)
                    .containsOnly("team_a_t", "team_a_t2");

            assertThatThrownBy(() -> a.get(bLease, b("k")))
                    .isInstanceOf(PermissionDeniedException.class)
                    .hasMessageContaining("does not cover table 'team_b_t'");
            assertThatThrownBy(
                            () -> a.write(new WriteBatch("team_b_t").put(bLease, b("k"), b("x"))))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(
                            () -> {
                                try (CloseableIterator<KvEntry> it =
                                        a.scan(bLease, ScanRange.all(), 0, false)) {
                                    it.hasNext();
                                }
                            })
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.snapshot(List.of(bLease), 11, false))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.dropTable("team_b_t"))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.dropSnapshotsBelow("team_b_t", 100))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.describeTable("team_b_t"))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.createTable("team_b_mine", 1))
                    .isInstanceOf(PermissionDeniedException.class);
            assertThatThrownBy(() -> a.cloneShard("team_b_t", 0, 10, "team_a_stolen"))
                    .isInstanceOf(PermissionDeniedException.class);
            // A token's prefixes are one list: B's second prefix covers what B names.
            try (KvStore bClient = connect(TEAM_B)) {
                bClient.createTable("shared_x", 1);
                assertThat(bClient.listTables())
                        .extracting(TableInfo::name)
                        .containsOnly("team_b_t", "shared_x");
            }
        }
        assertThat(admin.listTables())
                .extracting(TableInfo::name)
                .contains("team_a_t", "team_a_t2", "team_b_t", "shared_x")
                .doesNotContain("team_b_mine", "team_a_stolen");
        assertThat(admin.get(bLease, b("k"))).isEqualTo(b("b's value"));
    }

    @Test
    void theAdminTokenMayDoEverything() {
        try (KvStore other = connect(ADMIN)) {
            other.createTable("anything_at_all", 1);
            ShardLease lease = other.openShard("anything_at_all", 0);
            other.write(new WriteBatch("anything_at_all").put(lease, b("a"), b("b")));
            assertThat(other.listTables())
                    .extracting(TableInfo::name)
                    .contains("anything_at_all", "team_b_t");
            other.dropTable("anything_at_all");
        }
    }

    static GetRequest get(ShardLease lease, String key) {
        return GetRequest.newBuilder()
                .setTable(lease.table())
                .setShard(ShardRef.newBuilder().setShard(lease.shard()).setEpoch(lease.epoch()))
                .setKey(ByteString.copyFrom(b(key)))
                .build();
    }

    /**
     * A one-byte UploadValue on the blocking stub's channel and credentials; its failure thrown.
     */
    private static void uploadValue(KvServiceBlockingStub s, String table, ShardRef shard) {
        java.util.concurrent.CompletableFuture<UploadValueResponse> answer =
                new java.util.concurrent.CompletableFuture<>();
        io.grpc.stub.StreamObserver<UploadValueRequest> requests =
                KvServiceGrpc.newStub(s.getChannel())
                        .uploadValue(
                                new io.grpc.stub.StreamObserver<>() {
                                    @Override
                                    public void onNext(UploadValueResponse value) {
                                        answer.complete(value);
                                    }

                                    @Override
                                    public void onError(Throwable t) {
                                        answer.completeExceptionally(t);
                                    }

                                    @Override
                                    public void onCompleted() {}
                                });
        requests.onNext(
                UploadValueRequest.newBuilder()
                        .setTable(table)
                        .setHeader(UploadHeader.newBuilder().setShard(shard).setValueBytes(1))
                        .build());
        requests.onNext(
                UploadValueRequest.newBuilder()
                        .setTable(table)
                        .setChunk(ByteString.copyFromUtf8("x"))
                        .build());
        requests.onCompleted();
        try {
            answer.get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw (RuntimeException) e.getCause();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
