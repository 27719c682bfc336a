package io.taishan.kv.server.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.WriteOp;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Server-side expiry on a fake clock: the owner reports its TTL time, a sweep deletes what Flink's
 * TTL wrapper would consider expired in each layout (value, map entry, fixed-length list), and
 * keeps live values, values rewritten after the sweep looked, values it cannot parse, states
 * without TTL, and snapshots.
 */
class ExpirySweeperTest {
    private static final long TTL = 1_000;
    private static final int VALUE_STATE = 0x01020304;
    private static final int MAP_STATE = 0x01020305;
    private static final int LIST_STATE = 0x01020306;
    private static final int PLAIN_STATE = 0x01020307;

    @TempDir Path dir;

    private StorageEngine engine;
    private Shard shard;
    private ExpirySweeper sweeper;
    private long epoch;

    @BeforeEach
    void setUp() {
        engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", 4, false);
        TableStore table = engine.tableStore("t");
        table.registerTtlStates(
                List.of(
                        new StateTtl(VALUE_STATE, TTL, StateTtl.Layout.VALUE, 0),
                        new StateTtl(MAP_STATE, TTL, StateTtl.Layout.MAP_ENTRY, 0),
                        new StateTtl(LIST_STATE, TTL, StateTtl.Layout.LIST, 16)));
        shard = table.shard(1);
        epoch = shard.open();
        sweeper = new ExpirySweeper(engine, Duration.ofHours(1), 0);
    }

    @AfterEach
    void tearDown() {
        sweeper.close();
        engine.close();
    }

    @Test
    void expiredEntriesOfEveryLayoutGoAndLiveOnesStay() throws Exception {
        write(
                put(VALUE_STATE, "old", value(100)),
                put(VALUE_STATE, "fresh", value(1_900)),
                put(MAP_STATE, "old", mapEntry(100)),
                put(MAP_STATE, "fresh", mapEntry(1_500)),
                put(LIST_STATE, "all-old", list(100, 200)),
                put(LIST_STATE, "one-fresh", list(100, 1_800)),
                put(LIST_STATE, "odd-length", new byte[] {1, 2, 3}),
                put(VALUE_STATE, "too-short", new byte[] {1, 2}),
                put(PLAIN_STATE, "no-ttl", value(0)));
        shard.reportTtlTime(epoch, 2_000);

        assertThat(sweeper.sweepOnce()).isEqualTo(3);

        assertThat(present(VALUE_STATE, "old")).isFalse();
        assertThat(present(MAP_STATE, "old")).isFalse();
        assertThat(present(LIST_STATE, "all-old")).isFalse();
        assertThat(present(VALUE_STATE, "fresh")).isTrue();
        assertThat(present(MAP_STATE, "fresh")).isTrue();
        assertThat(present(LIST_STATE, "one-fresh")).isTrue();
        assertThat(present(LIST_STATE, "odd-length")).isTrue();
        assertThat(present(VALUE_STATE, "too-short")).isTrue();
        assertThat(present(PLAIN_STATE, "no-ttl")).isTrue();
        assertThat(engine.tableStore("t").expiredEntries()).isEqualTo(3);
        assertThat(engine.tableStore("t").lastSweepMillis()).isPositive();
    }

    @Test
    void theBoundaryIsFlinksTimestampPlusTtlAtOrBeforeNow() throws Exception {
        write(
                put(VALUE_STATE, "exactly", value(1_000)),
                put(VALUE_STATE, "one-later", value(1_001)));
        shard.reportTtlTime(epoch, 2_000);
        sweeper.sweepOnce();
        assertThat(present(VALUE_STATE, "exactly")).isFalse();
        assertThat(present(VALUE_STATE, "one-later")).isTrue();
    }

    @Test
    void nothingExpiresWithoutTheOwnersClockUnderTheCurrentLease() throws Exception {
        write(put(VALUE_STATE, "old", value(0)));
        assertThat(sweeper.sweepOnce()).isZero();

        shard.reportTtlTime(epoch, 10_000);
        long newEpoch = shard.open(); // another owner took the shard
        assertThat(sweeper.sweepOnce()).as("the old owner's clock is not the new one's").isZero();
        assertThatThrownBy(() -> shard.reportTtlTime(epoch, 20_000))
                .isInstanceOf(KvServerException.class)
                .hasMessageContaining("not current");

        shard.reportTtlTime(newEpoch, 10_000);
        assertThat(sweeper.sweepOnce()).isEqualTo(1);
    }

    @Test
    void aClockGoingBackNeverRevivesAnything() throws Exception {
        shard.reportTtlTime(epoch, 5_000);
        shard.reportTtlTime(epoch, 1_000);
        write(put(VALUE_STATE, "k", value(3_000)));
        assertThat(sweeper.sweepOnce()).isEqualTo(1);
    }

