package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class KeyHashTest {

    /**
     * XXH3_64bits with seed 0, from the xxHash project's own sanity check (cli/xsum_sanity_check.c,
     * XSUM_XXH3_testdata): {length, expected hash} of the first {@code length} bytes of its
     * generated test buffer. Each length exercises another code path (1-3, 4-8, 9-16, 17-128,
     * 129-240, and the long-input loop with partial stripes and blocks).
     */
    private static final long[][] XXH3_SEED0 = {
        {0, 0x2D06800538D394C2L},
        {1, 0xC44BDFF4074EECDBL},
        {6, 0x27B56A84CD2D7325L},
        {12, 0xA713DAF0DFBB77E7L},
        {24, 0xA3FE70BF9D3510EBL},
        {48, 0x397DA259ECBA1F11L},
        {80, 0xBCDEFBBB2C47C90AL},
        {195, 0xCD94217EE362EC3AL},
        {403, 0xCDEB804D65C6DEA4L},
        {512, 0x617E49599013CB6BL},
        {2048, 0xDD59E2C3A5F038E0L},
        {2099, 0xC6B9D9B3FC9AC765L},
        {2240, 0x6E73A90539CF2948L},
        {2367, 0xCB37AEB9E5D361EDL},
    };

    /** XSUM_fillTestBuffer: byte i is the top byte of PRIME32 · PRIME64^i (mod 2^64). */
    private static byte[] sanityBuffer(int length) {
        byte[] buffer = new byte[length];
        long byteGen = 2654435761L;
        for (int i = 0; i < length; i++) {
            buffer[i] = (byte) (byteGen >>> 56);
            byteGen *= 0x9E3779B185EBCA8DL; // the sanity check's PRIME64, 11400714785074694797
        }
        return buffer;
    }

    @Test
    void matchesThePublishedXxh3TestVectors() {
        byte[] buffer = sanityBuffer(2367);
        for (long[] vector : XXH3_SEED0) {
            int length = (int) vector[0];
            assertThat(KeyHash.hash(Arrays.copyOf(buffer, length)))
                    .as("XXH3-64 of the first %d bytes", length)
                    .isEqualTo(vector[1]);
            assertThat(KeyHash.hash(buffer, 0, length)).isEqualTo(vector[1]);
        }
    }

    @Test
    void aRangeHashesLikeACopyOfIt() {
        byte[] buffer = sanityBuffer(300);
        for (int offset : new int[] {0, 1, 7, 64, 151}) {
            for (int length : new int[] {0, 1, 3, 8, 16, 17, 33, 100, 129}) {
                byte[] copy = Arrays.copyOfRange(buffer, offset, offset + length);
                assertThat(KeyHash.hash(buffer, offset, length))
                        .as("offset %d length %d", offset, length)
                        .isEqualTo(KeyHash.hash(copy));
            }
        }
    }

    /**
     * Pinned so a change of the function (or of the library's implementation of it) fails here, not
     * as false negatives between a client and a server of different builds.
     */
    @Test
    void pinnedStoreKeyShapedVector() {
        byte[] key = "\u0000\u0007state-id|user-42|namespace".getBytes(StandardCharsets.UTF_8);
        assertThat(KeyHash.hash(key)).isEqualTo(0x59D762556A0E68DDL);
    }

    @Test
    void rangeOutsideTheArrayIsRejected() {
        byte[] key = new byte[8];
        assertThatThrownBy(() -> KeyHash.hash(key, 4, 5))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> KeyHash.hash(key, -1, 2))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }
}
