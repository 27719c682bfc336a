package io.taishan.kv.server.security;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import javax.annotation.Nullable;

/**
 * The {@code tls.*} and {@code auth.*} settings of a node. Structure is checked here (which keys
 * need which); the files themselves when the node starts ({@link ServerTls}, {@link TokenStore}).
 *
 * @param certFile {@code tls.cert-file}: the node's certificate chain (PEM, leaf first); null for
 *     plaintext
 * @param keyFile {@code tls.key-file}: its unencrypted PKCS#8 private key (PEM)
 * @param clientCaFile {@code tls.client-ca-file}: CA certificate(s) that client certificates must
 *     chain to; when set, every client must present one (mutual TLS)
 * @param tokenFile {@code auth.token-file}: the credentials; when set, every call but Health needs
 *     a bearer token from it
 * @param tokenReloadInterval {@code auth.reload-interval}: how often the token file is checked for
 *     changes; zero: read once at start
 */
public record SecurityOptions(
        @Nullable Path certFile,
        @Nullable Path keyFile,
        @Nullable Path clientCaFile,
        @Nullable Path tokenFile,
        Duration tokenReloadInterval) {

    public static final Duration DEFAULT_RELOAD_INTERVAL = Duration.ofSeconds(10);

    /** Plaintext, no authentication: the defaults. */
    public static final SecurityOptions NONE =
            new SecurityOptions(null, null, null, null, DEFAULT_RELOAD_INTERVAL);

    public SecurityOptions {
        Objects.requireNonNull(tokenReloadInterval, "tokenReloadInterval");
    }

    /**
     * @throws IllegalArgumentException naming the keys that do not fit together
     */
    public SecurityOptions validate() {
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException(
                    "tls.cert-file and tls.key-file must be set together ("
                            + (certFile == null ? "tls.key-file" : "tls.cert-file")
                            + " is set alone)");
        }
        if (clientCaFile != null && certFile == null) {
            throw new IllegalArgumentException(
                    "tls.client-ca-file (mutual TLS) needs tls.cert-file and tls.key-file");
        }
        if (tokenReloadInterval.isNegative()) {
            throw new IllegalArgumentException(
                    "auth.reload-interval must be >= 0 (0: never), not " + tokenReloadInterval);
        }
        return this;
    }

    public boolean tls() {
        return certFile != null;
    }

    public boolean mutualTls() {
        return clientCaFile != null;
    }

    public boolean tokens() {
        return tokenFile != null;
    }

    @Override
    public String toString() {
        if (!tls() && !tokens()) {
            return "plaintext, no authentication";
        }
        return (tls() ? (mutualTls() ? "mutual TLS" : "TLS") : "plaintext")
                + ", "
                + (tokens() ? "tokens from " + tokenFile : "no tokens");
    }
}
