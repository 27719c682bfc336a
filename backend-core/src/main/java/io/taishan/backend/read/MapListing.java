package io.taishan.backend.read;

import io.taishan.kv.client.KvEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;

/**
 * Every entry of one small map as one cached value, so that iterating the map, asking whether it is
 * empty, or getting a user key it does not hold costs no round trip. A SQL join iterates the other
 * side's map of its key for every record, and most such maps hold a few rows or none: without a
 * listing each of those iterations is a {@code Scan}.
 *
 * <p><b>Format.</b> {@code [varint n]} then, sorted by the unsigned bytes of the user key (the
 * order a scan returns), {@code n} times {@code [varint key length][user key][varint value
 * length][value]}; the user key is the store key without the map's prefix. An empty map is the
 * single byte {@code 0}, so a listing is never empty bytes.
 *
 * <p><b>Bounds.</b> At most {@link #MAX_ENTRIES} entries and {@link #MAX_BYTES} bytes: a listing is
 * rewritten as a whole by every write to its map (decoded, changed, encoded: a few hundred
 * nanoseconds at the bound), and copied on every cache hit, so larger maps are not listed and are
 * iterated from the server as before.
 *
 * <p>Where the listing lives and when it is kept exact is {@link ReadCache}'s doc.
 */
final class MapListing {
    static final int MAX_ENTRIES = 16;
    static final int MAX_BYTES = 2048;

    /** The cache key of a map's listing in the map's generation: no store key is one byte long. */
    static final byte[] KEY = {(byte) 0x81};

    static final byte[] EMPTY = {0};

    private MapListing() {}

    /**
     * The listing of {@code entries}, all under the same {@code prefixLength}-byte prefix and
     * sorted, or null when they are past the bounds.
     */
    @Nullable
    static byte[] encode(List<KvEntry> entries, int prefixLength) {
        if (entries.size() > MAX_ENTRIES) {
            return null;
        }
        int size = varintSize(entries.size());
        for (KvEntry e : entries) {
            int keyLength = e.key().length - prefixLength;
            size += varintSize(keyLength) + keyLength;
            size += varintSize(e.value().length) + e.value().length;
            if (size > MAX_BYTES) {
                return null;
            }
        }
        byte[] out = new byte[size];
        int at = writeVarint(out, 0, entries.size());
        for (KvEntry e : entries) {
            int keyLength = e.key().length - prefixLength;
            at = writeVarint(out, at, keyLength);
            System.arraycopy(e.key(), prefixLength, out, at, keyLength);
            at += keyLength;
            at = writeVarint(out, at, e.value().length);
            System.arraycopy(e.value(), 0, out, at, e.value().length);
            at += e.value().length;
        }
        return out;
    }

    /** The entries of {@code listing}, with their full store keys under {@code prefix}. */
    static List<KvEntry> decode(byte[] listing, byte[] prefix) {
        int[] at = {0};
        int n = readVarint(listing, at);
        List<KvEntry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int keyLength = readVarint(listing, at);
            byte[] key = Arrays.copyOf(prefix, prefix.length + keyLength);
            System.arraycopy(listing, at[0], key, prefix.length, keyLength);
            at[0] += keyLength;
            int valueLength = readVarint(listing, at);
            byte[] value = Arrays.copyOfRange(listing, at[0], at[0] + valueLength);
            at[0] += valueLength;
            entries.add(new KvEntry(key, value));
        }
        return entries;
    }

    /** The value of store key {@code key} in {@code listing}, or null when the map lacks it. */
    @Nullable
    static byte[] find(byte[] listing, byte[] key, int prefixLength) {
        int[] at = {0};
        int n = readVarint(listing, at);
        for (int i = 0; i < n; i++) {
            int keyLength = readVarint(listing, at);
            int keyAt = at[0];
            at[0] += keyLength;
            int valueLength = readVarint(listing, at);
            int order =
                    Arrays.compareUnsigned(
                            listing, keyAt, keyAt + keyLength, key, prefixLength, key.length);
            if (order == 0) {
                return Arrays.copyOfRange(listing, at[0], at[0] + valueLength);
            }
            if (order > 0) {
                return null;
            }
            at[0] += valueLength;
        }
        return null;
    }

    /**
     * Applies a put of {@code value} (null: a delete) under store key {@code key} to {@code
     * entries}, a decoded listing in key order.
     */
    static void apply(List<KvEntry> entries, byte[] key, @Nullable byte[] value) {
        int i = 0;
        int order = 1;
        while (i < entries.size()
                && (order = Arrays.compareUnsigned(entries.get(i).key(), key)) < 0) {
            i++;
        }
        boolean present = i < entries.size() && order == 0;
        if (value == null) {
            if (present) {
                entries.remove(i);
            }
        } else if (present) {
            entries.set(i, new KvEntry(key, value));
        } else {
            entries.add(i, new KvEntry(key, value));
        }
    }

    private static int varintSize(int v) {
        int size = 1;
        while ((v >>>= 7) != 0) {
            size++;
        }
        return size;
    }

    private static int writeVarint(byte[] out, int at, int v) {
        while ((v & ~0x7F) != 0) {
            out[at++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        out[at++] = (byte) v;
        return at;
    }

    private static int readVarint(byte[] in, int[] at) {
        int v = 0;
        for (int shift = 0; ; shift += 7) {
            byte b = in[at[0]++];
            v |= (b & 0x7F) << shift;
            if (b >= 0) {
                return v;
            }
        }
    }
}
