package io.taishan.kv.client;

import static io.taishan.kv.client.WriteBatchTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.grpc.Status;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.ScanRange;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Which calls are retried, how often, under which deadline, and what a failure turns into. */
class GrpcKvStoreRetryTest {
    private static final int ATTEMPTS = 3;

    private ScriptedCluster cluster;
    private ScriptedKvService server;
    private GrpcKvStore store;
    private ShardLease lease;

    @BeforeEach
    void setUp() {
        cluster = ScriptedCluster.start(1);
        server = cluster.node(0);
        store = GrpcKvStore.connect(config(Duration.ofSeconds(5)));
        store.createTable("t", 4);
        lease = store.openShard("t", 1);
        store.write(new WriteBatch("t").put(lease, b("k"), b("v")));
        store.snapshot(List.of(lease), 1, false);
        store.createTable("target", 4);
    }

    @AfterEach
    void tearDown() {
        store.close();
        cluster.close();
    }

    private KvClientConfig config(Duration timeout) {
        return KvClientConfig.forAddresses(cluster.address(0))
                .requestTimeout(timeout)
                .maxAttempts(ATTEMPTS)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(10))
                .build();
    }

    static Stream<Arguments> idempotentCalls() {
        return Stream.concat(throwingIdempotentCalls(), Stream.of(call("Health", s -> s.health())));
    }

    static Stream<Arguments> throwingIdempotentCalls() {
        return Stream.of(
                call("DescribeTable", s -> s.describeTable("t")),
                call("ListTables", s -> s.listTables()),
                call("Get", s -> s.get(s.openShard("t", 2), b("k"))),
                call("MultiGet", s -> s.multiGet(s.openShard("t", 2), List.of(b("a"), b("b")))),
                call(
                        "Scan",
                        s -> {
                            try (CloseableIterator<KvEntry> it =
                                    s.scan(s.openShard("t", 2), ScanRange.all(), 0, false)) {
                                it.hasNext();
                            }
                        }),
                call("Snapshot", s -> s.snapshot(List.of(s.openShard("t", 2)), 5, false)),
                call("ListSnapshots", s -> s.listSnapshots("t")),
                call("ListSnapshots", s -> s.listSnapshots("t", 1)),
                call("DropSnapshot", s -> s.dropSnapshot("t", 1, 1)),
                call("DropSnapshotsBelow", s -> s.dropSnapshotsBelow("t", 1)),
                call("FetchFilter", s -> s.fetchFilter(s.openShard("t", 2)).close()));
    }

    static Stream<Arguments> nonIdempotentCalls() {
        return Stream.of(
                call(
                        "Write",
                        s -> s.write(new WriteBatch("t").put(s.openShard("t", 2), b("x"), b("y")))),
                call("OpenShard", s -> s.openShard("t", 3)),
                call("Restore", s -> s.restore("t", 1, 1)),
                call("Clone", s -> s.cloneShard("t", 1, 1, "target")),
                call("CreateTable", s -> s.createTable("u", 2)),
                call("CreateTable", s -> s.createTableIfAbsent("t", 4)),
                call("DropTable", s -> s.dropTable("target")));
    }

    private static Arguments call(String rpc, Consumer<GrpcKvStore> call) {
        return Arguments.of(rpc, call);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("idempotentCalls")
    void idempotentCallsAreRetriedUntilTheyPass(String rpc, Consumer<GrpcKvStore> call) {
        server.failNext(
                rpc, ATTEMPTS - 1, Status.Code.UNAVAILABLE, ErrorCode.ERROR_CODE_UNSPECIFIED);
        int before = server.calls(rpc);

        call.accept(store);

        assertThat(server.calls(rpc) - before).isEqualTo(ATTEMPTS);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("throwingIdempotentCalls")
    void idempotentCallsGiveUpAfterMaxAttempts(String rpc, Consumer<GrpcKvStore> call) {
        server.failNext(rpc, ATTEMPTS, Status.Code.UNAVAILABLE, ErrorCode.ERROR_CODE_UNSPECIFIED);
        int before = server.calls(rpc);

        KvUnavailableException e =
                catchThrowableOfType(() -> call.accept(store), KvUnavailableException.class);

        assertThat(e).isNotNull();
        assertThat(e.attempts()).isEqualTo(ATTEMPTS);
        assertThat(e.address()).isEqualTo(cluster.address(0));
        assertThat(e.getMessage()).contains(rpc).contains(cluster.address(0));
        assertThat(server.calls(rpc) - before).isEqualTo(ATTEMPTS);
    }

    @Test
    void healthReportsANodeThatGaveUpAsUnreachable() {
        server.failNext(
                "Health", ATTEMPTS, Status.Code.UNAVAILABLE, ErrorCode.ERROR_CODE_UNSPECIFIED);

        List<NodeHealth> health = store.health();

        assertThat(health).hasSize(1);
        assertThat(health.get(0).status()).isEqualTo("UNREACHABLE");
        assertThat(health.get(0).isServing()).isFalse();
        assertThat(health.get(0).address()).isEqualTo(cluster.address(0));
        assertThat(server.calls("Health")).isEqualTo(ATTEMPTS);
        assertThat(store.health().get(0).isServing()).isTrue();

        server.failNext("Health", 1, Status.Code.INTERNAL, ErrorCode.STORAGE_ERROR);
        assertThat(store.health().get(0).status()).isEqualTo("ERROR");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("nonIdempotentCalls")
    void otherCallsAreNeverRetried(String rpc, Consumer<GrpcKvStore> call) {
        server.failNext(rpc, 1, Status.Code.UNAVAILABLE, ErrorCode.ERROR_CODE_UNSPECIFIED);
        int before = server.calls(rpc);

        KvUnavailableException e =
                catchThrowableOfType(() -> call.accept(store), KvUnavailableException.class);

        assertThat(e).isNotNull();
        assertThat(e.attempts()).isEqualTo(1);
        assertThat(server.calls(rpc) - before).isEqualTo(1);
    }

    @Test
    void aWriteThatTimesOutIsNotRepeated() throws Exception {
        store.close();
        store = GrpcKvStore.connect(config(Duration.ofMillis(300)));
        CountDownLatch gate = server.hold("Write");
        try {
            KvUnavailableException e =
                    catchThrowableOfType(
                            () -> store.write(new WriteBatch("t").append(lease, b("l"), b("1"))),
                            KvUnavailableException.class);

            assertThat(Status.fromThrowable(e.getCause()).getCode())
                    .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(e.attempts()).isEqualTo(1);
        } finally {
            gate.countDown();
        }
        assertThat(server.calls("Write")).isEqualTo(2);
    }

    @Test
    void theDeadlineCutsEachAttemptOfAHangingRead() {
        store.close();
        store = GrpcKvStore.connect(config(Duration.ofMillis(300)));
        CountDownLatch gate = server.hold("Get");
        try {
            KvUnavailableException e =
                    catchThrowableOfType(
                            () -> store.get(lease, b("k")), KvUnavailableException.class);

            assertThat(Status.fromThrowable(e.getCause()).getCode())
                    .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(e.attempts()).isEqualTo(ATTEMPTS);
            assertThat(server.calls("Get")).isEqualTo(ATTEMPTS);
        } finally {
            gate.countDown();
        }
        assertThat(store.get(lease, b("k"))).isEqualTo(b("v"));
    }

    @Test
    void aFailureThatIsNotTransientIsNotRetried() {
        server.failNext("Get", 1, Status.Code.INTERNAL, ErrorCode.STORAGE_ERROR);

        KvException e = catchThrowableOfType(() -> store.get(lease, b("k")), KvException.class);

        assertThat(e.code()).isEqualTo(ErrorCode.STORAGE_ERROR);
        assertThat(e).isNotInstanceOf(KvUnavailableException.class);
        assertThat(server.calls("Get")).isEqualTo(1);
    }

    static Stream<Arguments> trailerCodes() {
        return Stream.of(
                Arguments.of(
                        ErrorCode.TABLE_NOT_FOUND,
                        Status.Code.NOT_FOUND,
                        TableNotFoundException.class),
                Arguments.of(
                        ErrorCode.TABLE_EXISTS,
                        Status.Code.ALREADY_EXISTS,
                        TableExistsException.class),
                Arguments.of(
                        ErrorCode.FENCED, Status.Code.FAILED_PRECONDITION, FencedException.class),
                Arguments.of(
                        ErrorCode.SNAPSHOT_NOT_FOUND,
                        Status.Code.NOT_FOUND,
                        SnapshotNotFoundException.class),
                Arguments.of(
                        ErrorCode.SHARD_NOT_OWNED,
                        Status.Code.FAILED_PRECONDITION,
                        ShardNotOwnedException.class),
                Arguments.of(
                        ErrorCode.LIMIT_EXCEEDED,
                        Status.Code.RESOURCE_EXHAUSTED,
                        LimitExceededException.class),
                Arguments.of(
                        ErrorCode.SHUTTING_DOWN,
                        Status.Code.UNAVAILABLE,
                        KvUnavailableException.class),
                Arguments.of(
                        ErrorCode.SHARD_OUT_OF_RANGE, Status.Code.OUT_OF_RANGE, KvException.class),
                Arguments.of(
                        ErrorCode.INVALID_ARGUMENT,
                        Status.Code.INVALID_ARGUMENT,
                        KvException.class),
                Arguments.of(ErrorCode.STORAGE_ERROR, Status.Code.INTERNAL, KvException.class));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("trailerCodes")
    void theTrailerCodeBecomesATypedExceptionNamingTheNode(
            ErrorCode code, Status.Code status, Class<? extends KvException> expected) {
        // A write: never retried, nor sent again after a refusal (as a call taking shards is).
        server.failNext("Write", 1, status, code);

        KvException e =
                catchThrowableOfType(
                        () -> store.write(new WriteBatch("t").put(lease, b("k"), b("w"))),
                        KvException.class);

        assertThat(e).isExactlyInstanceOf(expected);
        if (!(e instanceof KvUnavailableException)) {
            assertThat(e.code()).isEqualTo(code);
        }
        assertThat(e.address()).isEqualTo(cluster.address(0));
        assertThat(e.getMessage())
                .contains("Write")
                .contains("scripted failure")
                .contains("kv-server " + cluster.address(0));
    }

    @Test
    void withoutATrailerTheStatusDecides() {
        Map<Status.Code, ErrorCode> expected =
                Map.of(
                        Status.Code.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT,
                        Status.Code.RESOURCE_EXHAUSTED, ErrorCode.LIMIT_EXCEEDED,
                        Status.Code.INTERNAL, ErrorCode.ERROR_CODE_UNSPECIFIED);
        expected.forEach(
                (status, code) -> {
                    server.failNext("OpenShard", 1, status, ErrorCode.ERROR_CODE_UNSPECIFIED);
                    KvException e =
                            catchThrowableOfType(() -> store.openShard("t", 0), KvException.class);
                    assertThat(e.code()).as("%s", status).isEqualTo(code);
                });
    }

    @Test
    void aStaleLeaseIsFencedForReadsAndWrites() {
        ShardLease newer = store.openShard("t", 1);

        assertThatThrownBy(() -> store.write(new WriteBatch("t").put(lease, b("k"), b("zombie"))))
                .isInstanceOf(FencedException.class);
        assertThatThrownBy(() -> store.get(lease, b("k"))).isInstanceOf(FencedException.class);
        assertThat(store.get(newer, b("k"))).isEqualTo(b("v"));
    }

    @Test
    void writeAsyncDoesNotWaitForTheServer() throws Exception {
        CountDownLatch gate = server.hold("Write");
        CompletableFuture<WriteResult> pending;
        try {
            pending = store.writeAsync(new WriteBatch("t").put(lease, b("k2"), b("v2")));
            assertThat(pending).isNotDone();
        } finally {
            gate.countDown();
        }
        pending.get(30, TimeUnit.SECONDS);
        assertThat(store.get(lease, b("k2"))).isEqualTo(b("v2"));
    }

    @Test
    void writeAsyncFailsItsFutureWithTheTypedException() {
        ShardLease stale = lease;
        store.openShard("t", 1);

        CompletableFuture<WriteResult> failed =
                store.writeAsync(new WriteBatch("t").put(stale, b("k"), b("v")));

        assertThatThrownBy(failed::get)
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(FencedException.class);
    }
}
