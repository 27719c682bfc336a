package io.taishan.snapshot;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
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
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.util.IOUtils;

/**
 * The stream behind a Taishan {@link KeyGroupsStateHandle}, or a durable checkpoint's meta state.
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
 *
 * <p>Version {@value #VERSION_DURABLE} is the meta state of a durable checkpoint's {@link
 * IncrementalRemoteKeyedStateHandle} ({@link DurableCheckpointHandles}): after the tables, the cuts
 * in checkpoint storage (id, metadata pack's size and CRC32C, each data file's name, size and
 * CRC32C; the copies' paths are the handle's), the handle's key-group range, one record per key
 * group {@code [key group][table's index][snapshot id][cut's index]} (20 bytes), and the meta info
 * last, so that a reader of references alone stops before it. That handle has no key-group offsets
 * and Flink hands it whole to every subtask whose range it touches, so a reader keeps only its own
 * key groups' records.
 */
public final class TaishanManifest {
    /** "TSHN" followed by "MF01": distinct from the first bytes of heap and RocksDB snapshots. */
    public static final long MAGIC = 0x5453484E4D463031L;

    /** The version written inside a {@link KeyGroupsStateHandle}. */
    public static final int VERSION = 2;

    /** The version of a durable checkpoint's manifest (meta state, not key-group offsets). */
    public static final int VERSION_DURABLE = 3;

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

