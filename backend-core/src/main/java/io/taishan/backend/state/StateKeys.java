package io.taishan.backend.state;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The store key of a state entry: {@code [state id, 4 bytes][Flink's RocksDB key bytes]}, where the
 * RocksDB bytes start with the key-group prefix. Dropping the first four bytes gives exactly what
 * RocksDB would store, so a canonical savepoint is a byte copy.
 *
 * <p>The state id is derived from the state name alone (SHA-256, first four bytes, top bit
 * cleared), so every subtask, every restore and every rescale agrees on it without coordination.
 * The top bit is kept clear so that {@link #END_OF_ALL_STATES} is above every key.
 */
public final class StateKeys {
    public static final int STATE_ID_BYTES = 4;

    /** Greater than every store key: no state id starts with a byte above 0x7F. */
    public static final byte[] END_OF_ALL_STATES = {(byte) 0x80};

    /** Not above any store key. */
    public static final byte[] START_OF_ALL_STATES = {0};

    private StateKeys() {}

    public static int stateId(String stateName) {
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256")
                            .digest(stateName.getBytes(StandardCharsets.UTF_8));
            int id =
                    ((digest[0] & 0xFF) << 24)
                            | ((digest[1] & 0xFF) << 16)
                            | ((digest[2] & 0xFF) << 8)
                            | (digest[3] & 0xFF);
            return id & 0x7FFF_FFFF;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available", e);
        }
    }

    public static byte[] stateIdBytes(int stateId) {
        return new byte[] {
            (byte) (stateId >>> 24), (byte) (stateId >>> 16), (byte) (stateId >>> 8), (byte) stateId
        };
    }

    /** {@code [state id][rocksKey]} */
    public static byte[] storeKey(byte[] stateIdBytes, byte[] rocksKey) {
        byte[] key = new byte[STATE_ID_BYTES + rocksKey.length];
        System.arraycopy(stateIdBytes, 0, key, 0, STATE_ID_BYTES);
        System.arraycopy(rocksKey, 0, key, STATE_ID_BYTES, rocksKey.length);
        return key;
    }

    /** {@code [state id][key group prefix]}: where one state's entries in one key group start. */
    public static byte[] keyGroupPrefix(
            byte[] stateIdBytes, int keyGroup, int keyGroupPrefixBytes) {
        byte[] prefix = new byte[STATE_ID_BYTES + keyGroupPrefixBytes];
        System.arraycopy(stateIdBytes, 0, prefix, 0, STATE_ID_BYTES);
        for (int i = 0; i < keyGroupPrefixBytes; i++) {
            prefix[STATE_ID_BYTES + i] =
                    (byte) (keyGroup >>> ((keyGroupPrefixBytes - i - 1) * Byte.SIZE));
        }
        return prefix;
    }
}