    @Test
    void aValueRewrittenAfterTheSweepReadItSurvives() {
        write(put(VALUE_STATE, "k", value(0)));
        shard.reportTtlTime(epoch, 5_000);
        StateTtl ttl = new StateTtl(VALUE_STATE, TTL, StateTtl.Layout.VALUE, 0);
        // The sweep's page saw the old value; the owner rewrote it before the delete.
        write(put(VALUE_STATE, "k", value(4_900)));
        assertThat(shard.deleteStillExpired(List.of(key(VALUE_STATE, "k")), ttl, 5_000, epoch))
                .isZero();
        assertThat(present(VALUE_STATE, "k")).isTrue();
    }

    @Test
    void snapshotsKeepWhatTheyHoldAndExpiryGoesOnAfterARestore() throws Exception {
        write(put(VALUE_STATE, "old", value(100)));
        shard.snapshot(epoch, 7, false);
        shard.reportTtlTime(epoch, 2_000);
        assertThat(sweeper.sweepOnce()).isEqualTo(1);

        long restored = shard.restore(7);
        assertThat(shard.get(restored, key(VALUE_STATE, "old"))).isNotNull();
        assertThat(sweeper.sweepOnce()).as("no clock under the restored lease yet").isZero();
        shard.reportTtlTime(restored, 2_000);
        assertThat(sweeper.sweepOnce()).isEqualTo(1);
        assertThat(shard.get(restored, key(VALUE_STATE, "old"))).isNull();
    }

    @Test
    void registrationsWidenTheTtlAndSurviveARestart() {
        engine.tableStore("t")
                .registerTtlStates(
                        List.of(new StateTtl(VALUE_STATE, 5 * TTL, StateTtl.Layout.VALUE, 0)));
        engine.tableStore("t")
                .registerTtlStates(
                        List.of(new StateTtl(VALUE_STATE, TTL, StateTtl.Layout.VALUE, 0)));
        sweeper.close();
        engine.close();
        engine = StorageEngine.open(Ops.smallOptions(dir));
        sweeper = new ExpirySweeper(engine, Duration.ofHours(1), 0);
        assertThat(engine.tableStore("t").ttlStates())
                .filteredOn(s -> s.stateId() == VALUE_STATE)
                .singleElement()
                .satisfies(s -> assertThat(s.ttlMillis()).isEqualTo(5 * TTL));
        assertThatThrownBy(
                        () ->
                                engine.tableStore("t")
                                        .registerTtlStates(
                                                List.of(
                                                        new StateTtl(
                                                                VALUE_STATE,
                                                                TTL,
                                                                StateTtl.Layout.LIST,
                                                                8))))
                .isInstanceOf(KvServerException.class)
                .hasMessageContaining("layouts");
    }

    @Test
    void manyEntriesAcrossPagesAllGo() throws Exception {
        WriteOp[] ops = new WriteOp[5_000];
        for (int i = 0; i < ops.length; i++) {
            ops[i] = put(VALUE_STATE, "k" + i, value(i % 2 == 0 ? 0 : 10_000));
        }
        write(ops);
        shard.reportTtlTime(epoch, 5_000);
        assertThat(sweeper.sweepOnce()).isEqualTo(2_500);
        assertThat(present(VALUE_STATE, "k1")).isTrue();
        assertThat(present(VALUE_STATE, "k0")).isFalse();
    }

    // ---- helpers

    private void write(WriteOp... ops) {
        shard.write(epoch, List.of(ops));
    }

    private boolean present(int stateId, String name) {
        return shard.get(shard.epoch(), key(stateId, name)) != null;
    }

    private static byte[] key(int stateId, String name) {
        byte[] suffix = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + suffix.length).putInt(stateId).put(suffix).array();
    }

    private static WriteOp put(int stateId, String name, byte[] value) {
        return WriteOp.newBuilder()
                .setPut(
                        Put.newBuilder()
                                .setKey(ByteString.copyFrom(key(stateId, name)))
                                .setValue(ByteString.copyFrom(value)))
                .build();
    }

    /** Flink's TtlValue: [timestamp][user value]. */
    private static byte[] value(long timestamp) {
        return ByteBuffer.allocate(12).putLong(timestamp).putInt(42).array();
    }

    /** A map entry of a TTL'd map: [null flag][timestamp][user value]. */
    private static byte[] mapEntry(long timestamp) {
        return ByteBuffer.allocate(13).put((byte) 0).putLong(timestamp).putInt(42).array();
    }

    /** A list of 16-byte elements [timestamp][long], joined by ','. */
    private static byte[] list(long... timestamps) {
        ByteBuffer b = ByteBuffer.allocate(timestamps.length * 17 - 1);
        for (int i = 0; i < timestamps.length; i++) {
            if (i > 0) {
                b.put((byte) ',');
            }
            b.putLong(timestamps[i]).putLong(7);
        }
        return b.array();
    }
}
