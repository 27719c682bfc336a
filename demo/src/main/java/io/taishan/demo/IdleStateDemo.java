package io.taishan.demo;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.ScanPage;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.FileUtils;

/**
 * The idle-state demo ({@code bin/taishan-demo-idle-state}, issue 8): a Flink SQL {@code GROUP BY}
 * with {@code table.exec.state.ttl} on Taishan, over an embedded kv-server that sweeps expired
 * entries every second. All {@value #KEYS} users are active for a while, then only {@value
 * #ACTIVE_KEYS} keep arriving; every second the story prints how many entries the store holds,
 * rising while the keys are active and falling back to what the active keys need once the others
 * have been quiet for a TTL, with no reads of them. Exit 0 when that is what happened.
 *
 * <p>The entries are counted inside the server, by a read-only scan of each shard's live data under
 * its owner's lease (as an operator's tool in the server process would), so the running job is
 * neither fenced nor checkpointed to count them.
 */
public final class IdleStateDemo {
    private static final String FACTORY = "io.taishan.backend.TaishanStateBackendFactory";
    private static final int KEYS = 20_000;
    private static final int ACTIVE_KEYS = 500;
    private static final Duration TTL = Duration.ofSeconds(4);
    private static final long BUSY_MILLIS = 7_000;
    private static final long QUIET_MILLIS = 11_000;
    private static final double BUSY_RATE = 8_000;
    private static final double QUIET_RATE = 1_000;
    private static final String QUERY =
            "SELECT user_id, COUNT(*) AS clicks, SUM(amount) AS total FROM clicks GROUP BY user_id";

    private IdleStateDemo() {}

    public static void main(String[] args) {
        Story.runAndExit(IdleStateDemo::run);
    }

