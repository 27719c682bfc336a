package io.taishan.backend.write;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.backend.write.PendingWrites.Effect;
import io.taishan.backend.write.PendingWrites.Lookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The pending-write index against a model: puts, deletes, appends, range deletes, range queries and
 * acknowledgements of whole segments in random order; every point lookup and every range query must
 * equal what the model says the unacknowledged writes do. Point writes that are acknowledged before
 * any range query needs them never enter the sorted index.
 */
class PendingWritesTest {

    @Test
    void pointWritesAcknowledgedBeforeAnyRangeQueryNeverEnterTheSortedIndex() {
        PendingWrites pending = new PendingWrites();
        for (long segment = 0; segment < 50; segment++) {
            List<PendingWrites.Entry> entries = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                entries.add(pending.put(key((int) (segment * 1_000 + i)), value(i), segment));
            }
            assertThat(pending.lookup(key((int) (segment * 1_000))).effect())
                    .isEqualTo(Effect.VALUE);
            assertThat(pending.sortedSize()).as("sorted entries, %d pending", 1_000).isZero();
            pending.acknowledged(segment, entries);
        }
        assertThat(pending.size()).isZero();
        assertThat(pending.sortedSize()).isZero();

        pending.put(key(7), value(7), 50);
        pending.put(key(3), value(3), 50);
        assertThat(pending.entries(key(0), new byte[0]).keySet()).containsExactly(key(3), key(7));
        assertThat(pending.sortedSize()).isEqualTo(2);
    }

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4})
    void everyLookupAndRangeQueryMatchesTheModel(long seed) {
        Random random = new Random(seed);
        PendingWrites pending = new PendingWrites();
        // The model: what the server holds (acknowledged segments applied), and each segment's ops.
        TreeMap<String, String> server = new TreeMap<>();
        List<List<Object[]>> segments = new ArrayList<>();
        List<List<PendingWrites.Entry>> segmentEntries = new ArrayList<>();
        int acknowledged = -1;
        int segment = 0;
        segments.add(new ArrayList<>());
        segmentEntries.add(new ArrayList<>());
        for (int op = 0; op < 20_000; op++) {
            int choice = random.nextInt(100);
            byte[] key = key(random.nextInt(300));
            List<Object[]> ops = segments.get(segment);
            List<PendingWrites.Entry> entries = segmentEntries.get(segment);
            if (choice < 40) {
                byte[] value = value(random.nextInt(1000));
                entries.add(pending.put(key, value, segment));
                ops.add(new Object[] {"put", name(key), str(value)});
            } else if (choice < 50) {
                entries.add(pending.delete(key, segment));
                ops.add(new Object[] {"delete", name(key)});
            } else if (choice < 60) {
                byte[] operand = value(random.nextInt(1000));
                entries.add(pending.append(key, operand, segment));
                ops.add(new Object[] {"append", name(key), str(operand)});
            } else if (choice < 62) {
                int from = random.nextInt(300);
                byte[] begin = key(from);
                byte[] end =
                        random.nextInt(4) == 0 ? new byte[0] : key(from + 1 + random.nextInt(40));
                pending.deleteRange(begin, end, segment);
                ops.add(new Object[] {"range", name(begin), end.length == 0 ? null : name(end)});
            } else if (choice < 70) {
                segment++;
                segments.add(new ArrayList<>());
                segmentEntries.add(new ArrayList<>());
            } else if (choice < 78 && acknowledged < segment - 1) {
                acknowledged++;
                pending.acknowledged(acknowledged, segmentEntries.get(acknowledged));
                for (Object[] o : segments.get(acknowledged)) {
                    apply(o, server);
                }
            } else if (choice < 90) {
                TreeMap<String, String> current = current(server, segments, acknowledged);
                assertThat(effective(pending.lookup(key), server.get(name(key))))
                        .as("lookup of %s after op %d", name(key), op)
                        .isEqualTo(current.get(name(key)));
            } else {
                int from = random.nextInt(300);
                byte[] start = key(from);
                byte[] end = key(from + random.nextInt(60));
                TreeMap<String, String> current = current(server, segments, acknowledged);
                Map<String, PendingWrites.Entry> inRange = new HashMap<>();
                for (PendingWrites.Entry entry : pending.entries(start, end).values()) {
                    inRange.put(name(entry.key()), entry);
                }
                for (int k = from; k < from + 60; k++) {
                    String name = name(key(k));
                    if (name.compareTo(name(end)) >= 0) {
                        break;
                    }
                    PendingWrites.Entry entry = inRange.get(name);
                    String got =
                            entry != null
                                    ? str(entry.applyTo(bytes(server.get(name))))
                                    : pending.coveredByRange(key(k)) ? null : server.get(name);
                    assertThat(got)
                            .as("range query, key %s, after op %d", name, op)
                            .isEqualTo(current.get(name));
                }
            }
        }
        assertThat(pending.sortedSize()).isLessThanOrEqualTo(pending.size());
    }

    private static TreeMap<String, String> current(
            TreeMap<String, String> server, List<List<Object[]>> segments, int acknowledged) {
        TreeMap<String, String> state = new TreeMap<>(server);
        for (int s = acknowledged + 1; s < segments.size(); s++) {
            for (Object[] op : segments.get(s)) {
                apply(op, state);
            }
        }
        return state;
    }

    private static void apply(Object[] op, TreeMap<String, String> state) {
        String k = (String) op[1];
        switch ((String) op[0]) {
            case "put" -> state.put(k, (String) op[2]);
            case "delete" -> state.remove(k);
            case "append" -> state.merge(k, (String) op[2], (a, b) -> a + "," + b);
            case "range" -> {
                String end = (String) op[2];
                (end == null ? state.tailMap(k, true) : state.subMap(k, true, end, false)).clear();
            }
            default -> throw new IllegalStateException((String) op[0]);
        }
    }

    /** The key's value as a read sees it: the lookup applied to the server's value. */
    private static String effective(Lookup lookup, String serverValue) {
        return switch (lookup.effect()) {
            case NONE -> serverValue;
            case VALUE -> str(lookup.bytes());
            case ABSENT -> null;
            case APPENDS ->
                    serverValue == null
                            ? str(lookup.bytes())
                            : serverValue + "," + str(lookup.bytes());
        };
    }

    private static byte[] bytes(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] key(int i) {
        return String.format("k%05d", i).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int i) {
        return ("v" + i).getBytes(StandardCharsets.UTF_8);
    }

    private static String name(byte[] key) {
        return new String(key, StandardCharsets.UTF_8);
    }

    private static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
