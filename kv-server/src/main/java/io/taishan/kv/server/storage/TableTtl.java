package io.taishan.kv.server.storage;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The states of one table that have a TTL, as the backends registered them, kept next to the table
 * ({@code ttl-states}) so expiry goes on after a restart; and what expiry did so far. A state
 * registered twice keeps the longer TTL ({@link StateTtl#mergedWith}), so no registration can make
 * a value expire earlier than another one allows.
 */
final class TableTtl {
    static final String FILE_NAME = "ttl-states";

    private final Path file;
    private final Map<Integer, StateTtl> states = new TreeMap<>();
    private final AtomicLong expiredEntries = new AtomicLong();
    private final AtomicLong sweptEntries = new AtomicLong();
    private volatile long lastSweepMillis;

    TableTtl(Path tableDir) throws IOException {
        this.file = tableDir.resolve(FILE_NAME);
        if (Files.exists(file)) {
            Properties p = new Properties();
            p.load(new StringReader(Files.readString(file, StandardCharsets.UTF_8)));
            for (String name : p.stringPropertyNames()) {
                StateTtl ttl = parse(name, p.getProperty(name));
                states.put(ttl.stateId(), ttl);
            }
        }
    }

    /** Adds or widens the states' TTLs, durably before it returns; true if anything changed. */
    synchronized boolean register(Collection<StateTtl> registered) throws IOException {
        boolean changed = false;
        for (StateTtl ttl : registered) {
            StateTtl existing = states.get(ttl.stateId());
            StateTtl merged = existing == null ? ttl : existing.mergedWith(ttl);
            if (!merged.equals(existing)) {
                states.put(ttl.stateId(), merged);
                changed = true;
            }
        }
        if (changed) {
            StringBuilder text =
                    new StringBuilder("# state id = ttl ms, layout, fixed element bytes\n");
            for (StateTtl ttl : states.values()) {
                text.append(String.format("%08x", ttl.stateId()))
                        .append('=')
                        .append(ttl.ttlMillis())
                        .append(',')
                        .append(ttl.layout())
                        .append(',')
                        .append(ttl.fixedElementBytes())
                        .append('\n');
            }
            DurableFiles.writeAtomically(file, text.toString().getBytes(StandardCharsets.UTF_8));
        }
        return changed;
    }

    synchronized List<StateTtl> states() {
        return new ArrayList<>(states.values());
    }

    boolean isEmpty() {
        synchronized (this) {
            return states.isEmpty();
        }
    }

    void swept(long scanned, long expired) {
        sweptEntries.addAndGet(scanned);
        expiredEntries.addAndGet(expired);
    }

    void sweepFinished(long atMillis) {
        lastSweepMillis = atMillis;
    }

    /** Entries the sweeps deleted since the server started. */
    long expiredEntries() {
        return expiredEntries.get();
    }

    /** Entries the sweeps looked at since the server started. */
    long sweptEntries() {
        return sweptEntries.get();
    }

    /** When the last complete sweep of the table ended (epoch millis), 0 before the first. */
    long lastSweepMillis() {
        return lastSweepMillis;
    }

    private StateTtl parse(String name, String value) throws IOException {
        try {
            String[] parts = value.split(",");
            return new StateTtl(
                    Integer.parseUnsignedInt(name, 16),
                    Long.parseLong(parts[0].trim()),
                    StateTtl.Layout.valueOf(parts[1].trim()),
                    Integer.parseInt(parts[2].trim()));
        } catch (RuntimeException e) {
            throw new IOException("corrupt " + file + ": " + name + "=" + value, e);
        }
    }
}
