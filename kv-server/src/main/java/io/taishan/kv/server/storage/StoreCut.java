package io.taishan.kv.server.storage;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.annotation.Nullable;

/**
 * A cut: a hard-link RocksDB checkpoint of one {@link RangeStore} at one point of its write order,
 * the physical half of a checkpoint. Every shard that was a member of the store at that point is
 * captured; a shard's snapshot is a reference to the cut that holds its range as it was at its
 * snapshot marker ({@link SnapshotCatalog}). Several snapshots may reference one cut (a shard with
 * no write since reuses it), and one cut serves every member of its store, so a checkpoint costs
 * one flush and one cut per store that changed, however many key groups it holds.
 *
 * <p>On disk: {@code cuts/<id>/} holds the checkpoint's files, {@value #FILE_NAME} (this record)
 * and, when any member's filter changed since the store's last cut, a {@link FilterBundle} with
 * those filters. {@link #filterHolders} says, per member with a filter it can vouch for, which
 * cut's bundle holds it: this one, or an earlier cut of the same store whose bundle it still
 * matches.
 *
 * <p>{@code lineage} names the RocksDB lineage the cut's files belong to: the store's (see {@link
 * RangeStore#lineage}), or a lineage of its own for a cut downloaded from checkpoint storage.
 * Within one lineage a file name is given to one content for ever, which is what lets an upload
 * reuse the copy of a file an earlier cut of the same lineage uploaded ({@code
 * durable.FileIdentity}). Cuts written before lineages existed (record version 1) have none.
 *
 * @param id unique within the table, never reused
 * @param storeId the store it was cut from; -1 for a cut downloaded from checkpoint storage
 * @param filterHolders runs of members and the cut whose bundle holds their filter
 * @param lineage the lineage of its files, unique on the node for ever; null for a version 1 cut
 */
record StoreCut(
        long id,
        int storeId,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        List<FilterRun> filterHolders,
        @Nullable String lineage) {

    /** Not a RocksDB file name: RocksDB neither reads nor deletes it. */
    static final String FILE_NAME = "TAISHAN-CUT";

    private static final int MAGIC = 0x54534354; // "TSCT"
    private static final int VERSION = 2;

    /** Shards {@code [from, to)} whose filter is in cut {@code holder}'s bundle. */
    record FilterRun(int from, int to, long holder) {}

    /**
     * The cut whose bundle holds {@code shard}'s filter, or -1 if none does. A binary search: the
     * runs are disjoint and ascending, and a cut after scattered changes has thousands of them,
     * which a restore of 32,768 shards asked one by one in a linear scan (seconds).
     */
    long filterHolder(int shard) {
        int low = 0;
        int high = filterHolders.size() - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            FilterRun run = filterHolders.get(mid);
            if (shard < run.from()) {
                high = mid - 1;
            } else if (shard >= run.to()) {
                low = mid + 1;
            } else {
                return run.holder();
            }
        }
        return -1;
    }

    byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeLong(id);
            out.writeInt(storeId);
            out.writeLong(createdAtMillis);
            out.writeLong(sizeBytes);
            out.writeInt(fileCount);
            out.writeInt(filterHolders.size());
            for (FilterRun run : filterHolders) {
                out.writeInt(run.from());
                out.writeInt(run.to());
                out.writeLong(run.holder());
            }
            out.writeBoolean(lineage != null);
            if (lineage != null) {
                out.writeUTF(lineage);
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return bytes.toByteArray();
    }

    static StoreCut read(Path cutDir) throws IOException {
        Path file = cutDir.resolve(FILE_NAME);
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            int version = in.readInt() == MAGIC ? in.readInt() : -1;
            if (version != 1 && version != VERSION) {
                throw new IOException("not a Taishan cut record: " + file);
            }
            long id = in.readLong();
            int storeId = in.readInt();
            long created = in.readLong();
            long size = in.readLong();
            int files = in.readInt();
            int runs = in.readInt();
            List<FilterRun> holders = new ArrayList<>(runs);
            for (int i = 0; i < runs; i++) {
                holders.add(new FilterRun(in.readInt(), in.readInt(), in.readLong()));
            }
            String lineage = version >= 2 && in.readBoolean() ? in.readUTF() : null;
            return new StoreCut(id, storeId, created, size, files, List.copyOf(holders), lineage);
        } catch (IOException e) {
            throw new IOException("corrupt cut record " + file + ": " + e.getMessage(), e);
        }
    }

    /** Builds runs from (shard ascending, holder) pairs. */
    static final class FilterRunsBuilder {
        private final List<FilterRun> runs = new ArrayList<>();
        private int from = -1;
        private int to;
        private long holder;

        void add(int shard, long holderCut) {
            if (from >= 0 && shard == to && holderCut == holder) {
                to++;
                return;
            }
            flush();
            from = shard;
            to = shard + 1;
            holder = holderCut;
        }

        private void flush() {
            if (from >= 0) {
                runs.add(new FilterRun(from, to, holder));
            }
        }

        List<FilterRun> build() {
            flush();
            from = -1;
            return List.copyOf(runs);
        }
    }
}
