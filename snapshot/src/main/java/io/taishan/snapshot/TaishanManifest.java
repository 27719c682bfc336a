package io.taishan.snapshot;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import javax.annotation.Nullable;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.core.memory.DataOutputViewStreamWrapper;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.util.IOUtils;

/**
 * The stream behind a Taishan {@link KeyGroupsStateHandle}.
 *
 * <p>Layout: {@link #MAGIC}, a format version, the {@link KeyedBackendSerializationProxy} (key
 * serializer and state meta info), then one record per key group at the offset that the handle's
 * {@link KeyGroupRangeOffsets} records: the key group and its {@link ShardSnapshotRef}. Version 2
 * (written now) names the tables once, right after the version, and each record is {@code [key
 * group][table's index][snapshot id]}, 16 bytes; version 1 (still read) spelled the table in every
 * record, about 80 bytes: 2.6 MB per checkpoint of a subtask of 32,768 key groups. Because the
 * references sit at key-group offsets, Flink's own {@link KeyGroupsStateHandle#getIntersection}
 * cuts a manifest for a rescaled subtask, and the JobManager stores the handle like any other: no
 * new handle class, which its metadata serializer would reject.
 */
public final class TaishanManifest {
    /** "TSHN" followed by "MF01": distinct from the first bytes of heap and RocksDB snapshots. */
    public static final long MAGIC = 0x5453484E4D463031L;

    /** The version written. */
    public static final int VERSION = 2;

    private static final int VERSION_TABLE_PER_RECORD = 1;

    /** A version 2 record: key group, table index, snapshot id. */
    private static final int RECORD_BYTES = 16;

    private TaishanManifest() {}

    /**
     * Writes the manifest for every key group of {@code range} and returns the handle. The stream
     * is registered in {@code registry} while it is written, so that cancelling the checkpoint
     * closes it.
     */
    public static KeyGroupsStateHandle write(
            CheckpointStateOutputStream out,
            CloseableRegistry registry,
            KeyedBackendSerializationProxy<?> metaInfo,
            KeyGroupRange range,
            IntFunction<ShardSnapshotRef> refOfKeyGroup)
            throws IOException {
        registry.registerCloseable(out);
        boolean handedOver = false;
        try {
            ShardSnapshotRef[] refs = new ShardSnapshotRef[range.getNumberOfKeyGroups()];
            Map<String, Integer> tables = new LinkedHashMap<>();
            for (int keyGroup : range) {
                ShardSnapshotRef ref = refOfKeyGroup.apply(keyGroup);
                if (ref == null || ref.shard() != keyGroup) {
                    throw new IllegalStateException(
                            "no shard snapshot for key group " + keyGroup + ": " + ref);
                }
                refs[keyGroup - range.getStartKeyGroup()] = ref;
                tables.putIfAbsent(ref.table(), tables.size());
            }
            // Buffered: a record is three small writes, and the stream may not buffer itself.
            BufferedOutputStream buffered =
                    new BufferedOutputStream(new NonClosingOut(out), 1 << 16);
            DataOutputView view = new DataOutputViewStreamWrapper(buffered);
            view.writeLong(MAGIC);
            view.writeInt(VERSION);
            view.writeInt(tables.size());
            for (String table : tables.keySet()) {
                view.writeUTF(table);
            }
            metaInfo.write(view);
            buffered.flush();

            KeyGroupRangeOffsets offsets = new KeyGroupRangeOffsets(range);
            long position = out.getPos();
            for (int keyGroup : range) {
                ShardSnapshotRef ref = refs[keyGroup - range.getStartKeyGroup()];
                offsets.setKeyGroupOffset(keyGroup, position);
                view.writeInt(keyGroup);
                view.writeInt(tables.get(ref.table()));
                view.writeLong(ref.snapshotId());
                position += RECORD_BYTES;
            }
            buffered.flush();
            if (out.getPos() != position) {
                throw new IllegalStateException(
                        "manifest records end at " + out.getPos() + ", expected " + position);
            }
            if (!registry.unregisterCloseable(out)) {
                throw new IOException("the manifest stream was closed: checkpoint cancelled");
            }
            handedOver = true;
            StreamStateHandle stream = out.closeAndGetHandle();
            return new KeyGroupsStateHandle(offsets, stream);
        } finally {
            if (!handedOver && registry.unregisterCloseable(out)) {
                IOUtils.closeQuietly(out);
            }
        }
    }

    /** True when the handle's stream starts with the manifest magic. */
    public static boolean isManifest(StreamStateHandle handle) throws IOException {
        try (FSDataInputStream in = handle.openInputStream()) {
            byte[] head = new byte[Long.BYTES];
            int read = 0;
            while (read < head.length) {
                int n = in.read(head, read, head.length - read);
                if (n < 0) {
                    return false;
                }
                read += n;
            }
            long magic = 0;
            for (byte b : head) {
                magic = (magic << 8) | (b & 0xFF);
            }
            return magic == MAGIC;
        }
    }