    private static void run() throws Exception {
        Path dataDir = Files.createTempDirectory("taishan-idle-demo");
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .dataDir(dataDir)
                                .ttlSweepInterval(Duration.ofSeconds(1))
                                .build())) {
            Story.say(
                    "Taishan idle-state demo: Flink SQL with table.exec.state.ttl on a kv-server");
            Story.say(
                    "  kv-server  embedded, gRPC on %s, sweeps expired state every 1 s",
                    server.address());
            Story.say("  query      %s", QUERY);
            Story.say("             table.exec.state.ttl: %d s", TTL.toSeconds());
            Story.say(
                    "  input      %,d users click (each at least once, for at least %d s, %,.0f"
                            + " clicks/s), then only %,d of them for %d s",
                    KEYS, BUSY_MILLIS / 1000, BUSY_RATE, ACTIVE_KEYS, QUIET_MILLIS / 1000);
            Story.say("");

            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(1, configuration(server));
            StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            tEnv.getConfig().set("table.exec.state.ttl", TTL.toMillis() + " ms");
            @SuppressWarnings("deprecation")
            DataStream<Row> clicks =
                    env.addSource(new Clicks())
                            .name("clicks")
                            .returns(
                                    Types.ROW_NAMED(
                                            new String[] {"user_id", "amount"},
                                            Types.LONG,
                                            Types.LONG));
            tEnv.createTemporaryView("clicks", clicks);
            tEnv.toChangelogStream(tEnv.sqlQuery(QUERY)).sinkTo(new DiscardingSink<>());
            JobClient job = env.executeAsync("idle-state demo");
            CompletableFuture<?> done = job.getJobExecutionResult();

            long peak = 0;
            long last = -1;
            long expired = 0;
            long t0 = System.nanoTime();
            while (!done.isDone()) {
                Thread.sleep(1000 - (Story.millisSince(t0) % 1000));
                long[] store = count(server.storage());
                double seconds = Story.millisSince(t0) / 1000.0;
                String input = Clicks.phase();
                if (done.isDone()) {
                    break;
                }
                peak = Math.max(peak, store[0]);
                last = store[0];
                expired = store[1];
                Story.say(
                        "  t=%4.1f s  store: %,7d live entries  %s  (%,d expired by the server so"
                                + " far)  %s",
                        seconds, store[0], bar(store[0]), store[1], input);
            }
            done.get(30, TimeUnit.SECONDS);
            Story.say("");
            Story.say(
                    "Peak: %,d entries (one per user); at the end: %,d for %,d active users;"
                            + " %,d entries expired and deleted by the kv-server, none of them read"
                            + " by the job.",
                    peak, last, ACTIVE_KEYS, expired);
            if (peak < KEYS * 9L / 10) {
                throw new DemoFailure("the store never held the active users' state: peak " + peak);
            }
            if (last > ACTIVE_KEYS * 11L / 10 || last < ACTIVE_KEYS * 9L / 10) {
                throw new DemoFailure(
                        "the store did not fall back to the "
                                + ACTIVE_KEYS
                                + " active users' entries: "
                                + last);
            }
            Story.say(
                    "Check: live entries rose to the %,d users and fell back to the %,d still"
                            + " active - OK",
                    KEYS, ACTIVE_KEYS);
        } finally {
            FileUtils.deleteDirectoryQuietly(dataDir.toFile());
        }
    }

    private static Configuration configuration(EmbeddedKvServer server) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, FACTORY);
        config.setString("taishan.kv.address", server.address());
        // The TTL clock the server expires by; reported more often than the default 5 s here.
        config.setString("taishan.ttl.clock-report-interval", "500ms");
        config.set(PipelineOptions.MAX_PARALLELISM, 32);
        config.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        config.set(RestOptions.BIND_PORT, "0");
        return config;
    }

    private static String bar(long entries) {
        int width = (int) Math.min(30, Math.round(30.0 * entries / KEYS));
        return "[" + "#".repeat(width) + " ".repeat(30 - width) + "]";
    }

    /** Live entries of every table, and entries expired so far, counted inside the server. */
    private static long[] count(StorageEngine engine) {
        long live = 0;
        long expired = 0;
        byte[] empty = new byte[0];
        for (TableMeta meta : engine.tables()) {
            TableStore table = engine.tableStore(meta.name());
            expired += table.expiredEntries();
            for (int s : table.existingShards()) {
                Shard shard = table.shard(s);
                long epoch = shard.epoch();
                if (epoch == 0) {
                    continue;
                }
                byte[] from = empty;
                try {
                    while (true) {
                        ScanPage page = shard.scan(epoch, from, empty, empty, 4096, 4 << 20, true);
                        live += page.entries().size();
                        if (!page.hasMore()) {
                            break;
                        }
                        from = page.nextStartKey();
                    }
                } catch (KvServerException e) {
                    // The owner changed mid-count; the next second counts again.
                }
            }
        }
        return new long[] {live, expired};
    }

    /**
     * Every user once (however long that takes on a loaded machine), then all users at random until
     * the busy time is over, then only the first few; paced, and user ids scattered over key
     * groups.
     */
    @SuppressWarnings("deprecation")
    static final class Clicks implements SourceFunction<Row> {
        private static final long serialVersionUID = 1L;
        private static volatile long busySinceNanos;
        private static volatile long quietSinceNanos;
        private static volatile boolean ended;
        private volatile boolean running = true;

        static String phase() {
            if (ended) {
                return "input ended";
            }
            if (quietSinceNanos != 0) {
                return String.format(
                        "%,d users active, %,d quiet for %.0f s",
                        ACTIVE_KEYS,
                        KEYS - ACTIVE_KEYS,
                        (System.nanoTime() - quietSinceNanos) / 1e9);
            }
            return busySinceNanos == 0 ? "job starting" : String.format("%,d users active", KEYS);
        }

        @Override
        public void run(SourceContext<Row> ctx) {
            java.util.SplittableRandom random = new java.util.SplittableRandom(8);
            long start = System.nanoTime();
            busySinceNanos = start;
            long busyEnd = start + BUSY_MILLIS * 1_000_000;
            long n = 0;
            for (; running && (n < KEYS || System.nanoTime() < busyEnd); n++) {
                long user = n < KEYS ? n : random.nextInt(KEYS);
                emit(ctx, user, n, start + (long) ((n + 1) * 1e9 / BUSY_RATE));
            }
            long quiet = System.nanoTime();
            quietSinceNanos = quiet;
            long quietEnd = quiet + QUIET_MILLIS * 1_000_000;
            for (long i = 0; running && System.nanoTime() < quietEnd; i++, n++) {
                emit(
                        ctx,
                        random.nextInt(ACTIVE_KEYS),
                        n,
                        quiet + (long) ((i + 1) * 1e9 / QUIET_RATE));
            }
            ended = true;
        }

        private static void emit(SourceContext<Row> ctx, long user, long n, long dueNanos) {
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(Row.of(user, 1 + (n % 100)));
            }
            long wait = dueNanos - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
