package io.taishan.kv.protocol;

import java.util.Arrays;

/**
 * A key range in unsigned byte order: {@code [start, end)}, where an empty start means the first
 * key and an empty end means past the last key.
 */
public final class ScanRange {
    private static final byte[] EMPTY = new byte[0];
    private static final ScanRange ALL = new ScanRange(EMPTY, EMPTY);

    private final byte[] start;
    private final byte[] end;

    private ScanRange(byte[] start, byte[] end) {
        this.start = start;
        this.end = end;
    }

    public static ScanRange all() {
        return ALL;
    }

    public static ScanRange between(byte[] startInclusive, byte[] endExclusive) {
        return new ScanRange(startInclusive.clone(), endExclusive.clone());
    }

    /** Every key that starts with {@code prefix}. */
    public static ScanRange prefix(byte[] prefix) {
        if (prefix.length == 0) {
            return ALL;
        }
        return new ScanRange(prefix.clone(), prefixSuccessor(prefix));
    }

    /**
     * The smallest key greater than every key starting with {@code prefix}, or empty (unbounded)
     * when the prefix is all 0xFF bytes.
     */
    public static byte[] prefixSuccessor(byte[] prefix) {
        for (int i = prefix.length - 1; i >= 0; i--) {
            if (prefix[i] != (byte) 0xFF) {
                byte[] next = Arrays.copyOf(prefix, i + 1);
                next[i]++;
                return next;
            }
        }
        return EMPTY;
    }

    public byte[] start() {
        return start.clone();
    }

    public byte[] end() {
        return end.clone();
    }

    @Override
    public String toString() {
        return "ScanRange[" + hex(start) + ", " + (end.length == 0 ? "end" : hex(end)) + ")";
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(Character.forDigit((b >> 4) & 0xF, 16))
                    .append(Character.forDigit(b & 0xF, 16));
        }
        return sb.toString();
    }
}