    /**
     * Writes a durable checkpoint's manifest for every key group of {@code range} and returns its
     * stream, the meta state of the handle {@link DurableCheckpointHandles#handle} makes. The
     * stream is registered in {@code registry} while it is written, so that cancelling the
     * checkpoint closes it.
     *
     * @param cutOfKeyGroup the id of the cut in {@code cuts} that holds the key group's snapshot
     */
    public static StreamStateHandle writeDurable(
            CheckpointStateOutputStream out,
            CloseableRegistry registry,
            KeyedBackendSerializationProxy<?> metaInfo,
            KeyGroupRange range,
            IntFunction<ShardSnapshotRef> refOfKeyGroup,
            IntFunction<String> cutOfKeyGroup,
            List<DurableCut> cuts)
            throws IOException {
        registry.registerCloseable(out);
        boolean handedOver = false;
        try {
            Map<String, Integer> cutIndex = new HashMap<>();
            for (DurableCut cut : cuts) {
                if (cutIndex.putIfAbsent(cut.cutId(), cutIndex.size()) != null) {
                    throw new IllegalStateException("cut " + cut.cutId() + " reported twice");
                }
            }
            ShardSnapshotRef[] refs = new ShardSnapshotRef[range.getNumberOfKeyGroups()];
            int[] cutOf = new int[refs.length];
            Map<String, Integer> tables = new LinkedHashMap<>();
            for (int keyGroup : range) {
                ShardSnapshotRef ref = refOfKeyGroup.apply(keyGroup);
                if (ref == null || ref.shard() != keyGroup) {
                    throw new IllegalStateException(
                            "no shard snapshot for key group " + keyGroup + ": " + ref);
                }
                String cutId = cutOfKeyGroup.apply(keyGroup);
                Integer cut = cutId == null ? null : cutIndex.get(cutId);
                if (cut == null) {
                    throw new IllegalStateException(
                            "no durable cut holds the snapshot of key group "
                                    + keyGroup
                                    + ": "
                                    + cutId);
                }
                refs[keyGroup - range.getStartKeyGroup()] = ref;
                cutOf[keyGroup - range.getStartKeyGroup()] = cut;
                tables.putIfAbsent(ref.table(), tables.size());
            }
            BufferedOutputStream buffered =
                    new BufferedOutputStream(new NonClosingOut(out), 1 << 16);
            DataOutputView view = new DataOutputViewStreamWrapper(buffered);
            view.writeLong(MAGIC);
            view.writeInt(VERSION_DURABLE);
            view.writeInt(tables.size());
            for (String table : tables.keySet()) {
                view.writeUTF(table);
            }
            view.writeInt(cuts.size());
            for (DurableCut cut : cuts) {
                view.writeUTF(cut.cutId());
                view.writeLong(cut.metadataPack().sizeBytes());
                view.writeInt(cut.metadataPack().crc32c());
                view.writeInt(cut.files().size());
                for (DurableFile file : cut.files()) {
                    view.writeUTF(file.name());
                    view.writeLong(file.sizeBytes());
                    view.writeInt(file.crc32c());
                }
            }
            view.writeInt(range.getStartKeyGroup());
            view.writeInt(range.getNumberOfKeyGroups());
            for (int keyGroup : range) {
                int i = keyGroup - range.getStartKeyGroup();
                view.writeInt(keyGroup);
                view.writeInt(tables.get(refs[i].table()));
                view.writeLong(refs[i].snapshotId());
                view.writeInt(cutOf[i]);
            }
            metaInfo.write(view);
            buffered.flush();
            if (!registry.unregisterCloseable(out)) {
                throw new IOException("the manifest stream was closed: checkpoint cancelled");
            }
            handedOver = true;
            return out.closeAndGetHandle();
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
     * Reads a durable checkpoint's manifest: the meta info, and the references and cuts of the key
     * groups of {@code range} (the handle covers its writer's range, which a rescale cuts), each
     * cut's files with the paths of their copies as the handle names them.
     */
    public static <K> Contents<K> read(
            IncrementalRemoteKeyedStateHandle handle,
            KeyGroupRange range,
            ClassLoader userCodeClassLoader,
            CloseableRegistry registry)
            throws IOException {
        StreamStateHandle stream = handle.getMetaDataStateHandle();
        FSDataInputStream in = stream.openInputStream();
        registry.registerCloseable(in);
        try {
            DataInputView view =
                    new DataInputViewStreamWrapper(
                            new BufferedInputStream(new NonClosing(in), 1 << 16));
            DurableRecords records = readDurable(view, stream, range);
            KeyedBackendSerializationProxy<K> metaInfo =
                    new KeyedBackendSerializationProxy<>(userCodeClassLoader);
            metaInfo.read(view);
            Map<String, String> copies = DurableCheckpointHandles.copiesByLocalPath(handle);
            Map<String, DurableCut> cuts = new LinkedHashMap<>();
            for (String cutId : new LinkedHashSet<>(records.cutIds.values())) {
                cuts.put(cutId, records.cuts.get(cutId).withCopies(copies, handle));
            }
            return new Contents<>(metaInfo, records.refs, records.cutIds, cuts);
        } finally {
            if (registry.unregisterCloseable(in)) {
                IOUtils.closeQuietly(in);
            }
        }
    }

    /**
     * Reads only the references of a durable checkpoint's manifest, every key group of the handle,
     * without the meta info (see {@link #readReferences(KeyGroupsStateHandle)}).
     */
    public static Map<Integer, ShardSnapshotRef> readReferences(
            IncrementalRemoteKeyedStateHandle handle) throws IOException {
        StreamStateHandle stream = handle.getMetaDataStateHandle();
        try (FSDataInputStream in = stream.openInputStream()) {
            DataInputView view =
                    new DataInputViewStreamWrapper(new BufferedInputStream(in, 1 << 16));
            return readDurable(view, stream, handle.getKeyGroupRange()).refs;
        }
    }

    /**
     * A version {@value #VERSION_DURABLE} manifest up to its meta info: the records of the key
     * groups of {@code range} and the cuts they name.
     */
    private static DurableRecords readDurable(
            DataInputView view, StreamStateHandle stream, KeyGroupRange range) throws IOException {
        checkMagic(view.readLong(), stream);
        int version = view.readInt();
        if (version != VERSION_DURABLE) {
            throw new IOException(
                    "Taishan manifest "
                            + stream
                            + " has version "
                            + version
                            + " where a durable checkpoint's handle needs version "
                            + VERSION_DURABLE);
        }
        List<String> tables = readTables(view, stream);
        int cutCount = view.readInt();
        checkCount(cutCount, stream, "cuts");
        List<ManifestCut> cuts = new ArrayList<>(cutCount);
        for (int i = 0; i < cutCount; i++) {
            String cutId = view.readUTF();
            long packSize = view.readLong();
            int packCrc = view.readInt();
            int fileCount = view.readInt();
            checkCount(fileCount, stream, "files of cut " + cutId);
            List<DurableFile> files = new ArrayList<>(fileCount);
            for (int f = 0; f < fileCount; f++) {
                String name = view.readUTF();
                long size = view.readLong();
                int crc = view.readInt();
                files.add(new DurableFile(name, "", size, crc));
            }
            cuts.add(new ManifestCut(cutId, files, new DurableFile("", "", packSize, packCrc)));
        }
        int start = view.readInt();
        int count = view.readInt();
        checkCount(count, stream, "key groups");
        Map<Integer, ShardSnapshotRef> refs = new LinkedHashMap<>();
        Map<Integer, String> cutIds = new LinkedHashMap<>();
        Map<String, ManifestCut> named = new HashMap<>();
        for (int i = 0; i < count; i++) {
            int keyGroup = view.readInt();
            int table = view.readInt();
            long snapshotId = view.readLong();
            int cut = view.readInt();
            if (keyGroup != start + i
                    || table < 0
                    || table >= tables.size()
                    || cut < 0
                    || cut >= cuts.size()) {
                throw new IOException(
                        "corrupt Taishan manifest "
                                + stream
                                + ": record "
                                + i
                                + " names key group "
                                + keyGroup
                                + ", table "
                                + table
                                + " of "
                                + tables.size()
                                + ", cut "
                                + cut
                                + " of "
                                + cuts.size());
            }
            if (range.contains(keyGroup)) {
                refs.put(keyGroup, new ShardSnapshotRef(tables.get(table), keyGroup, snapshotId));
                ManifestCut holder = cuts.get(cut);
                cutIds.put(keyGroup, holder.cutId);
                named.put(holder.cutId, holder);
            }
        }
        return new DurableRecords(refs, cutIds, named);
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
        checkMagic(view.readLong(), handle.getDelegateStateHandle());
        int version = view.readInt();
        if (version == VERSION_TABLE_PER_RECORD) {
            return null;
        }
        if (version == VERSION_DURABLE) {
            throw new IOException(
                    "Taishan manifest "
                            + handle.getDelegateStateHandle()
                            + " is a durable checkpoint's (version "
                            + VERSION_DURABLE
                            + "), found inside a "
                            + KeyGroupsStateHandle.class.getSimpleName()
                            + " instead of its "
                            + IncrementalRemoteKeyedStateHandle.class.getSimpleName());
        }
        if (version != VERSION) {
            throw new IOException(
                    "Taishan manifest version "
                            + version
                            + " is not supported: this build reads versions "
                            + VERSION_TABLE_PER_RECORD
                            + " to "
                            + VERSION_DURABLE);
        }
        return readTables(view, handle.getDelegateStateHandle());
    }

    private static void checkMagic(long magic, StreamStateHandle stream)
            throws NotATaishanManifestException {
        if (magic != MAGIC) {
            throw new NotATaishanManifestException(
                    "The keyed state handle "
                            + stream
                            + " is not a Taishan manifest (found 0x"
                            + Long.toHexString(magic)
                            + "): it was written by another state backend. Restore it"
                            + " through a canonical savepoint.");
        }
    }

    private static List<String> readTables(DataInputView view, StreamStateHandle stream)
            throws IOException {
        int count = view.readInt();
        checkCount(count, stream, "tables");
        List<String> tables = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            tables.add(view.readUTF());
        }
        return tables;
    }

    private static void checkCount(int count, StreamStateHandle stream, String what)
            throws IOException {
        if (count < 0) {
            throw new IOException("corrupt Taishan manifest " + stream + ": " + count + " " + what);
        }
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

    /**
     * What one manifest holds for the key groups read.
     *
     * @param durableCutIds the cut in checkpoint storage that holds each key group's snapshot;
     *     empty for a checkpoint that is not durable (versions 1 and 2)
     * @param durableCuts those cuts by id, with the paths of their copies
     */
    public record Contents<K>(
            KeyedBackendSerializationProxy<K> metaInfo,
            Map<Integer, ShardSnapshotRef> refs,
            Map<Integer, String> durableCutIds,
            Map<String, DurableCut> durableCuts) {

        Contents(KeyedBackendSerializationProxy<K> metaInfo, Map<Integer, ShardSnapshotRef> refs) {
            this(metaInfo, refs, Map.of(), Map.of());
        }
    }

    /** A cut as the manifest describes it: no paths, which the handle holds. */
    private record ManifestCut(String cutId, List<DurableFile> files, DurableFile pack) {
        DurableCut withCopies(Map<String, String> copies, IncrementalRemoteKeyedStateHandle handle)
                throws IOException {
            List<DurableFile> located = new ArrayList<>(files.size());
            for (DurableFile file : files) {
                String path =
                        copyOf(
                                copies,
                                DurableCheckpointHandles.localPath(cutId, file.name()),
                                handle);
                located.add(new DurableFile(file.name(), path, file.sizeBytes(), file.crc32c()));
            }
            String packPath = copyOf(copies, DurableCheckpointHandles.packLocalPath(cutId), handle);
            return new DurableCut(
                    cutId,
                    List.of(),
                    located,
                    new DurableFile("", packPath, pack.sizeBytes(), pack.crc32c()));
        }

        private static String copyOf(
                Map<String, String> copies,
                String localPath,
                IncrementalRemoteKeyedStateHandle handle)
                throws IOException {
            String path = copies.get(localPath);
            if (path == null) {
                throw new IOException(
                        "the handle of checkpoint "
                                + handle.getCheckpointId()
                                + " (key groups "
                                + handle.getKeyGroupRange()
                                + ") names no copy of "
                                + localPath
                                + ", which its Taishan manifest lists");
            }
            return path;
        }
    }

    private record DurableRecords(
            Map<Integer, ShardSnapshotRef> refs,
            Map<Integer, String> cutIds,
            Map<String, ManifestCut> cuts) {}
}
