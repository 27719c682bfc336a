package io.taishan.backend.read;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * The map prefix filter grows with the maps it is told of and never forgets one: a "no" is what
 * lets an iteration skip its scan, so a false "no" would lose a map's entries.
 */
class MapPrefixFilterTest {
    private static byte[] entryKey(long map, int userKey) {
        return ByteBuffer.allocate(12).putLong(map).putInt(userKey).array();
    }

    private static byte[] prefix(long map) {
        return ByteBuffer.allocate(8).putLong(map).array();
    }

    @Test
    void growsPastItsFirstCapacityWithoutForgettingAMapAndKeepsFalsePositivesRare() {
        int maps = 200_000;
        try (MapPrefixFilter filter = new MapPrefixFilter(1024)) {
            long firsts = 0;
            for (long m = 0; m < maps; m++) {
                firsts += filter.inserted(entryKey(m, 1), 8) ? 1 : 0;
                assertThat(filter.inserted(entryKey(m, 2), 8))
                        .as("a second entry of the same map is not its first")
                        .isFalse();
            }
            assertThat(firsts)
                    .as("first entries taken for a known map")
                    .isGreaterThan(maps * 98L / 100);
            for (long m = 0; m < maps; m++) {
                assertThat(filter.mightContain(prefix(m))).as("map %d", m).isTrue();
            }
            long falsePositives = 0;
            for (long m = maps; m < 2L * maps; m++) {
                falsePositives += filter.mightContain(prefix(m)) ? 1 : 0;
            }
            assertThat(falsePositives)
                    .as("maps never written answered maybe (at most twice the first filter's 1%)")
                    .isLessThan(maps * 2L / 100);
            assertThat(filter.filterCount()).as("grew from 1,024 maps").isGreaterThan(5);
            assertThat(filter.offHeapBytes()).isLessThan(maps * 4L);
        }
    }

    @Test
    void holdsNoFilterBeforeItsFirstMap() {
        try (MapPrefixFilter filter = new MapPrefixFilter(1024)) {
            assertThat(filter.mightContain(prefix(1))).isFalse();
            assertThat(filter.offHeapBytes()).isZero();
            assertThat(filter.inserted(entryKey(1, 1), 8)).isTrue();
            assertThat(filter.filterCount()).isEqualTo(1);
            assertThat(filter.mightContain(prefix(1))).isTrue();
        }
    }

    @Test
    void aClosedFilterAnswersMaybe() {
        MapPrefixFilter filter = new MapPrefixFilter(1024);
        filter.close();
        assertThat(filter.mightContain(prefix(1))).isTrue();
        assertThat(filter.inserted(entryKey(1, 1), 8)).isFalse();
    }
}
