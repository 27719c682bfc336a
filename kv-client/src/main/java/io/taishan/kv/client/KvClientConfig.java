package io.taishan.kv.client;

import com.google.common.net.HostAndPort;
import io.taishan.kv.protocol.BearerTokens;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.annotation.Nullable;

/**
 * How the client reaches the service: seed addresses ({@code host:port}), the deadline of every
 * call, how often idempotent calls are retried, how many connections each node gets for reads, and
 * its credentials: TLS ({@link KvClientTls}) and a bearer token.
 *
 * <p>Two configs are equal when every setting is, the token included, so that a client shared by
 * config (as the Flink backend shares one per TaskManager) is never shared across tokens. {@link
 * #toString()} never shows the token.
 */
public final class KvClientConfig {
    /**
     * Two: a reader never waits behind a write batch (those have their own connection), and two
     * connections are served by two event-loop threads on each side, so concurrent readers of a
     * node are not bound to one core.
     */
    public static final int DEFAULT_READ_CHANNELS = 2;

    /** More would only cost sockets and event-loop wake-ups. */
    public static final int MAX_READ_CHANNELS = 16;

    /**
     * Longer than a node's own bound on a transfer ({@code durable.transfer-timeout}, 10 minutes by
     * default), so that the node's failure, which names the file, ends a slow transfer first.
     */
    public static final Duration DEFAULT_DURABLE_CALL_TIMEOUT = Duration.ofMinutes(15);

    private final List<String> addresses;
    private final Duration requestTimeout;
    private final Duration durableCallTimeout;
    private final int maxAttempts;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final int readChannels;
    @Nullable private final KvClientTls tls;
    @Nullable private final String token;

    private KvClientConfig(Builder b) {
        this.addresses = List.copyOf(b.addresses);
        this.requestTimeout = b.requestTimeout;
        this.durableCallTimeout = b.durableCallTimeout;
        this.maxAttempts = b.maxAttempts;
        this.initialBackoff = b.initialBackoff;
        this.maxBackoff = b.maxBackoff;
        this.readChannels = b.readChannels;
        this.tls = b.tls;
        this.token = b.token;
    }

    /** {@code host:port[,host:port...]} */
    public static Builder forAddresses(String addressList) {
        Builder b = new Builder();
        for (String a : addressList.split(",")) {
            String trimmed = a.trim();
            if (!trimmed.isEmpty()) {
                b.addresses.add(validateAddress(trimmed));
            }
        }
        if (b.addresses.isEmpty()) {
            throw new IllegalArgumentException(
                    "no kv-server address in '"
                            + addressList
                            + "'; expected host:port[,host:port...]");
        }
        return b;
    }