    /**
     * Reads the meta info and the references of the key groups that the handle covers (after {@link
     * KeyGroupsStateHandle#getIntersection}, only those of the restoring subtask).
     */
    public static <K> Contents<K> read(
            KeyGroupsStateHandle handle,
            ClassLoader userCodeClassLoader,
            CloseableRegistry registry)
            throws IOException {
        FSDataInputStream in = handle.openInputStream();
        registry.registerCloseable(in);
        try {
            DataInputView view = new DataInputViewStreamWrapper(in);
            List<String> tables = readHeader(view, handle);
            KeyedBackendSerializationProxy<K> metaInfo =
                    new KeyedBackendSerializationProxy<>(userCodeClassLoader);
            metaInfo.read(view);
            return new Contents<>(metaInfo, readRefs(in, handle, tables));
        } finally {
            if (registry.unregisterCloseable(in)) {
                IOUtils.closeQuietly(in);
            }
        }
    }

    /**
     * Reads only the references of the key groups that the handle covers, by key-group offset, so
     * without the meta info: its serializer snapshots may name the job's own classes, which a tool
     * outside the job (the admin's gc) does not have.
     */
    public static Map<Integer, ShardSnapshotRef> readReferences(KeyGroupsStateHandle handle)
            throws IOException {
        try (FSDataInputStream in = handle.openInputStream()) {
            DataInputView view = new DataInputViewStreamWrapper(in);
            return readRefs(in, handle, readHeader(view, handle));
        }
    }

    /**
     * Checks the magic and the version, and returns the tables the records name by index (version
     * 2), or null (version 1: each record names its table).
     */
    @Nullable
    private static List<String> readHeader(DataInputView view, KeyGroupsStateHandle handle)
            throws IOException {
        long magic = view.readLong();
        if (magic != MAGIC) {
            throw new NotATaishanManifestException(
                    "The keyed state handle "
                            + handle.getDelegateStateHandle()
                            + " is not a Taishan manifest (found 0x"
                            + Long.toHexString(magic)
                            + "): it was written by another state backend. Restore it"
                            + " through a canonical savepoint.");
        }
        int version = view.readInt();
        if (version == VERSION_TABLE_PER_RECORD) {
            return null;
        }
        if (version != VERSION) {
            throw new IOException(
                    "Taishan manifest version "
                            + version
                            + " is not supported: this build reads versions "
                            + VERSION_TABLE_PER_RECORD
                            + " and "
                            + VERSION);
        }
        int count = view.readInt();
        if (count < 0) {
            throw new IOException(
                    "corrupt Taishan manifest " + handle.getDelegateStateHandle() + ": " + count);
        }
        List<String> tables = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            tables.add(view.readUTF());
        }
        return tables;
    }

    /**
     * The references at the handle's key-group offsets. They were written one after another in
     * key-group order, so they are read through one buffer from the first offset on (a seek per key
     * group would be a read call per field: 32,768 key groups took half a second); an offset behind
     * the buffer's position, which Flink never makes, seeks anew.
     */
    private static Map<Integer, ShardSnapshotRef> readRefs(
            FSDataInputStream in, KeyGroupsStateHandle handle, @Nullable List<String> tables)
            throws IOException {
        Map<Integer, ShardSnapshotRef> refs = new LinkedHashMap<>();
        PositionedInput at = null;
        for (Tuple2<Integer, Long> keyGroupOffset : handle.getGroupRangeOffsets()) {
            long offset = keyGroupOffset.f1;
            if (at == null || offset < at.position) {
                in.seek(offset);
                at = new PositionedInput(in, offset);
            } else {
                at.skipTo(offset);
            }
            DataInputStream view = at.data;
            int keyGroup = view.readInt();
            if (keyGroup != keyGroupOffset.f0) {
                throw new IOException(
                        "corrupt Taishan manifest "
                                + handle.getDelegateStateHandle()
                                + ": key group "
                                + keyGroup
                                + " at the offset of key group "
                                + keyGroupOffset.f0);
            }
            String table;
            if (tables == null) {
                table = view.readUTF();
            } else {
                int index = view.readInt();
                if (index < 0 || index >= tables.size()) {
                    throw new IOException(
                            "corrupt Taishan manifest "
                                    + handle.getDelegateStateHandle()
                                    + ": key group "
                                    + keyGroup
                                    + " names table "
                                    + index
                                    + " of "
                                    + tables.size());
                }
                table = tables.get(index);
            }
            long snapshotId = view.readLong();
            refs.put(keyGroup, new ShardSnapshotRef(table, keyGroup, snapshotId));
        }
        return refs;
    }

    /** A buffered reader of a stream that knows its position; never closes the stream. */
    private static final class PositionedInput extends InputStream {
        private static final int BUFFER = 64 << 10;

        private final InputStream buffered;
        final DataInputStream data;
        long position;

        PositionedInput(FSDataInputStream in, long position) {
            this.buffered = new BufferedInputStream(new NonClosing(in), BUFFER);
            this.data = new DataInputStream(this);
            this.position = position;
        }

        void skipTo(long offset) throws IOException {
            buffered.skipNBytes(offset - position);
            position = offset;
        }

        @Override
        public int read() throws IOException {
            int b = buffered.read();
            if (b >= 0) {
                position++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = buffered.read(b, off, len);
            if (n > 0) {
                position += n;
            }
            return n;
        }
    }

    private static final class NonClosingOut extends FilterOutputStream {
        NonClosingOut(OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
        }

        @Override
        public void close() {}
    }

    private static final class NonClosing extends FilterInputStream {
        NonClosing(InputStream in) {
            super(in);
        }

        @Override
        public void close() {}
    }

    /** What one manifest holds for the key groups read. */
    public record Contents<K>(
            KeyedBackendSerializationProxy<K> metaInfo, Map<Integer, ShardSnapshotRef> refs) {}
}
