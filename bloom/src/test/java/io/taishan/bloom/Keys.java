package io.taishan.bloom;

/** Store-key-shaped test keys: distinct ids give distinct keys, hashed as the real code would. */
final class Keys {

    private Keys() {}

    /** Key group (2 bytes), state id (4), the id as the user key (8), a namespace (5). */
    static long hash(long id) {
        byte[] key = new byte[19];
        key[0] = 0;
        key[1] = 42;
        key[2] = 0x1c;
        key[3] = 0x0f;
        key[4] = 0x33;
        key[5] = 0x07;
        for (int i = 0; i < 8; i++) {
            key[6 + i] = (byte) (id >>> (56 - 8 * i));
        }
        key[14] = 'w';
        key[15] = 'i';
        key[16] = 'n';
        key[17] = 'd';
        key[18] = 'o';
        return KeyHash.hash(key);
    }

    /** The fraction of {@code probes} ids from {@code firstId} (never inserted) that hit. */
    static double falsePositiveRate(BloomFilter filter, long firstId, int probes) {
        long hits = 0;
        for (int i = 0; i < probes; i++) {
            if (filter.mightContain(hash(firstId + i))) {
                hits++;
            }
        }
        return (double) hits / probes;
    }
}