    /**
     * Checks an address with the parser that connects ({@link KvNode}'s {@code HostAndPort}), so
     * what passes here can be dialled: {@code host:port}, {@code [ipv6]:port}.
     */
    static String validateAddress(String address) {
        HostAndPort parsed;
        try {
            parsed = HostAndPort.fromString(address);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "bad kv-server address '" + address + "': expected host:port", e);
        }
        if (!parsed.hasPort() || parsed.getHost().isEmpty()) {
            throw new IllegalArgumentException(
                    "bad kv-server address '"
                            + address
                            + "': expected host:port (an IPv6 host in brackets: [::1]:7600)");
        }
        if (parsed.getPort() <= 0) {
            throw new IllegalArgumentException(
                    "bad port in kv-server address '" + address + "': expected 1..65535");
        }
        return address;
    }

    public List<String> addresses() {
        return addresses;
    }

    public Duration requestTimeout() {
        return requestTimeout;
    }

    /**
     * The deadline of a call that moves files to or from Flink's checkpoint storage: {@code
     * UploadSnapshot}, and a {@code RestoreShards} that names durable cuts (it may download).
     */
    public Duration durableCallTimeout() {
        return durableCallTimeout;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public Duration initialBackoff() {
        return initialBackoff;
    }

    public Duration maxBackoff() {
        return maxBackoff;
    }

    /**
     * Connections per node for Get, MultiGet and Scan, besides the one that carries writes, filter
     * fetches and administration.
     */
    public int readChannels() {
        return readChannels;
    }

    /** The TLS settings, or null for plaintext. */
    @Nullable
    public KvClientTls tls() {
        return tls;
    }

    /** Whether every call carries a bearer token. */
    public boolean hasToken() {
        return token != null;
    }

    /** The bearer token; kept off the public API so that it is not passed around or printed. */
    @Nullable
    String token() {
        return token;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KvClientConfig other
                && addresses.equals(other.addresses)
                && requestTimeout.equals(other.requestTimeout)
                && durableCallTimeout.equals(other.durableCallTimeout)
                && maxAttempts == other.maxAttempts
                && initialBackoff.equals(other.initialBackoff)
                && maxBackoff.equals(other.maxBackoff)
                && readChannels == other.readChannels
                && Objects.equals(tls, other.tls)
                && Objects.equals(token, other.token);
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                addresses,
                requestTimeout,
                durableCallTimeout,
                maxAttempts,
                initialBackoff,
                maxBackoff,
                readChannels,
                tls,
                token);
    }

    @Override
    public String toString() {
        return "KvClientConfig{addresses="
                + addresses
                + ", requestTimeout="
                + requestTimeout
                + ", durableCallTimeout="
                + durableCallTimeout
                + ", maxAttempts="
                + maxAttempts
                + ", backoff="
                + initialBackoff
                + ".."
                + maxBackoff
                + ", readChannels="
                + readChannels
                + ", "
                + (tls == null ? "plaintext" : tls)
                + (token == null ? "" : ", token=<hidden>")
                + '}';
    }

    /**
     * Builder with defaults: 10 s deadline (15 min for calls to checkpoint storage), 3 attempts, 50
     * ms..1 s backoff, {@value #DEFAULT_READ_CHANNELS} read channels per node.
     */
    public static final class Builder {
        private final List<String> addresses = new ArrayList<>();
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration durableCallTimeout = DEFAULT_DURABLE_CALL_TIMEOUT;
        private int maxAttempts = 3;
        private Duration initialBackoff = Duration.ofMillis(50);
        private Duration maxBackoff = Duration.ofSeconds(1);
        private int readChannels = DEFAULT_READ_CHANNELS;
        @Nullable private KvClientTls tls;
        @Nullable private String token;

        private Builder() {}

        public Builder requestTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("request timeout must be > 0: " + timeout);
            }
            this.requestTimeout = timeout;
            return this;
        }

        /** See {@link KvClientConfig#durableCallTimeout()}. */
        public Builder durableCallTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("durable call timeout must be > 0: " + timeout);
            }
            this.durableCallTimeout = timeout;
            return this;
        }

        public Builder maxAttempts(int attempts) {
            if (attempts < 1) {
                throw new IllegalArgumentException("max attempts must be >= 1: " + attempts);
            }
            this.maxAttempts = attempts;
            return this;
        }

        public Builder backoff(Duration initial, Duration max) {
            this.initialBackoff = Objects.requireNonNull(initial);
            this.maxBackoff = Objects.requireNonNull(max);
            return this;
        }

        /** Connections per node for reads (1..{@value #MAX_READ_CHANNELS}). */
        public Builder readChannels(int channels) {
            if (channels < 1 || channels > MAX_READ_CHANNELS) {
                throw new IllegalArgumentException(
                        "read channels must be 1.." + MAX_READ_CHANNELS + ": " + channels);
            }
            this.readChannels = channels;
            return this;
        }

        /** Speak TLS with these settings; null (the default) for plaintext. */
        public Builder tls(@Nullable KvClientTls tls) {
            this.tls = tls;
            return this;
        }

        /**
         * Sends this bearer token with every call (null: none). Without {@link #tls} it travels in
         * clear text; the client logs a warning when it connects so.
         */
        public Builder token(@Nullable String token) {
            if (token != null) {
                String problem = BearerTokens.problemWith(token);
                if (problem != null) {
                    throw new IllegalArgumentException("bad kv-server token: " + problem);
                }
            }
            this.token = token;
            return this;
        }

        /**
         * Reads the bearer token now from a file: its first line that is neither blank nor a {@code
         * #} comment. A token rotated in the file reaches clients built after the change.
         *
         * @throws IllegalArgumentException naming the file if it cannot be read or holds no token
         */
        public Builder tokenFile(Path file) {
            this.token = BearerTokens.readTokenFile(file, "kv-server token file");
            return this;
        }

        public KvClientConfig build() {
            return new KvClientConfig(this);
        }
    }
}
