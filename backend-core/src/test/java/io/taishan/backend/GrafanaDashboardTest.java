package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.TableExistsException;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.metrics.CharacterFilter;
import org.apache.flink.metrics.LogicalScopeProvider;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.MetricType;
import org.apache.flink.runtime.metrics.groups.AbstractMetricGroup;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * Every metric that {@code docs/grafana/taishan.json} queries exists: the kv-server's in a real
 * scrape of its {@code /metrics}, the backend's in what a real Flink job's keyed backend registered
 * (through a reporter on a MiniCluster), named as Flink's Prometheus reporter names them: {@code
 * flink_} + the group's logical scope joined by {@code _} + the metric name, every character
 * outside {@code [a-zA-Z0-9:_]} replaced by {@code _}; a histogram is a summary, served as its name
 * (with {@code quantile}) and {@code <name>_count}; counters and meters are gauges of that name.
 */
class GrafanaDashboardTest {
    static final Path DASHBOARD = Path.of("..", "docs", "grafana", "taishan.json");

    private static final Pattern METRIC =
            Pattern.compile("\\b(?:taishan_kv|flink|jvm|process)_[A-Za-z0-9_:]*");
    private static final Pattern UNALLOWED = Pattern.compile("[^a-zA-Z0-9:_]");
    private static final CharacterFilter PROMETHEUS_FILTER =
            input -> UNALLOWED.matcher(input).replaceAll("_");

    @Test
    void everyMetricTheDashboardQueriesExists() throws Exception {
        Set<String> queried = queriedMetrics(DASHBOARD);
        Set<String> wantedFlink = new TreeSet<>();
        Set<String> wantedServer = new TreeSet<>();
        for (String name : queried) {
            (name.startsWith("flink_") ? wantedFlink : wantedServer).add(name);
        }
        // Not vacuous: the dashboard covers both sides.
        assertThat(wantedFlink).hasSizeGreaterThan(20);
        assertThat(wantedServer).hasSizeGreaterThan(30);

        InMemoryReporter reporter = InMemoryReporter.createWithRetainedMetrics();
        Set<String> registered;
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .metricsPort(0)
                                .metricsSampleInterval(Duration.ZERO)
                                .build())) {
            Configuration config = new Configuration();
            config.set(
                    StateBackendOptions.STATE_BACKEND, TaishanStateBackendFactory.class.getName());
            config.set(TaishanOptions.KV_ADDRESS, server.address());
            config.set(RestOptions.BIND_PORT, "0");
            reporter.addToConfiguration(config);
            try (MiniCluster cluster =
                    new MiniCluster(
                            new MiniClusterConfiguration.Builder()
                                    .setConfiguration(config)
                                    .setNumTaskManagers(1)
                                    .setNumSlotsPerTaskManager(1)
                                    .build())) {
                cluster.start();
                StreamExecutionEnvironment env =
                        StreamExecutionEnvironment.getExecutionEnvironment();
                env.setParallelism(1);
                env.setMaxParallelism(4);
                env.fromSequence(0, 199)
                        .keyBy(v -> v % 10, Types.LONG)
                        .map(new Counting())
                        .addSink(TestSinkFunction.discarding());
                cluster.executeJobBlocking(env.getStreamGraph().getJobGraph());
                // Before the cluster closes its reporters, which forgets what they saw.
                registered = flinkPrometheusNames(reporter.getMetricsByGroup());
            }
            // One refused call, so the error counter has a series.
            try (KvStore kv =
                    KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
                kv.createTable("dashboard_probe", 1);
                assertThatThrownBy(() -> kv.createTable("dashboard_probe", 1))
                        .isInstanceOf(TableExistsException.class);
            }
            Set<String> served = sampleNames(scrape(server.metricsPort()));
            assertThat(wantedServer)
                    .as("kv-server metrics the dashboard queries")
                    .isSubsetOf(served);
        }
        // The naming rule on two known metrics: a gauge, and a histogram's count.
        assertThat(registered)
                .contains(
                        "flink_taskmanager_job_task_operator_taishan_writeQueueOps",
                        "flink_taskmanager_job_task_operator_taishan_rpc_get_latencyMicros",
                        "flink_taskmanager_job_task_operator_taishan_rpc_get_latencyMicros_count");
        assertThat(wantedFlink).as("Flink metrics the dashboard queries").isSubsetOf(registered);
    }

    /** Every metric name in a target's expression or a variable's query. */
    static Set<String> queriedMetrics(Path dashboard) throws Exception {
        JsonNode root = new ObjectMapper().readTree(Files.readString(dashboard));
        Set<String> names = new TreeSet<>();
        for (JsonNode panel : root.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                addMetrics(target.path("expr").asText(), names);
            }
        }
        for (JsonNode variable : root.path("templating").path("list")) {
            addMetrics(variable.path("definition").asText(), names);
        }
        return names;
    }

    private static void addMetrics(String expression, Set<String> into) {
        Matcher m = METRIC.matcher(expression);
        while (m.find()) {
            into.add(m.group());
        }
    }

    /** The names Flink's Prometheus reporter gives these metrics (see the class comment). */
    static Set<String> flinkPrometheusNames(Map<MetricGroup, Map<String, Metric>> byGroup) {
        Set<String> names = new TreeSet<>();
        for (Map.Entry<MetricGroup, Map<String, Metric>> g : byGroup.entrySet()) {
            String scope = logicalScope(g.getKey());
            for (Map.Entry<String, Metric> m : g.getValue().entrySet()) {
                String name =
                        "flink_" + scope + "_" + PROMETHEUS_FILTER.filterCharacters(m.getKey());
                names.add(name);
                if (m.getValue().getMetricType() == MetricType.HISTOGRAM) {
                    names.add(name + "_count");
                }
            }
        }
        return names;
    }

    /**
     * What the reporter calls on the group it is handed (a {@link LogicalScopeProvider}); the
     * in-memory reporter keeps the group that one wraps, which computes the same scope.
     */
    private static String logicalScope(MetricGroup group) {
        if (group instanceof LogicalScopeProvider provider) {
            return provider.getLogicalScope(PROMETHEUS_FILTER, '_');
        }
        return ((AbstractMetricGroup<?>) group).getLogicalScope(PROMETHEUS_FILTER, '_');
    }

    private static String scrape(int port) throws Exception {
        HttpResponse<String> r =
                HttpClient.newBuilder()
                        .connectTimeout(Duration.ofSeconds(5))
                        .build()
                        .send(
                                HttpRequest.newBuilder(
                                                URI.create("http://127.0.0.1:" + port + "/metrics"))
                                        .timeout(Duration.ofSeconds(10))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body();
    }

    /** The sample names of a Prometheus text exposition. */
    private static Set<String> sampleNames(String text) {
        Set<String> names = new TreeSet<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int end = line.indexOf('{');
            if (end < 0) {
                end = line.indexOf(' ');
            }
            names.add(line.substring(0, end));
        }
        return names;
    }

    /** A keyed state per key, so the job's keyed backend is a Taishan one with its metrics. */
    static final class Counting extends RichMapFunction<Long, Long> {
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("n", Types.LONG));
        }

        @Override
        public Long map(Long value) throws Exception {
            long n = count.value() == null ? 1 : count.value() + 1;
            count.update(n);
            return n;
        }
    }
}
