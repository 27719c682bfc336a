package io.taishan.it.job;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/** Serializes single splits (reader state) and lists of splits (enumerator state). */
public final class KeyRangeSplitSerializer {
    private static final int VERSION = 1;

    private KeyRangeSplitSerializer() {}

    public static SimpleVersionedSerializer<KeyRangeSplit> splits() {
        return new SimpleVersionedSerializer<>() {
            @Override
            public int getVersion() {
                return VERSION;
            }

            @Override
            public byte[] serialize(KeyRangeSplit split) throws IOException {
                DataOutputSerializer out = new DataOutputSerializer(24);
                write(split, out);
                return out.getCopyOfBuffer();
            }

            @Override
            public KeyRangeSplit deserialize(int version, byte[] bytes) throws IOException {
                checkVersion(version);
                return read(new DataInputDeserializer(bytes));
            }
        };
    }

    public static SimpleVersionedSerializer<List<KeyRangeSplit>> splitLists() {
        return new SimpleVersionedSerializer<>() {
            @Override
            public int getVersion() {
                return VERSION;
            }

            @Override
            public byte[] serialize(List<KeyRangeSplit> splits) throws IOException {
                DataOutputSerializer out = new DataOutputSerializer(4 + 24 * splits.size());
                out.writeInt(splits.size());
                for (KeyRangeSplit split : splits) {
                    write(split, out);
                }
                return out.getCopyOfBuffer();
            }

            @Override
            public List<KeyRangeSplit> deserialize(int version, byte[] bytes) throws IOException {
                checkVersion(version);
                DataInputDeserializer in = new DataInputDeserializer(bytes);
                int count = in.readInt();
                List<KeyRangeSplit> splits = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    splits.add(read(in));
                }
                return splits;
            }
        };
    }

    private static void write(KeyRangeSplit split, DataOutputView out) throws IOException {
        out.writeInt(split.index());
        out.writeInt(split.firstKey());
        out.writeInt(split.keyCount());
        out.writeInt(split.recordsPerKey());
        out.writeLong(split.position());
    }

    private static KeyRangeSplit read(DataInputView in) throws IOException {
        return new KeyRangeSplit(
                in.readInt(), in.readInt(), in.readInt(), in.readInt(), in.readLong());
    }

    private static void checkVersion(int version) throws IOException {
        if (version != VERSION) {
            throw new IOException("unknown KeyRangeSplit serializer version " + version);
        }
    }
}
