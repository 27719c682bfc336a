package io.taishan.bloom;

import net.openhft.hashing.LongHashFunction;

/**
 * The 64-bit hash of a store key that every Bloom filter in Taishan is fed with: XXH3-64 with seed
 * 0, as specified by the xxHash project (<a
 * href="https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md">xxhash_spec.md</a>),
 * computed by OpenHFT's zero-allocation-hashing.
 *
 * <p>The kv-server and the Flink backend build and exchange filters, so both must hash a key to the
 * same bits on every JVM, operating system and byte order: XXH3 is defined on bytes, and the
 * library reads them in little-endian order on any platform. {@code KeyHashTest} pins the published
 * test vectors of the xxHash project ({@code cli/xsum_sanity_check.c}), so a library upgrade that
 * changed a single bit fails the build instead of silently producing false negatives for filters
 * written by the previous version. Changing the function is a change of {@link BloomFilter}'s
 * serialized format version.
 *
 * <p>Cost: no allocation; 6 to 22 ns for 19 to 100 byte keys on the project's shared 2-vCPU machine
 * (see the module README).
 *
 * <p>Direct {@code ByteBuffer}s are not accepted: the library reaches their address through {@code
 * sun.nio.ch.DirectBuffer}, which Java 17 does not export without {@code --add-exports}.
 */
public final class KeyHash {

    private static final LongHashFunction XXH3 = LongHashFunction.xx3();

    private KeyHash() {}

    /** The hash of the whole array. */
    public static long hash(byte[] key) {
        return XXH3.hashBytes(key);
    }

    /**
     * The hash of {@code key[offset, offset + length)}; equal to the hash of a copy of that range.
     *
     * @throws IndexOutOfBoundsException if the range is not inside the array
     */
    public static long hash(byte[] key, int offset, int length) {
        return XXH3.hashBytes(key, offset, length);
    }
}
