package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.PermissionDeniedException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.durable.DurableOptions;
import io.taishan.kv.server.durable.TransferStats;
import io.taishan.kv.server.storage.DurableFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tokens given checkpoint directories on a real node with durable checkpoints in {@code file://}
 * storage: team A's token uploads into its directory and restores from it after the node lost its
 * disk; naming team B's directory, a sibling that shares its prefix, a {@code ..} escape, B's
 * copies as reusable, or cuts whose files are in B's directory is refused before the node touches
 * storage (no file appears, nothing is downloaded); a scoped token without directories may name no
 * path and is told what to add; the admin token may name any. The token file writes A's directory
 * as {@code file:///...} and B's as {@code file:/...}, while the node reports copies as {@code
 * file:/...} and requests use either.
 */
class CheckpointDirsEndToEndTest {
    static final String ADMIN = "admin-0123456789abcdef0123456789";
    static final String TEAM_A = "team-a-0123456789abcdef012345678";
    static final String TEAM_B = "team-b-0123456789abcdef012345678";
    static final String TEAM_C = "team-c-0123456789abcdef012345678";

    @TempDir Path tmp;

    private Path tokens;
    private EmbeddedKvServer server;

    private Path storage(String team) {
        return tmp.resolve("ckpt").resolve(team);
    }

    /** As Path.toUri writes it: file:///.../team/ */
    private String uri(String team, String sub) {
        return storage(team).resolve(sub).toUri().toString();
    }

    @BeforeEach
    void start() throws IOException {
        tokens = tmp.resolve("tokens");
        Files.writeString(
                tokens,
                String.join(
                        "\n",
                        ADMIN + " * ops",
                        TEAM_A + " team_a_ team-a checkpoints=" + storage("team-a").toUri(),
                        TEAM_B + " team_b_ team-b checkpoints=file:" + storage("team-b"),
                        TEAM_C + " team_c_ team-c",
                        ""));
        startNode();
    }

    private void startNode() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .dataDir(tmp.resolve("node"))
                                .blockCacheBytes(8 << 20)
                                .writeBufferBytes(8 << 20)
                                .authTokenFile(tokens)
                                .durable(
                                        new DurableOptions(
                                                true,
                                                null,
                                                Map.of(),
                                                null,
                                                2,
                                                2,
                                                Duration.ofMillis(10),
                                                Duration.ofSeconds(60)))
                                .build());
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private KvStore connect(String token) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .token(token)
                        .build());
    }

    private TransferStats transfers() {
        return server.server().durableTransfers().orElseThrow().stats();
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A table of two shards written and snapshotted as snapshot 1. */
    private static List<ShardLease> tableWithSnapshot(KvStore kv, String table, String value) {
        kv.createTable(table, 2);
        List<ShardLease> leases = kv.openShards(table, new int[] {0, 1}, "w1", false);
        WriteBatch batch = new WriteBatch(table);
        for (ShardLease lease : leases) {
            batch.put(lease, b("k" + lease.shard()), b(value));
        }
        kv.write(batch);
        kv.snapshot(leases, 1, false);
        return leases;
    }

    private static List<ShardRestore> restores(String table, long id, DurableSnapshot snapshot) {
        List<ShardRestore> restores = new ArrayList<>();
        for (DurableCut cut : snapshot.cuts()) {
            for (int shard : cut.shards()) {
                restores.add(new ShardRestore(shard, table, id, cut.cutId()));
            }
        }
        return restores;
    }

    private static List<String> paths(DurableSnapshot snapshot) {
        List<String> paths = new ArrayList<>();
        for (DurableCut cut : snapshot.cuts()) {
            cut.files().forEach(f -> paths.add(f.path()));
            paths.add(cut.metadataPack().path());
        }
        return paths;
    }

    private Set<String> filesUnder(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return Set.of();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.map(Path::toString).collect(TreeSet::new, Set::add, Set::addAll);
        }
    }

    private static void assertDenied(ThrowingCallable call, String... messageParts) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(
                        PermissionDeniedException.class,
                        e -> {
                            assertThat(e.getMessage()).contains(messageParts);
                            assertThat(e.getMessage())
                                    .doesNotContain(TEAM_A, TEAM_B, TEAM_C, ADMIN);
                        });
    }

    @Test
    void teamAUploadsIntoItsDirectoryAndRestoresFromItAfterTheNodeLostItsDisk() throws Exception {
        DurableSnapshot second;
        try (KvStore a = connect(TEAM_A)) {
            List<ShardLease> leases = tableWithSnapshot(a, "team_a_t", "one");
            KvStore.Durable durable = a.durable().orElseThrow();
            DurableSnapshot first =
                    durable.uploadSnapshot(
                            "team_a_t",
                            1,
                            new int[] {0, 1},
                            uri("team-a", "job/shared"),
                            uri("team-a", "job/chk-1"),
                            Set.of());
            CheckpointPath job = CheckpointPath.parse(uri("team-a", "job"));
            assertThat(paths(first)).allMatch(p -> job.covers(CheckpointPath.parse(p)));
            a.write(new WriteBatch("team_a_t").put(leases.get(0), b("k0"), b("two")));
            a.snapshot(leases, 2, false);
            // The copies of the first checkpoint are its own: reusable.
            second =
                    durable.uploadSnapshot(
                            "team_a_t",
                            2,
                            new int[] {0, 1},
                            "file:" + storage("team-a").resolve("job/shared"),
                            "file:" + storage("team-a").resolve("job/chk-2"),
                            Set.copyOf(paths(first)));
            assertThat(transfers().reusedFiles()).isPositive();
        }

        server.close();
        DurableFiles.deleteTree(tmp.resolve("node"));
        startNode();

        try (KvStore a = connect(TEAM_A)) {
            a.createTable("team_a_t", 2);
            DurableRestore restored =
                    a.durable()
                            .orElseThrow()
                            .restoreShards(
                                    "team_a_t",
                                    "w2",
                                    restores("team_a_t", 2, second),
                                    second.cuts());
            assertThat(restored.downloadedBytes()).isPositive();
            ShardLease shard0 =
                    restored.leases().stream().filter(l -> l.shard() == 0).findFirst().get();
            assertThat(a.get(shard0, b("k0"))).isEqualTo(b("two"));
        }
    }

    @Test
    void teamACannotMakeTheNodeWriteOrReadOutsideItsDirectory() throws Exception {
        DurableSnapshot ofB;
        try (KvStore bClient = connect(TEAM_B)) {
            tableWithSnapshot(bClient, "team_b_t", "b's");
            ofB =
                    bClient.durable()
                            .orElseThrow()
                            .uploadSnapshot(
                                    "team_b_t",
                                    1,
                                    new int[] {0, 1},
                                    uri("team-b", "job/shared"),
                                    uri("team-b", "job/chk-1"),
                                    Set.of());
        }
        Set<String> bFiles = filesUnder(storage("team-b"));
        assertThat(bFiles).isNotEmpty();
        long uploaded = transfers().uploadedBytes();

        try (KvStore a = connect(TEAM_A)) {
            tableWithSnapshot(a, "team_a_t", "a's");
            KvStore.Durable durable = a.durable().orElseThrow();
            int[] shards = {0, 1};
            String aShared = uri("team-a", "job/shared");
            String aChk = uri("team-a", "job/chk-1");

            String bShared = uri("team-b", "job/shared");
            assertDenied(
                    () -> durable.uploadSnapshot("team_a_t", 1, shards, bShared, aChk, Set.of()),
                    "'team-a'",
                    "does not cover path '" + bShared + "'");
            String bChk = uri("team-b", "job/chk-9");
            assertDenied(
                    () -> durable.uploadSnapshot("team_a_t", 1, shards, aShared, bChk, Set.of()),
                    "does not cover path '" + bChk + "'");
            String escape =
                    storage("team-a").resolve("job").toUri().toString().replaceAll("/$", "")
                            + "/../../team-b/job/shared";
            assertDenied(
                    () -> durable.uploadSnapshot("team_a_t", 1, shards, escape, aChk, Set.of()),
                    "path '" + escape + "' in checkpoint storage has a '..' segment");
            String sibling = uri("team-ab", "job/shared");
            assertDenied(
                    () -> durable.uploadSnapshot("team_a_t", 1, shards, sibling, aChk, Set.of()),
                    "does not cover path '" + sibling + "'");
            String otherHost = "file://elsewhere" + storage("team-a").resolve("job/shared");
            assertDenied(
                    () -> durable.uploadSnapshot("team_a_t", 1, shards, otherHost, aChk, Set.of()),
                    "does not cover path '" + otherHost + "'");
            // B's copies as A's to reference: Flink would one day delete them with A's checkpoint.
            assertDenied(
                    () ->
                            durable.uploadSnapshot(
                                    "team_a_t", 1, shards, aShared, aChk, Set.copyOf(paths(ofB))),
                    "does not cover path 'file:" + storage("team-b"));

            // A restore into A's own table from cuts whose files are B's copies.
            assertDenied(
                    () ->
                            durable.restoreShards(
                                    "team_a_t", "w9", restores("team_a_t", 1, ofB), ofB.cuts()),
                    "does not cover path 'file:" + storage("team-b"));
            // Only the metadata pack in B's directory is enough.
            DurableCut cutOfB = ofB.cuts().get(0);
            DurableCut packOfB =
                    new DurableCut(
                            cutOfB.cutId(),
                            List.of(),
                            List.of(),
                            new DurableFile(
                                    "",
                                    cutOfB.metadataPack().path(),
                                    cutOfB.metadataPack().sizeBytes(),
                                    cutOfB.metadataPack().crc32c()));
            assertDenied(
                    () ->
                            durable.restoreShards(
                                    "team_a_t",
                                    "w9",
                                    List.of(new ShardRestore(0, "team_a_t", 1, cutOfB.cutId())),
                                    List.of(packOfB)),
                    "does not cover path '" + cutOfB.metadataPack().path() + "'");

            // Nothing was written, not even into A's own directory, and nothing was read.
            assertThat(filesUnder(storage("team-b"))).isEqualTo(bFiles);
            assertThat(storage("team-ab")).doesNotExist();
            assertThat(storage("team-a")).doesNotExist();
            assertThat(transfers().uploadedBytes()).isEqualTo(uploaded);
            assertThat(transfers().downloadedBytes()).isZero();

            // What is A's stays A's to use.
            DurableSnapshot own =
                    durable.uploadSnapshot("team_a_t", 1, shards, aShared, aChk, Set.of());
            CheckpointPath dirOfA = CheckpointPath.parse(storage("team-a").toUri().toString());
            assertThat(paths(own)).allMatch(p -> dirOfA.covers(CheckpointPath.parse(p)));
        }
        assertThat(filesUnder(storage("team-b"))).isEqualTo(bFiles);
    }

    @Test
    void aScopedTokenWithoutCheckpointDirectoriesMayNameNoPathAndIsToldWhatToAdd()
            throws Exception {
        try (KvStore c = connect(TEAM_C)) {
            List<ShardLease> leases = tableWithSnapshot(c, "team_c_t", "c's");
            String dir = uri("team-c", "job/shared");
            assertDenied(
                    () ->
                            c.durable()
                                    .orElseThrow()
                                    .uploadSnapshot(
                                            "team_c_t",
                                            1,
                                            new int[] {0, 1},
                                            dir,
                                            uri("team-c", "job/chk-1"),
                                            Set.of()),
                    "token 'team-c' (tables [team_c_]) may name no path in checkpoint storage",
                    "'" + dir + "'",
                    "checkpoints=<dir>[,<dir>...]",
                    "auth.token-file");
            // The path goes into the message and the log: a line break in it cannot forge a line.
            assertThatThrownBy(
                            () ->
                                    c.durable()
                                            .orElseThrow()
                                            .uploadSnapshot(
                                                    "team_c_t",
                                                    1,
                                                    new int[] {0, 1},
                                                    dir + "\nWARN forged",
                                                    uri("team-c", "job/chk-1"),
                                                    Set.of()))
                    .isInstanceOf(PermissionDeniedException.class)
                    .hasMessageContaining(dir + "\\u000aWARN forged")
                    .hasMessageNotContaining("\n");
            assertThat(storage("team-c")).doesNotExist();
            // Everything that names no path is as before.
            List<ShardLease> restored =
                    c.restoreShards(
                            "team_c_t",
                            "w2",
                            List.of(
                                    new ShardRestore(0, "team_c_t", 1),
                                    new ShardRestore(1, "team_c_t", 1)));
            assertThat(c.get(restored.get(0), b("k0"))).isEqualTo(b("c's"));
            assertThat(leases).hasSize(2);
        }
    }

    @Test
    void theAdminTokenMayNameAnyPath() throws Exception {
        try (KvStore admin = connect(ADMIN)) {
            tableWithSnapshot(admin, "team_a_t", "a's");
            KvStore.Durable durable = admin.durable().orElseThrow();
            DurableSnapshot intoB =
                    durable.uploadSnapshot(
                            "team_a_t",
                            1,
                            new int[] {0, 1},
                            uri("team-b", "job/shared"),
                            uri("team-b", "job/chk-1"),
                            Set.of());
            DurableSnapshot nobodys =
                    durable.uploadSnapshot(
                            "team_a_t",
                            1,
                            new int[] {0, 1},
                            uri("nobody", "shared"),
                            uri("nobody", "chk-1"),
                            Set.copyOf(paths(intoB)));
            assertThat(filesUnder(storage("nobody"))).isNotEmpty();
            DurableRestore restored =
                    durable.restoreShards(
                            "team_a_t", "w2", restores("team_a_t", 1, nobodys), nobodys.cuts());
            assertThat(restored.leases()).hasSize(2);
        }
    }
}
