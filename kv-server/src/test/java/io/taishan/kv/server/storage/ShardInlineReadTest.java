package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.b;
import static io.taishan.kv.server.storage.Ops.put;
import static io.taishan.kv.server.storage.Ops.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reads the service runs on a network thread: they answer as {@link Shard#get} and {@link
 * Shard#multiGet} do, except that they never open the shard's store.
 */
class ShardInlineReadTest {
    @TempDir Path dir;

    private StorageEngine engine;
    private Shard shard;

    @BeforeEach
    void setUp() {
        engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", 4, false);
        shard = engine.tableStore("t").shard(1);
    }

    @AfterEach
    void tearDown() {
        engine.close();
    }

    private void write(long epoch, WriteOp... ops) {
        shard.write(epoch, List.of(ops));
    }

    @Test
    void answersFromAnOpenShardAndNeverOpensOne() {
        long epoch = shard.open();
        // OpenShard alone does not open the RocksDB instance.
        assertThat(shard.getIfReady(epoch, b("a"))).isSameAs(Shard.NOT_READY);
        assertThat(shard.multiGetIfReady(epoch, List.of(b("a")))).isNull();
        assertThat(shard.isOpen()).isFalse();

        write(epoch, put("a", "1"));
        assertThat(s(shard.getIfReady(epoch, b("a")))).isEqualTo("1");
        assertThat(shard.getIfReady(epoch, b("absent"))).isNull();
        assertThat(shard.multiGetIfReady(epoch, List.of(b("a"), b("absent"))))
                .extracting(Ops::s)
                .containsExactly("1", null);

        assertThat(engine.closeAllIdleStores()).isEqualTo(1);
        assertThat(shard.getIfReady(epoch, b("a"))).isSameAs(Shard.NOT_READY);
        assertThat(shard.isOpen()).isFalse();
        // The service's fallback opens it; then the inline read answers again.
        assertThat(s(shard.get(epoch, b("a")))).isEqualTo("1");
        assertThat(s(shard.getIfReady(epoch, b("a")))).isEqualTo("1");
    }

    @Test
    void fencesAStaleLeaseOnAnOpenShard() {
        long stale = shard.open();
        write(stale, put("a", "1"));
        long current = shard.open();
        write(current, put("b", "2"));

        KvServerException get =
                catchThrowableOfType(
                        () -> shard.getIfReady(stale, b("a")), KvServerException.class);
        KvServerException multiGet =
                catchThrowableOfType(
                        () -> shard.multiGetIfReady(stale, List.of(b("a"))),
                        KvServerException.class);

        assertThat(get.code()).isEqualTo(ErrorCode.FENCED);
        assertThat(get.getMessage()).contains("epoch " + stale + " is not current");
        assertThat(multiGet.code()).isEqualTo(ErrorCode.FENCED);
        assertThat(s(shard.getIfReady(current, b("a")))).isEqualTo("1");
    }

    @Test
    void aDroppedShardIsLeftToGetWhichNamesTheMissingTable() {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        engine.dropTable("t");

        assertThat(shard.getIfReady(epoch, b("a"))).isSameAs(Shard.NOT_READY);
        KvServerException e =
                catchThrowableOfType(() -> shard.get(epoch, b("a")), KvServerException.class);
        assertThat(e.code()).isEqualTo(ErrorCode.TABLE_NOT_FOUND);
    }
}
