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

    /** One run of a demo: "Demo OK" and exit 0, or "DEMO FAILED" with why and exit 1. */
    interface Demo {
        void run() throws Exception;
    }

    static void runAndExit(Demo demo) {
        long start = System.nanoTime();
        int exitCode;
        try {
            demo.run();
            say("Demo OK in %.1f s.", millisSince(start) / 1000.0);
            exitCode = 0;
        } catch (DemoFailure e) {
            System.err.println("DEMO FAILED: " + e.getMessage());
            exitCode = 1;
        } catch (Throwable t) {
            System.err.println("DEMO FAILED: " + t);
            t.printStackTrace();
            exitCode = 1;
        }
        System.out.flush();
        // Flink and gRPC leave non-daemon threads behind; the verdict is in.
        System.exit(exitCode);
    }
}
