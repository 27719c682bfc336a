package io.taishan.kv.server.storage;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.Append;
import io.taishan.kv.proto.Delete;
import io.taishan.kv.proto.DeleteRange;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.SnapshotMarker;
import io.taishan.kv.proto.WriteOp;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import javax.annotation.Nullable;

/** Write ops and byte strings for tests. */
final class Ops {
    private Ops() {}

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Nullable
    static String s(@Nullable byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static WriteOp put(String key, String value) {
        return WriteOp.newBuilder()
                .setPut(
                        Put.newBuilder()
                                .setKey(ByteString.copyFromUtf8(key))
                                .setValue(ByteString.copyFromUtf8(value)))
                .build();
    }

    static WriteOp append(String key, String value) {
        return WriteOp.newBuilder()
                .setAppend(
                        Append.newBuilder()
                                .setKey(ByteString.copyFromUtf8(key))
                                .setValue(ByteString.copyFromUtf8(value)))
                .build();
    }

    static WriteOp delete(String key) {
        return WriteOp.newBuilder()
                .setDelete(Delete.newBuilder().setKey(ByteString.copyFromUtf8(key)))
                .build();
    }

    static WriteOp deleteRange(String begin, String end) {
        return WriteOp.newBuilder()
                .setDeleteRange(
                        DeleteRange.newBuilder()
                                .setBeginKey(ByteString.copyFromUtf8(begin))
                                .setEndKey(ByteString.copyFromUtf8(end)))
                .build();
    }

    static WriteOp marker(long id, boolean pinned) {
        return WriteOp.newBuilder()
                .setSnapshot(SnapshotMarker.newBuilder().setSnapshotId(id).setPinned(pinned))
                .build();
    }

    static StorageOptions smallOptions(Path dir) {
        return new StorageOptions(
                dir,
                WalMode.OFF,
                16L << 20,
                8L << 20,
                1L << 20,
                2,
                64,
                Duration.ofMinutes(10),
                100,
                FilterOptions.DEFAULTS,
                SnapshotCacheOptions.DEFAULTS);
    }
}
