package io.taishan.kv.server.metrics;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * One scrape of a Prometheus text exposition (format 0.0.4), parsed line by line: samples with
 * their labels, and the metric families the {@code # TYPE} lines declare. Enough for asserting on
 * what a real endpoint served; not a general parser (no timestamps, no exemplars).
 */
public final class PrometheusText {
    /** One sample line. */
    public record Sample(String name, Map<String, String> labels, double value) {}

    private final List<Sample> samples;
    private final Map<String, String> types;

    private PrometheusText(List<Sample> samples, Map<String, String> types) {
        this.samples = samples;
        this.types = types;
    }

    /** GETs {@code url} (bounded: 10 s) and parses it; fails unless the answer is 200. */
    public static PrometheusText scrape(String url) throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> response =
                client.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(10))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException(url + " answered " + response.statusCode());
        }
        return parse(response.body());
    }

    public static PrometheusText parse(String text) {
        List<Sample> samples = new ArrayList<>();
        Map<String, String> types = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.substring(7).trim().split(" ");
                types.put(parts[0], parts[1]);
                continue;
            }
            if (line.startsWith("#")) {
                continue;
            }
            samples.add(parseSample(line));
        }
        return new PrometheusText(
                Collections.unmodifiableList(samples), Collections.unmodifiableMap(types));
    }

    private static Sample parseSample(String line) {
        int brace = line.indexOf('{');
        int space = line.indexOf(' ');
        String name;
        Map<String, String> labels = new TreeMap<>();
        String rest;
        if (brace >= 0 && brace < space) {
            name = line.substring(0, brace);
            int i = brace + 1;
            while (line.charAt(i) != '}') {
                int eq = line.indexOf('=', i);
                String key = line.substring(i, eq).trim();
                StringBuilder value = new StringBuilder();
                int j = eq + 2; // past ="
                while (line.charAt(j) != '"') {
                    char c = line.charAt(j);
                    if (c == '\\') {
                        char next = line.charAt(++j);
                        value.append(next == 'n' ? '\n' : next);
                    } else {
                        value.append(c);
                    }
                    j++;
                }
                labels.put(key, value.toString());
                i = j + 1;
                if (line.charAt(i) == ',') {
                    i++;
                }
            }
            rest = line.substring(i + 1).trim();
        } else {
            name = line.substring(0, space);
            rest = line.substring(space + 1).trim();
        }
        String value = rest.split(" ")[0];
        return new Sample(name, Collections.unmodifiableMap(labels), parseValue(value));
    }

    private static double parseValue(String v) {
        return switch (v) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> Double.parseDouble(v);
        };
    }

    public List<Sample> samples() {
        return samples;
    }

    /** Metric family name to its type ({@code counter}, {@code gauge}, {@code histogram}, ...). */
    public Map<String, String> types() {
        return types;
    }

    /** Every sample name served ({@code _total}, {@code _bucket}, {@code _count} included). */
    public Set<String> sampleNames() {
        Set<String> names = new HashSet<>();
        for (Sample s : samples) {
            names.add(s.name());
        }
        return names;
    }

    /**
     * The value of the one sample with this name whose labels include {@code labels} (pairs of name
     * and value); 0 if none has them (a labelled counter before its first increment).
     *
     * @throws IllegalStateException if several samples match
     */
    public double value(String name, String... labels) {
        Map<String, String> wanted = new TreeMap<>();
        for (int i = 0; i < labels.length; i += 2) {
            wanted.put(labels[i], labels[i + 1]);
        }
        Sample found = null;
        for (Sample s : samples) {
            if (s.name().equals(name) && s.labels().entrySet().containsAll(wanted.entrySet())) {
                if (found != null) {
                    throw new IllegalStateException(
                            "several samples " + name + wanted + ": " + found + ", " + s);
                }
                found = s;
            }
        }
        return found == null ? 0 : found.value();
    }

    /** Whether a sample of this name is served. */
    public boolean has(String name) {
        return samples.stream().anyMatch(s -> s.name().equals(name));
    }
}
