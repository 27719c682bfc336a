package io.taishan.kv.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.testing.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PemFilesTest {
    @TempDir Path dir;

    @Test
    void readsAChainWithTextAroundAndAMatchingKey() throws Exception {
        TestCertificates certs = TestCertificates.create(dir);
        Path chain = dir.resolve("chain.pem");
        Files.writeString(
                chain,
                "subject=CN=server\n"
                        + Files.readString(certs.server().certFile())
                        + "issuer=CN=Taishan Test CA\n"
                        + Files.readString(certs.caCert()));
        List<X509Certificate> read = PemFiles.certificates(chain, "x");
        assertThat(read)
                .extracting(c -> c.getSubjectX500Principal().getName())
                .containsExactly("CN=server", "CN=Taishan Test CA");
        PrivateKey key = PemFiles.privateKey(certs.server().keyFile(), "k");
        assertThat(key.getAlgorithm()).isEqualTo("EC");
        PemFiles.checkKeyMatches(key, certs.server().keyFile(), "k", read.get(0), chain, "x");
        PemFiles.checkValidNow(read.get(0), chain, "x");

        assertThatThrownBy(
                        () ->
                                PemFiles.checkKeyMatches(
                                        key,
                                        certs.server().keyFile(),
                                        "k",
                                        read.get(1),
                                        chain,
                                        "x"))
                .hasMessage(
                        "k "
                                + certs.server().keyFile()
                                + " does not match the certificate in x "
                                + chain
                                + " (subject CN=Taishan Test CA)");
        X509Certificate expired =
                PemFiles.certificates(certs.expiredServer().certFile(), "x").get(0);
        assertThatThrownBy(() -> PemFiles.checkValidNow(expired, chain, "x"))
                .hasMessageContaining("certificate CN=expired-server expired on ");
    }

    @Test
    void aBinaryFileIsNotPem() throws Exception {
        Path der =
                Files.write(
                        dir.resolve("x.der"), new byte[] {0x30, (byte) 0x82, 0x01, (byte) 0xff});
        assertThatThrownBy(() -> PemFiles.certificates(der, "what"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("what " + der + " is not a PEM file (no -----BEGIN ...----- block)");
    }

    @Test
    void twoKeysInOneFileAreRefused() throws Exception {
        TestCertificates certs = TestCertificates.create(dir);
        Path both = dir.resolve("both.key");
        Files.writeString(
                both,
                Files.readString(certs.server().keyFile())
                        + Files.readString(certs.client().keyFile()));
        assertThatThrownBy(() -> PemFiles.privateKey(both, "k"))
                .hasMessage("k " + both + " holds more than one private key");
    }
}
