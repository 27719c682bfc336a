package io.taishan.benchmarks.job;

import io.taishan.benchmarks.kv.BenchKvServerMain;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.ScanPage;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;
import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * The kv-server child of the issue 8 benchmarks: a node as {@link BenchKvServerMain} starts it
 * (plus the given {@code key=value} settings, e.g. {@code ttl.sweep-interval=1s}), and a sampler
 * that writes, every {@code interval}, one CSV line of what the node holds (see {@link #HEADER}).
 *
 * <p>Live entries are counted exactly, by a read-only scan of every shard's live RocksDB inside the
 * node, under the owner's current epoch: it neither fences the job (an {@code OpenShard} through
 * the client would) nor needs a checkpoint, and it counts entries, not RocksDB's estimate (which
 * counts every overwritten version and tombstone until compaction: a GROUP BY rewrites its key's
 * accumulator on every record). It costs a sequential read of the store per sample; its CPU time is
 * written beside the expiry thread's, so the sweep's cost is not confused with it.
 */
public final class IdleStateKvServerMain {
    static final String HEADER =
            "epoch_millis,live_entries,live_bytes,expired_entries,last_sweep_millis,"
                    + "process_cpu_nanos,expiry_cpu_nanos,sampler_cpu_nanos";
    private static final String EXPIRY_THREAD = "taishan-kv-expiry";
    private static final byte[] EMPTY = new byte[0];
    private static final int PAGE_ENTRIES = 4096;
    private static final long PAGE_BYTES = 4 << 20;

    private IdleStateKvServerMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println(
                    "usage: IdleStateKvServerMain DATA_DIR SAMPLES_CSV INTERVAL_MILLIS [key=value...]");
            System.exit(2);
        }
        Path dataDir = Files.createDirectories(Path.of(args[0]));
        Path samples = Path.of(args[1]);
        long intervalMillis = Long.parseLong(args[2]);
        Properties props = new Properties();
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.setProperty(kv[0], kv[1]);
        }
        KvServerConfig config = KvServerConfig.builder().properties(props).dataDir(dataDir).build();
        try (EmbeddedKvServer server = EmbeddedKvServer.start(config)) {
            // 0: no sampler; the count reads the whole store, a run that needs no samples saves it.
            Thread sampler =
                    new Thread(
                            () -> sample(server.storage(), samples, intervalMillis),
                            "idle-state-sampler");
            sampler.setDaemon(true);
            if (intervalMillis > 0) {
                sampler.start();
            }
            System.out.println(BenchKvServerMain.ADDRESS_LINE + server.address());
            System.out.flush();
            while (System.in.read() != -1) {
                // wait for the parent to close our stdin
            }
            sampler.interrupt();
            sampler.join(5_000);
        }
    }

    private static void sample(StorageEngine engine, Path file, long intervalMillis) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            out.write(HEADER);
            out.newLine();
            out.flush();
            long next = System.currentTimeMillis();
            while (!Thread.currentThread().isInterrupted()) {
                long now = System.currentTimeMillis();
                long[] live = {0, 0};
                long expired = 0;
                long lastSweep = 0;
                for (TableMeta meta : engine.tables()) {
                    TableStore table = engine.tableStore(meta.name());
                    count(table, live);
                    expired += table.expiredEntries();
                    lastSweep = Math.max(lastSweep, table.lastSweepMillis());
                }
                out.write(
                        now
                                + ","
                                + live[0]
                                + ","
                                + live[1]
                                + ","
                                + expired
                                + ","
                                + lastSweep
                                + ","
                                + Machine.processCpuNanos()
                                + ","
                                + expiryCpuNanos(threads)
                                + ","
                                + threads.getCurrentThreadCpuTime());
                out.newLine();
                out.flush();
                next += intervalMillis;
                long sleep = next - System.currentTimeMillis();
                if (sleep > 0) {
                    Thread.sleep(sleep);
                } else {
                    // A count slower than the interval: the next starts now, not in a burst.
                    next = System.currentTimeMillis();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            e.printStackTrace();
        }
    }

    private static void count(TableStore table, long[] live) {
        for (int s : table.existingShards()) {
            Shard shard = table.shard(s);
            long epoch = shard.epoch();
            if (epoch == 0) {
                continue;
            }
            byte[] start = EMPTY;
            try {
                while (true) {
                    ScanPage page =
                            shard.scan(epoch, start, EMPTY, EMPTY, PAGE_ENTRIES, PAGE_BYTES, false);
                    for (ScanPage.Entry e : page.entries()) {
                        live[0]++;
                        live[1] += e.key().length + e.value().length;
                    }
                    if (!page.hasMore()) {
                        break;
                    }
                    start = page.nextStartKey();
                }
            } catch (KvServerException e) {
                // A new owner (epoch) or a dropped table mid-count: this shard's count is partial.
                System.err.println("sampler: " + e.getMessage());
            }
        }
    }

    private static long expiryThreadId = -1;

    private static long expiryCpuNanos(ThreadMXBean threads) {
        if (expiryThreadId < 0) {
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals(EXPIRY_THREAD)) {
                    expiryThreadId = t.getId();
                }
            }
        }
        return expiryThreadId < 0 ? 0 : Math.max(0, threads.getThreadCpuTime(expiryThreadId));
    }
}
