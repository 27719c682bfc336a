package io.taishan.kv.server.durable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;

/** Cut-like directories of files with random bytes, and what the tests compare them by. */
final class Cuts {
    private Cuts() {}

    /** Options for tests: quick retries, the given timeout. */
    static DurableOptions options(Duration timeout) {
        return new DurableOptions(true, null, Map.of(), null, 4, 3, Duration.ofMillis(10), timeout);
    }

    /** Writes {@code name -> size} files of random bytes into {@code dir} (created). */
    static List<String> write(Path dir, long seed, Map<String, Integer> sizes) throws IOException {
        Files.createDirectories(dir);
        Random random = new Random(seed);
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, Integer> file : sizes.entrySet()) {
            byte[] bytes = new byte[file.getValue()];
            random.nextBytes(bytes);
            Files.write(dir.resolve(file.getKey()), bytes);
            names.add(file.getKey());
        }
        return names;
    }

    /** A checkpoint's usual mix: three SSTs, MANIFEST, CURRENT, OPTIONS and a server record. */
    static List<String> typical(Path dir, long seed) throws IOException {
        Map<String, Integer> sizes = new TreeMap<>();
        sizes.put("000010.sst", 300_000);
        sizes.put("000011.sst", 70_000);
        sizes.put("000012.sst", 0);
        sizes.put("MANIFEST-000009", 1_234);
        sizes.put("CURRENT", 16);
        sizes.put("OPTIONS-000007", 7_000);
        sizes.put("TAISHAN-CUT", 60);
        return write(dir, seed, sizes);
    }

    /** Name to bytes of every regular file directly in {@code dir}. */
    static Map<String, byte[]> contents(Path dir) throws IOException {
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(dir)) {
            for (Path file : list.toList()) {
                if (Files.isRegularFile(file)) {
                    files.put(file.getFileName().toString(), Files.readAllBytes(file));
                }
            }
        }
        return files;
    }

    /** The names in {@code dir}, sorted (empty if it does not exist). */
    static List<String> names(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
