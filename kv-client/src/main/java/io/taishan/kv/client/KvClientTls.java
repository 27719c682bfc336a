package io.taishan.kv.client;

import java.nio.file.Path;
import java.util.Objects;
import javax.annotation.Nullable;

/**
 * How the client speaks TLS to the kv-server: whom it trusts (a CA certificate file, or the JVM's
 * default trust store) and, for a server that wants client certificates (mutual TLS), its own
 * certificate and key. PEM files: certificates as {@code -----BEGIN CERTIFICATE-----} blocks, the
 * key as an unencrypted PKCS#8 {@code -----BEGIN PRIVATE KEY-----} block.
 *
 * <p>The server's certificate must name the host the client dials (as given in the seed addresses
 * and the server's {@code cluster.nodes}) in its subject alternative names: gRPC verifies the host
 * name. The files are read when the client connects; a file that is missing, unreadable or
 * malformed, or a key that does not belong to its certificate, fails {@link KvStores#connect} with
 * an {@link IllegalArgumentException} naming the file.
 */
public final class KvClientTls {
    @Nullable private final Path trustCertFile;
    @Nullable private final Path certFile;
    @Nullable private final Path keyFile;

    private KvClientTls(
            @Nullable Path trustCertFile, @Nullable Path certFile, @Nullable Path keyFile) {
        this.trustCertFile = trustCertFile;
        this.certFile = certFile;
        this.keyFile = keyFile;
    }

    /** Trusts the CAs of the JVM's default trust store (a server certificate from a public CA). */
    public static KvClientTls systemTrust() {
        return new KvClientTls(null, null, null);
    }

    /** Trusts only the CA certificate(s) in this PEM file. */
    public static KvClientTls trusting(Path caCertFile) {
        return new KvClientTls(Objects.requireNonNull(caCertFile, "caCertFile"), null, null);
    }

    /** Also presents this certificate (chain, leaf first) and key, for mutual TLS. */
    public KvClientTls withClientCertificate(Path certFile, Path keyFile) {
        return new KvClientTls(
                trustCertFile,
                Objects.requireNonNull(certFile, "certFile"),
                Objects.requireNonNull(keyFile, "keyFile"));
    }

    /** The CA file trusted, or null for the JVM's default trust store. */
    @Nullable
    public Path trustCertFile() {
        return trustCertFile;
    }

    /** The client certificate for mutual TLS, or null. */
    @Nullable
    public Path certFile() {
        return certFile;
    }

    /** The client certificate's key, or null. */
    @Nullable
    public Path keyFile() {
        return keyFile;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KvClientTls other
                && Objects.equals(trustCertFile, other.trustCertFile)
                && Objects.equals(certFile, other.certFile)
                && Objects.equals(keyFile, other.keyFile);
    }

    @Override
    public int hashCode() {
        return Objects.hash(trustCertFile, certFile, keyFile);
    }

    @Override
    public String toString() {
        return "tls(trust="
                + (trustCertFile == null ? "system" : trustCertFile)
                + (certFile == null ? "" : ", cert=" + certFile + ", key=" + keyFile)
                + ")";
    }
}
