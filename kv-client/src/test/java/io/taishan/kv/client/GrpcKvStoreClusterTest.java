package io.taishan.kv.client;

import static io.taishan.kv.client.WriteBatchTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.ScanRange;
import io.taishan.kv.protocol.ShardPlacement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Routing over three nodes. Each scripted node rejects a shard it does not own, so a call that
 * succeeds was routed right; the requests each node saw show how calls were split.
 */
class GrpcKvStoreClusterTest {
    private static final int NODES = 3;
    private static final int SHARDS = 8;

    private ScriptedCluster cluster;
    private GrpcKvStore store;

    @BeforeEach
    void setUp() {
        cluster = ScriptedCluster.start(NODES);
        store = connect();
    }

    @AfterEach
    void tearDown() {
        store.close();
        cluster.close();
    }

    private GrpcKvStore connect() {
        return GrpcKvStore.connect(
                KvClientConfig.forAddresses(cluster.address(0))
                        .requestTimeout(Duration.ofSeconds(5))
                        .maxAttempts(2)
                        .backoff(Duration.ofMillis(1), Duration.ofMillis(5))
                        .build());
    }

    /** The scripted nodes are named n0, n1, n2: their placement. */
    private static final ShardPlacement PLACEMENT =
            ShardPlacement.of(
                    List.of(
                            ScriptedKvService.nameOf(0),
                            ScriptedKvService.nameOf(1),
                            ScriptedKvService.nameOf(2)));

    private static int owner(int shard) {
        return owner(shard, SHARDS);
    }

    private static int owner(int shard, int shardCount) {
        return PLACEMENT.ownerOf(shard, shardCount);
    }

    /** The first shard that node {@code node} owns, or does not own. */
    private static int firstShard(int node, boolean owned) {
        int shard = 0;
        while ((owner(shard) == node) != owned) {
            shard++;
        }
        return shard;
    }

    @Test
    void everyNodeOwnsSomeShardSoThatEachTestBelowSeesEveryNode() {
        for (int node = 0; node < NODES; node++) {
            assertThat(firstShard(node, true)).isLessThan(SHARDS);
        }
    }

