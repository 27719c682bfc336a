package io.taishan.demo;

import java.util.Locale;

/** The demo's account of what happens, on stdout; Flink's and gRPC's logs go to stderr. */
final class Story {
    private Story() {}

    static void say(String format, Object... args) {
        System.out.println(String.format(Locale.ROOT, format, args));
        System.out.flush();
    }

    static String bytes(long bytes) {
        if (bytes < 10 * 1024) {
            return String.format(Locale.ROOT, "%,d B", bytes);
        }
        if (bytes < 10 * 1024 * 1024) {
            return String.format(Locale.ROOT, "%,d KiB", bytes / 1024);
        }
        return String.format(Locale.ROOT, "%,d MiB", bytes / (1024 * 1024));
    }

    static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
