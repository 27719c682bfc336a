package io.taishan.kv.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ScanRangeTest {

    @Test
    void prefixSuccessorIncrementsTheLastByte() {
        assertThat(ScanRange.prefixSuccessor(bytes(1, 2, 3))).containsExactly(bytes(1, 2, 4));
        assertThat(ScanRange.prefixSuccessor(bytes(0x7F))).containsExactly(bytes(0x80));
        assertThat(ScanRange.prefixSuccessor(bytes(0x00))).containsExactly(bytes(0x01));
    }

    @Test
    void prefixSuccessorDropsTrailing0xFfAndCarries() {
        assertThat(ScanRange.prefixSuccessor(bytes(1, 0xFF))).containsExactly(bytes(2));
        assertThat(ScanRange.prefixSuccessor(bytes(1, 0xFE, 0xFF, 0xFF)))
                .containsExactly(bytes(1, 0xFF));
    }

    @Test
    void prefixOfOnly0xFfHasNoUpperBound() {
        assertThat(ScanRange.prefixSuccessor(bytes(0xFF))).isEmpty();
        assertThat(ScanRange.prefixSuccessor(bytes(0xFF, 0xFF, 0xFF))).isEmpty();
        assertThat(ScanRange.prefixSuccessor(new byte[0])).isEmpty();
    }

    @Test
    void prefixRangeCoversExactlyTheKeysWithThePrefix() {
        ScanRange range = ScanRange.prefix(bytes(5, 0xFF));
        assertThat(range.start()).containsExactly(bytes(5, 0xFF));
        assertThat(range.end()).containsExactly(bytes(6));
        assertThat(ScanRange.prefix(new byte[0])).isSameAs(ScanRange.all());
    }

    @Test
    void boundsAreCopiedIn() {
        byte[] start = bytes(1);
        byte[] end = bytes(2);
        ScanRange range = ScanRange.between(start, end);
        start[0] = 9;
        end[0] = 9;
        assertThat(range.start()).containsExactly(bytes(1));
        assertThat(range.end()).containsExactly(bytes(2));
    }

    static byte[] bytes(int... values) {
        byte[] result = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = (byte) values[i];
        }
        return result;
    }
}