    private List<ShardLease> openAll() {
        List<ShardLease> leases = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            leases.add(store.openShard("t", shard));
        }
        return leases;
    }

    @Test
    void tablesAreCreatedAndDroppedOnEveryNode() {
        store.createTable("t", SHARDS);
        for (int i = 0; i < NODES; i++) {
            assertThat(cluster.node(i).calls("CreateTable")).isEqualTo(1);
        }
        assertThat(store.createTableIfAbsent("t", SHARDS).shardCount()).isEqualTo(SHARDS);
        assertThatThrownBy(() -> store.createTable("t", SHARDS))
                .isInstanceOf(TableExistsException.class);

        store.dropTable("t");
        for (int i = 0; i < NODES; i++) {
            assertThat(cluster.node(i).calls("DropTable")).isEqualTo(1);
        }
        assertThat(store.describeTable("t")).isEmpty();
    }

    @Test
    void aCreateThatStoppedHalfWayIsCompletedByRepeatingIt() {
        store.createTable("t", SHARDS);
        cluster.node(2)
                .failNext(
                        "DropTable",
                        1,
                        io.grpc.Status.Code.INTERNAL,
                        io.taishan.kv.proto.ErrorCode.STORAGE_ERROR);
        assertThatThrownBy(() -> store.dropTable("t")).isInstanceOf(KvException.class);

        // Node 2 still has the table, the others not: create again fills the gaps.
        store.createTable("t", SHARDS);
        openAll();
    }

    @Test
    void shardCallsGoToTheShardsOwner() {
        store.createTable("t", SHARDS);

        List<ShardLease> leases = openAll();

        for (int node = 0; node < NODES; node++) {
            int n = node;
            assertThat(cluster.node(node).<OpenShardRequest>requests("OpenShard"))
                    .extracting(OpenShardRequest::getShard)
                    .allSatisfy(shard -> assertThat(owner(shard)).isEqualTo(n))
                    .isNotEmpty();
        }
        for (ShardLease lease : leases) {
            assertThat(store.get(lease, b("k"))).isNull();
            assertThat(store.multiGet(lease, List.of(b("k")))).containsExactly((byte[]) null);
            try (CloseableIterator<KvEntry> it = store.scan(lease, ScanRange.all(), 0, false)) {
                assertThat(it.hasNext()).isFalse();
            }
        }
    }

    @Test
    void aBatchGoesOutAsOneRequestPerNode() {
        store.createTable("t", SHARDS);
        List<ShardLease> leases = openAll();
        WriteBatch batch = new WriteBatch("t");
        for (ShardLease lease : leases) {
            batch.put(lease, b("k"), b("v" + lease.shard())).snapshotMarker(lease, 7, false);
        }

        WriteResult result = store.write(batch);

        for (int node = 0; node < NODES; node++) {
            List<WriteRequest> requests = cluster.node(node).requests("Write");
            assertThat(requests).hasSize(1);
            int n = node;
            assertThat(requests.get(0).getShardsList())
                    .extracting(ShardWrite::getShard)
                    .allSatisfy(shard -> assertThat(owner(shard)).isEqualTo(n));
        }
        assertThat(result.snapshots())
                .extracting(SnapshotInfo::shard)
                .containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
        for (ShardLease lease : leases) {
            assertThat(store.get(lease, b("k"))).isEqualTo(b("v" + lease.shard()));
        }
    }

    @Test
    void snapshotsAreTakenPerNodeAndGatheredFromAll() {
        store.createTable("t", SHARDS);
        List<ShardLease> leases = openAll();

        List<SnapshotInfo> taken = store.snapshot(leases, 1, false);
        store.snapshot(leases.subList(0, 2), 2, true);

        assertThat(taken)
                .extracting(SnapshotInfo::shard)
                .containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5, 6, 7);
        for (int node = 0; node < NODES; node++) {
            List<SnapshotRequest> requests = cluster.node(node).requests("Snapshot");
            int n = node;
            assertThat(requests.get(0).getShardsList())
                    .extracting(ShardRef::getShard)
                    .allSatisfy(shard -> assertThat(owner(shard)).isEqualTo(n));
        }
        assertThat(store.listSnapshots("t")).hasSize(SHARDS + 2);
        assertThat(store.listSnapshots("t", 7))
                .extracting(SnapshotInfo::snapshotId)
                .containsExactly(1L);
        assertThat(store.restore("t", 7, 1).epoch()).isEqualTo(2);
        assertThat(store.dropSnapshotsBelow("t", 3)).isEqualTo(SHARDS);
        assertThat(store.listSnapshots("t")).extracting(SnapshotInfo::snapshotId).containsOnly(2L);
        assertThat(store.dropSnapshot("t", 1, 2)).isTrue();
    }

    @Test
    void aClientThatDoesNotKnowTheTableDescribesItFirst() throws Exception {
        store.createTable("t", SHARDS);
        List<ShardLease> leases = openAll();
        try (GrpcKvStore other = connect()) {
            int describes = cluster.node(0).calls("DescribeTable");
            WriteBatch batch = new WriteBatch("t");
            for (ShardLease lease : leases) {
                batch.put(lease, b("k"), b("v"));
            }

            other.writeAsync(batch).get();
            other.get(leases.get(7), b("k"));

            assertThat(cluster.node(0).calls("DescribeTable") - describes).isEqualTo(1);
            assertThatThrownBy(() -> other.openShard("nope", 1))
                    .isInstanceOf(TableNotFoundException.class)
                    .hasMessageContaining("nope");
        }
    }

    @Test
    void aStaleShardCountIsForgottenAfterTheServerObjects() {
        store.createTable("t", SHARDS);
        store.openShard("t", 0);
        try (GrpcKvStore other = connect()) {
            other.dropTable("t");
            other.createTable("t", 3);
        }

        // A shard whose owner differs between 8 and 3 shards: the cached 8 route it wrong.
        int shard = 0;
        while (owner(shard, SHARDS) == owner(shard, 3)) {
            shard++;
        }
        int moved = shard;
        assertThatThrownBy(() -> store.openShard("t", moved))
                .isInstanceOf(ShardNotOwnedException.class)
                .hasMessageContaining(cluster.address(owner(moved, SHARDS)));
        assertThat(store.openShard("t", moved).shard()).isEqualTo(moved);
    }

    @Test
    void aChangedClusterIsFollowedAndALeaseOfTheOldOwnerIsRefused() {
        store.createTable("t", SHARDS);
        List<ShardLease> leases = openAll();
        // Every node renamed, as after a change of cluster.nodes: the placement changes.
        List<ClusterNode> renamed = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            renamed.add(new ClusterNode("m" + i, cluster.address(i)));
        }
        ClusterView next = ClusterView.of(renamed);
        for (int i = 0; i < NODES; i++) {
            cluster.node(i).setCluster(next, "m" + i);
        }
        int moved = 0;
        while (next.ownerOf(moved, SHARDS) == owner(moved)) {
            moved++;
        }
        ShardLease old = leases.get(moved);

        // The old owner refuses under its new view; the client learns of the change from that.
        assertThatThrownBy(() -> store.get(old, b("k")))
                .isInstanceOfSatisfying(
                        ShardNotOwnedException.class,
                        e -> {
                            assertThat(e.nodeView()).isEqualTo(next.fingerprintHex());
                            assertThat(e.getMessage()).contains("the cluster changed");
                        });
        // Taking the shard again goes to its new owner, under the new view.
        ShardLease again = store.openShard("t", moved);
        assertThat(again.node()).isEqualTo(next.owner(moved, SHARDS).name());
        assertThat(store.clusterView()).isEqualTo(next);
        assertThat(store.get(again, b("k"))).isNull();
        // The old lease is refused by the client itself, never sent to the new owner.
        int callsBefore = cluster.node(next.ownerOf(moved, SHARDS)).calls("Get");
        assertThatThrownBy(() -> store.get(old, b("k")))
                .isInstanceOf(ShardNotOwnedException.class)
                .hasMessageContaining("was taken on " + old.node());
        assertThat(cluster.node(next.ownerOf(moved, SHARDS)).calls("Get")).isEqualTo(callsBefore);
    }

    @Test
    void healthOfEveryNodeEvenWhenOneIsDown() throws Exception {
        assertThat(store.health())
                .extracting(NodeHealth::nodeIndex, NodeHealth::isServing)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(0, true),
                        org.assertj.core.groups.Tuple.tuple(1, true),
                        org.assertj.core.groups.Tuple.tuple(2, true));

        cluster.stopNode(2);

        List<NodeHealth> health = store.health();
        assertThat(health.get(2).status()).isEqualTo("UNREACHABLE");
        assertThat(health.get(2).address()).isEqualTo(cluster.address(2));
        assertThat(health.get(0).isServing()).isTrue();
    }

    @Test
    void aDownNodeFailsOnlyItsShardsNamingItsAddress() throws Exception {
        store.createTable("t", SHARDS);
        List<ShardLease> leases = openAll();
        cluster.stopNode(2);

        ShardLease elsewhere = leases.get(firstShard(2, false));
        assertThat(store.get(elsewhere, b("k"))).isNull();
        KvUnavailableException e =
                org.assertj.core.api.Assertions.catchThrowableOfType(
                        () -> store.get(leases.get(firstShard(2, true)), b("k")),
                        KvUnavailableException.class);
        assertThat(e.address()).isEqualTo(cluster.address(2));
        assertThat(e.attempts()).isEqualTo(2);

        WriteBatch batch = new WriteBatch("t");
        leases.forEach(lease -> batch.put(lease, b("k"), b("v")));
        assertThatThrownBy(() -> store.write(batch))
                .isInstanceOf(KvUnavailableException.class)
                .hasMessageContaining(cluster.address(2));
        // Atomic per shard, not per batch: the live nodes applied theirs.
        assertThat(store.get(elsewhere, b("k"))).isEqualTo(b("v"));
    }

    /**
     * One node fails its upload after the others finished theirs: the call fails with that node's
     * error and names the cuts the others wrote, which no checkpoint will reference, so the caller
     * can delete them.
     */
    @Test
    void anUploadThatFailsOnOneNodeAfterTheOthersFinishedNamesTheirCuts() throws Exception {
        store.createTable("t", SHARDS);
        int failing = owner(0);
        CountDownLatch gate = cluster.node(failing).hold("UploadSnapshot");
        cluster.node(failing)
                .failNext("UploadSnapshot", 1, Status.Code.INTERNAL, ErrorCode.STORAGE_ERROR);
        Set<String> finishing = new TreeSet<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            if (owner(shard) != failing) {
                finishing.add("cut-of-" + ScriptedKvService.nameOf(owner(shard)));
            }
        }
        assertThat(finishing).isNotEmpty();

        CompletableFuture<DurableSnapshot> upload =
                CompletableFuture.supplyAsync(
                        () ->
                                store.durable()
                                        .orElseThrow()
                                        .uploadSnapshot(
                                                "t",
                                                1,
                                                IntStream.range(0, SHARDS).toArray(),
                                                "file:///ckpt/shared",
                                                "file:///ckpt/chk-1",
                                                Set.of()));
        // The others answer at once; the failing node only once they have.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (answered(failing) < finishing.size() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        Thread.sleep(200);
        gate.countDown();

        assertThatThrownBy(upload::join)
                .hasCauseInstanceOf(DurableUploadFailedException.class)
                .cause()
                .satisfies(
                        e -> {
                            DurableUploadFailedException failed = (DurableUploadFailedException) e;
                            assertThat(failed.code()).isEqualTo(ErrorCode.STORAGE_ERROR);
                            assertThat(failed.uploaded())
                                    .extracting(DurableCut::cutId)
                                    .containsExactlyInAnyOrderElementsOf(finishing);
                        });
    }

    /** UploadSnapshot calls the nodes other than {@code except} have served. */
    private int answered(int except) {
        int served = 0;
        for (int node = 0; node < NODES; node++) {
            if (node != except) {
                served += cluster.node(node).calls("UploadSnapshot");
            }
        }
        return served;
    }
}
