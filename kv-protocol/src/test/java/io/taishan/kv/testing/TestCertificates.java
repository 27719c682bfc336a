package io.taishan.kv.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Certificates made in the test, as PEM files in a directory: a CA, a server certificate for {@code
 * 127.0.0.1} and {@code localhost} and a client certificate signed by it, and the same from a
 * second, unrelated CA. Keys are EC P-256 (made in microseconds) as unencrypted PKCS#8, what the
 * kv-server and client read. Bouncy Castle only builds and signs the certificates; the JDK makes
 * the keys and, in the code under test, reads everything back.
 */
public final class TestCertificates {
    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

    /** A certificate file and its key file. */
    public record Pem(Path certFile, Path keyFile) {}

    private final Path caCert;
    private final Pem server;
    private final Pem client;
    private final Path otherCaCert;
    private final Pem otherServer;
    private final Pem otherClient;
    private final Pem expiredServer;

    private TestCertificates(
            Path caCert,
            Pem server,
            Pem client,
            Path otherCaCert,
            Pem otherServer,
            Pem otherClient,
            Pem expiredServer) {
        this.caCert = caCert;
        this.server = server;
        this.client = client;
        this.otherCaCert = otherCaCert;
        this.otherServer = otherServer;
        this.otherClient = otherClient;
        this.expiredServer = expiredServer;
    }

    /** Makes every file in {@code dir} (created if missing). */
    public static TestCertificates create(Path dir) {
        try {
            Files.createDirectories(dir);
            Issuer ca = Issuer.selfSigned("Taishan Test CA");
            Issuer other = Issuer.selfSigned("Some Other CA");
            Path caFile = writeCert(dir.resolve("ca.pem"), ca.cert);
            Path otherFile = writeCert(dir.resolve("other-ca.pem"), other.cert);
            Instant now = Instant.now();
            return new TestCertificates(
                    caFile,
                    ca.issue(dir, "server", true, now, Duration.ofDays(1)),
                    ca.issue(dir, "client", false, now, Duration.ofDays(1)),
                    otherFile,
                    other.issue(dir, "other-server", true, now, Duration.ofDays(1)),
                    other.issue(dir, "other-client", false, now, Duration.ofDays(1)),
                    ca.issue(
                            dir,
                            "expired-server",
                            true,
                            now.minus(Duration.ofDays(3)),
                            Duration.ofDays(1)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException | OperatorCreationException e) {
            throw new IllegalStateException("cannot make test certificates", e);
        }
    }

    /** The CA that signed {@link #server()} and {@link #client()}. */
    public Path caCert() {
        return caCert;
    }

    /** For 127.0.0.1 and localhost, signed by {@link #caCert()}. */
    public Pem server() {
        return server;
    }

    /** A client certificate signed by {@link #caCert()}. */
    public Pem client() {
        return client;
    }

    /** A CA that signed nothing the server or client trusts. */
    public Path otherCaCert() {
        return otherCaCert;
    }

    /** For 127.0.0.1 and localhost, signed by {@link #otherCaCert()}. */
    public Pem otherServer() {
        return otherServer;
    }

    /** A client certificate signed by {@link #otherCaCert()}. */
    public Pem otherClient() {
        return otherClient;
    }

    /** Signed by {@link #caCert()}, valid for a day that ended two days ago. */
    public Pem expiredServer() {
        return expiredServer;
    }

    private static Path writeCert(Path file, X509Certificate cert)
            throws IOException, GeneralSecurityException {
        return write(file, "CERTIFICATE", cert.getEncoded());
    }

    private static Path write(Path file, String type, byte[] der) throws IOException {
        String base64 =
                Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                        .encodeToString(der);
        Files.writeString(
                file,
                "-----BEGIN " + type + "-----\n" + base64 + "\n-----END " + type + "-----\n",
                StandardCharsets.US_ASCII);
        return file;
    }

    private static KeyPair ecKeyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        return generator.generateKeyPair();
    }

    private record Issuer(X500Principal name, PrivateKey key, X509Certificate cert) {
        static Issuer selfSigned(String cn)
                throws GeneralSecurityException, OperatorCreationException, IOException {
            KeyPair keys = ecKeyPair();
            X500Principal name = new X500Principal("CN=" + cn);
            Instant now = Instant.now();
            X509v3CertificateBuilder builder =
                    new JcaX509v3CertificateBuilder(
                            name,
                            BigInteger.valueOf(SERIAL.incrementAndGet()),
                            Date.from(now.minus(Duration.ofHours(1))),
                            Date.from(now.plus(Duration.ofDays(2))),
                            name,
                            keys.getPublic());
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            builder.addExtension(
                    Extension.keyUsage,
                    true,
                    new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            return new Issuer(name, keys.getPrivate(), sign(builder, keys.getPrivate()));
        }

        Pem issue(Path dir, String cn, boolean server, Instant from, Duration validity)
                throws GeneralSecurityException, OperatorCreationException, IOException {
            KeyPair keys = ecKeyPair();
            X509v3CertificateBuilder builder =
                    new JcaX509v3CertificateBuilder(
                            name,
                            BigInteger.valueOf(SERIAL.incrementAndGet()),
                            Date.from(from.minus(Duration.ofHours(1))),
                            Date.from(from.plus(validity)),
                            new X500Principal("CN=" + cn),
                            keys.getPublic());
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
            builder.addExtension(
                    Extension.extendedKeyUsage,
                    false,
                    new ExtendedKeyUsage(
                            server
                                    ? KeyPurposeId.id_kp_serverAuth
                                    : KeyPurposeId.id_kp_clientAuth));
            if (server) {
                builder.addExtension(
                        Extension.subjectAlternativeName,
                        false,
                        new GeneralNames(
                                new GeneralName[] {
                                    new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                                    new GeneralName(GeneralName.dNSName, "localhost")
                                }));
            }
            X509Certificate cert = sign(builder, key);
            return new Pem(
                    writeCert(dir.resolve(cn + ".pem"), cert),
                    write(dir.resolve(cn + ".key"), "PRIVATE KEY", keys.getPrivate().getEncoded()));
        }

        private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey key)
                throws OperatorCreationException, GeneralSecurityException {
            return new JcaX509CertificateConverter()
                    .getCertificate(
                            builder.build(
                                    new JcaContentSignerBuilder("SHA256withECDSA").build(key)));
        }
    }
}
