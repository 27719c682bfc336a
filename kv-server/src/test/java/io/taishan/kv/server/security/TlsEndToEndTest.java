package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.KvUnavailableException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.testing.TestCertificates;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS and mutual TLS between the real client and real servers on loopback, with certificates made
 * in the test: what works, and that every mismatch fails at connect with a typed exception that
 * says what is wrong, without retries.
 */
class TlsEndToEndTest {
    @TempDir static Path dir;

    private static TestCertificates certs;
    private static EmbeddedKvServer tls;
    private static EmbeddedKvServer mutual;
    private static EmbeddedKvServer plaintext;

    @BeforeAll
    static void start() {
        certs = TestCertificates.create(dir.resolve("certs"));
        tls = EmbeddedKvServer.start(withServerCertificate(small()).build());
        mutual =
                EmbeddedKvServer.start(
                        withServerCertificate(small()).tlsClientCaFile(certs.caCert()).build());
        plaintext = EmbeddedKvServer.start(small().build());
    }

    @AfterAll
    static void stop() {
        for (EmbeddedKvServer s : new EmbeddedKvServer[] {tls, mutual, plaintext}) {
            if (s != null) {
                s.close();
            }
        }
    }

    static KvServerConfig.Builder small() {
        return KvServerConfig.builder().blockCacheBytes(8 << 20).writeBufferBytes(8 << 20);
    }

    private static KvServerConfig.Builder withServerCertificate(KvServerConfig.Builder b) {
        return b.tlsCertFile(certs.server().certFile()).tlsKeyFile(certs.server().keyFile());
    }

    /**
     * Three attempts 5 s apart: a failure that comes back within {@link #NO_RETRY} was not retried.
     */
    private static KvClientConfig.Builder client(String address) {
        return KvClientConfig.forAddresses(address)
                .requestTimeout(Duration.ofSeconds(5))
                .maxAttempts(3)
                .backoff(Duration.ofSeconds(5), Duration.ofSeconds(5));
    }

    private static final Duration NO_RETRY = Duration.ofSeconds(4);

    private static KvClientTls trustingOurCa() {
        return KvClientTls.trusting(certs.caCert());
    }

    private static void roundTrip(KvStore kv, String table) {
        kv.createTable(table, 2);
        ShardLease lease = kv.openShard(table, 1);
        kv.write(new WriteBatch(table).put(lease, b("k"), b("v")));
        assertThat(kv.get(lease, b("k"))).isEqualTo(b("v"));
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Connects, expecting a failure that is not retried. */
    private static Throwable refusedAtOnce(KvClientConfig config) {
        long start = System.nanoTime();
        Throwable failure = null;
        try (KvStore kv = KvStores.connect(config)) {
            throw new AssertionError("connected: " + kv.admin().orElseThrow().nodeAddresses());
        } catch (RuntimeException e) {
            failure = e;
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(NO_RETRY);
        return failure;
    }

    @Test
    void aClientTrustingTheCaTalksTlsByAddressAndByName() {
        try (KvStore kv = KvStores.connect(client(tls.address()).tls(trustingOurCa()).build())) {
            roundTrip(kv, "tls_by_ip");
        }
        try (KvStore kv =
                KvStores.connect(client("localhost:" + tls.port()).tls(trustingOurCa()).build())) {
            roundTrip(kv, "tls_by_name");
        }
    }

    @Test
    void aPlaintextClientAgainstATlsServerIsToldTlsMayBeWhy() {
        // A TLS server just closes the connection: the client cannot be sure, so it says so.
        assertThatThrownBy(
                        () ->
                                KvStores.connect(
                                        client(tls.address())
                                                .backoff(
                                                        Duration.ofMillis(10),
                                                        Duration.ofMillis(10))
                                                .build()))
                .isInstanceOf(KvUnavailableException.class)
                .hasMessageContaining("no kv-server answered at " + tls.address())
                .hasMessageContaining("if the server requires TLS, configure the client's TLS");
    }

    @Test
    void aTlsClientAgainstAPlaintextServerIsRefused() {
        assertThat(refusedAtOnce(client(plaintext.address()).tls(trustingOurCa()).build()))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("TLS handshake failed")
                .hasMessageContaining("the server does not speak TLS");
    }

    @Test
    void aClientTrustingAnotherCaRefusesTheServer() {
        assertThat(
                        refusedAtOnce(
                                client(tls.address())
                                        .tls(KvClientTls.trusting(certs.otherCaCert()))
                                        .build()))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("TLS handshake failed")
                .hasMessageContaining("does not chain to a CA this client trusts");
    }

    @Test
    void aClientTrustingOnlyTheJvmDefaultsRefusesAPrivateCa() {
        assertThat(refusedAtOnce(client(tls.address()).tls(KvClientTls.systemTrust()).build()))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("does not chain to a CA this client trusts");
    }

    @Test
    void aServerCertificateForAnotherHostIsRefused() {
        // The certificate names 127.0.0.1 and localhost, not 127.0.0.2.
        try (EmbeddedKvServer elsewhere =
                EmbeddedKvServer.start(withServerCertificate(small()).host("127.0.0.2").build())) {
            assertThat(refusedAtOnce(client(elsewhere.address()).tls(trustingOurCa()).build()))
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining("TLS handshake failed")
                    .hasMessageContaining("does not name the host this client dialled");
        }
    }

    @Test
    void mutualTlsWithoutAClientCertificateIsRefused() {
        assertThat(refusedAtOnce(client(mutual.address()).tls(trustingOurCa()).build()))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("TLS handshake failed")
                .hasMessageContaining("wants a client certificate");
    }

    @Test
    void mutualTlsWithACertificateOfAnotherCaIsRefused() {
        KvClientTls other =
                trustingOurCa()
                        .withClientCertificate(
                                certs.otherClient().certFile(), certs.otherClient().keyFile());
        assertThat(refusedAtOnce(client(mutual.address()).tls(other).build()))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("TLS handshake failed");
    }

    @Test
    void mutualTlsWithTheClientCertificateWorks() {
        KvClientTls ours =
                trustingOurCa()
                        .withClientCertificate(certs.client().certFile(), certs.client().keyFile());
        try (KvStore kv = KvStores.connect(client(mutual.address()).tls(ours).build())) {
            roundTrip(kv, "mtls_ok");
        }
    }

    @Test
    void aClientKeyThatIsNotItsCertificatesFailsBeforeConnecting() {
        KvClientTls mismatched =
                trustingOurCa()
                        .withClientCertificate(certs.client().certFile(), certs.server().keyFile());
        assertThatThrownBy(() -> KvStores.connect(client(mutual.address()).tls(mismatched).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("TLS client key file " + certs.server().keyFile())
                .hasMessageContaining(
                        "does not match the certificate in TLS client certificate file");
    }
}
