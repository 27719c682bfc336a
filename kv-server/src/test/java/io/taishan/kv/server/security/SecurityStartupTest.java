package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.KvServerStartupException;
import io.taishan.kv.testing.TestCertificates;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node with a bad TLS or token file does not start, says which setting and file and why in one
 * line, and leaves its data dir free.
 */
class SecurityStartupTest {
    @TempDir Path dir;

    private TestCertificates certs;
    private Path data;

    @BeforeEach
    void setUp() {
        certs = TestCertificates.create(dir.resolve("certs"));
        data = dir.resolve("data");
    }

    private KvServerConfig.Builder tls() {
        return KvServerConfig.builder()
                .dataDir(data)
                .tlsCertFile(certs.server().certFile())
                .tlsKeyFile(certs.server().keyFile());
    }

    private void refusedToStart(KvServerConfig config, String messageStart, String... more) {
        assertThatThrownBy(() -> EmbeddedKvServer.start(config).close())
                .isInstanceOf(KvServerStartupException.class)
                .hasMessageStartingWith(messageStart)
                .satisfies(
                        e -> {
                            assertThat(e.getMessage()).doesNotContain("\n");
                            for (String part : more) {
                                assertThat(e.getMessage()).contains(part);
                            }
                        });
        // Nothing left locked or half-started.
        EmbeddedKvServer.start(KvServerConfig.builder().dataDir(data).build()).close();
    }

    @Test
    void missingAndUnreadableFiles() throws Exception {
        Path missing = dir.resolve("nope.pem");
        refusedToStart(
                tls().tlsCertFile(missing).build(),
                "tls.cert-file " + missing + " cannot be read: java.nio.file.NoSuchFileException");
        refusedToStart(
                tls().tlsClientCaFile(missing).build(),
                "tls.client-ca-file " + missing + " cannot be read");
        refusedToStart(
                tls().authTokenFile(missing).build(),
                "auth.token-file " + missing + " cannot be read");
        if (!"root".equals(System.getProperty("user.name"))) {
            Path locked = Files.copy(certs.server().keyFile(), dir.resolve("locked.key"));
            Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
            refusedToStart(
                    tls().tlsKeyFile(locked).build(),
                    "tls.key-file "
                            + locked
                            + " cannot be read: java.nio.file.AccessDeniedException");
        }
    }

    @Test
    void filesThatAreNotWhatTheirKeySays() throws Exception {
        Path garbage = Files.writeString(dir.resolve("garbage.pem"), "hello\n");
        refusedToStart(
                tls().tlsCertFile(garbage).build(),
                "tls.cert-file " + garbage + " is not a PEM file");
        // A key where the certificate belongs, and the other way round.
        refusedToStart(
                tls().tlsCertFile(certs.server().keyFile()).build(),
                "tls.cert-file " + certs.server().keyFile() + " holds no PEM certificate");
        refusedToStart(
                tls().tlsKeyFile(certs.server().certFile()).build(),
                "tls.key-file " + certs.server().certFile() + " holds no PEM private key");
        Path pkcs1 = pem("old.key", "RSA PRIVATE KEY");
        refusedToStart(
                tls().tlsKeyFile(pkcs1).build(),
                "tls.key-file " + pkcs1 + " is a RSA PRIVATE KEY (the old PKCS#1/SEC1 form)",
                "openssl pkcs8 -topk8 -nocrypt");
        Path encrypted = pem("encrypted.key", "ENCRYPTED PRIVATE KEY");
        refusedToStart(
                tls().tlsKeyFile(encrypted).build(),
                "tls.key-file " + encrypted + " is an encrypted key, which is not supported");
        Path corrupt = pem("corrupt.pem", "CERTIFICATE");
        refusedToStart(
                tls().tlsCertFile(corrupt).build(),
                "tls.cert-file " + corrupt + " certificate 1 does not parse");
    }

    @Test
    void aKeyOfAnotherCertificateAndAnExpiredCertificate() {
        refusedToStart(
                tls().tlsKeyFile(certs.client().keyFile()).build(),
                "tls.key-file "
                        + certs.client().keyFile()
                        + " does not match the certificate in tls.cert-file "
                        + certs.server().certFile());
        refusedToStart(
                tls().tlsCertFile(certs.expiredServer().certFile())
                        .tlsKeyFile(certs.expiredServer().keyFile())
                        .build(),
                "tls.cert-file "
                        + certs.expiredServer().certFile()
                        + " certificate CN=expired-server expired on ");
    }

    @Test
    void aMalformedTokenFileNamesTheLine() throws Exception {
        Path tokens =
                Files.writeString(
                        dir.resolve("tokens"),
                        "# fine\n0123456789abcdef-secret-token team_a_ a\nsecond-secret-but-alone\n");
        refusedToStart(
                tls().authTokenFile(tokens).build(),
                "auth.token-file "
                        + tokens
                        + " line 3: expected '<token> <scope> [name] [checkpoints=<dir>[,<dir>...]]'");
        assertThatThrownBy(() -> EmbeddedKvServer.start(tls().authTokenFile(tokens).build()))
                .hasMessageNotContaining("secret");
    }

    @Test
    void settingsThatNeedEachOtherAreCheckedWhenTheConfigIsBuilt() {
        assertThatThrownBy(() -> KvServerConfig.builder().tlsCertFile(Path.of("c")).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "tls.cert-file and tls.key-file must be set together (tls.cert-file is set"
                                + " alone)");
        assertThatThrownBy(() -> KvServerConfig.builder().tlsKeyFile(Path.of("k")).build())
                .hasMessageContaining("(tls.key-file is set alone)");
        assertThatThrownBy(() -> KvServerConfig.builder().tlsClientCaFile(Path.of("ca")).build())
                .hasMessage("tls.client-ca-file (mutual TLS) needs tls.cert-file and tls.key-file");
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .authReloadInterval(java.time.Duration.ofSeconds(-1))
                                        .build())
                .hasMessageStartingWith("auth.reload-interval must be >= 0");
    }

    private Path pem(String name, String type) throws Exception {
        return Files.writeString(
                dir.resolve(name),
                "-----BEGIN " + type + "-----\nAAAA\n-----END " + type + "-----\n",
                StandardCharsets.US_ASCII);
    }
}
