package io.taishan.kv.protocol;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.annotation.Nullable;

/**
 * Reads the PEM files of TLS settings with the JDK alone, so that a bad file fails at start with a
 * message naming the setting and the file, not at the first handshake with an error from deep in
 * Netty; and so that what passes here is exactly what the handshake uses (Netty's own PEM reader
 * behaves differently depending on whether Bouncy Castle is on the classpath).
 *
 * <p>Certificates: one or more {@code CERTIFICATE} blocks (text around them, as {@code openssl x509
 * -text} writes, is ignored). Keys: one unencrypted PKCS#8 {@code PRIVATE KEY} block (RSA, EC or
 * EdDSA), what {@code openssl genpkey} and OpenSSL 3's {@code req -newkey} write; the older
 * PKCS#1/SEC1 and encrypted forms are refused with the command that converts them.
 *
 * <p>Every failure is an {@link IllegalArgumentException} whose message starts with {@code what}
 * (the setting's name) and the path. Messages never contain key material.
 */
public final class PemFiles {
    private static final Pattern BLOCK =
            Pattern.compile(
                    "-----BEGIN ([A-Z0-9 ]+)-----\\s*([A-Za-z0-9+/=\\s]*?)\\s*-----END \\1-----");
    private static final String[] KEY_ALGORITHMS = {"RSA", "EC", "EdDSA", "RSASSA-PSS", "XDH"};

    private PemFiles() {}

    /** Every certificate in the file, in order (a chain: the leaf first). */
    public static List<X509Certificate> certificates(Path file, String what) {
        List<X509Certificate> certs = new ArrayList<>();
        CertificateFactory factory;
        try {
            factory = CertificateFactory.getInstance("X.509");
        } catch (CertificateException e) {
            throw new IllegalStateException("this JVM has no X.509 certificate factory", e);
        }
        for (Block block : blocks(file, what)) {
            if (!block.type.equals("CERTIFICATE")) {
                continue;
            }
            try {
                certs.add(
                        (X509Certificate)
                                factory.generateCertificate(
                                        new ByteArrayInputStream(block.der(file, what))));
            } catch (CertificateException e) {
                throw bad(
                        what, file, "certificate " + (certs.size() + 1) + " does not parse: " + e);
            }
        }
        if (certs.isEmpty()) {
            throw bad(what, file, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        return certs;
    }

    /** The one private key in the file. */
    public static PrivateKey privateKey(Path file, String what) {
        PrivateKey key = null;
        for (Block block : blocks(file, what)) {
            switch (block.type) {
                case "PRIVATE KEY" -> {
                    if (key != null) {
                        throw bad(what, file, "holds more than one private key");
                    }
                    key = pkcs8(block.der(file, what), file, what);
                }
                case "ENCRYPTED PRIVATE KEY" ->
                        throw bad(
                                what,
                                file,
                                "is an encrypted key, which is not supported: decrypt it to an"
                                        + " unencrypted PKCS#8 key (openssl pkcs8 -topk8 -nocrypt"
                                        + " -in KEY -out NEWKEY) and protect the file by its"
                                        + " permissions");
                case "RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY" ->
                        throw bad(
                                what,
                                file,
                                "is a "
                                        + block.type
                                        + " (the old PKCS#1/SEC1 form); convert it to PKCS#8:"
                                        + " openssl pkcs8 -topk8 -nocrypt -in KEY -out NEWKEY");
                default -> {
                    // Certificates or parameters beside the key: not ours to read here.
                }
            }
        }
        if (key == null) {
            throw bad(what, file, "holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
        }
        return key;
    }

    /**
     * Fails unless {@code key} is the private half of {@code cert}'s public key: a test signature
     * made with the key must verify with the certificate. A mismatch would otherwise surface only
     * as a handshake failure on the other end.
     */
    public static void checkKeyMatches(
            PrivateKey key,
            Path keyFile,
            String keyWhat,
            X509Certificate cert,
            Path certFile,
            String certWhat) {
        String algorithm = signatureAlgorithm(key);
        if (algorithm == null) {
            return;
        }
        byte[] challenge = new byte[32];
        new SecureRandom().nextBytes(challenge);
        boolean matches;
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(challenge);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(cert.getPublicKey());
            verifier.update(challenge);
            matches = verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            // An EC key on another curve than the certificate's, a key of another type, ...
            matches = false;
        }
        if (!matches) {
            throw bad(
                    keyWhat,
                    keyFile,
                    "does not match the certificate in "
                            + certWhat
                            + " "
                            + certFile
                            + " (subject "
                            + cert.getSubjectX500Principal().getName()
                            + ")");
        }
    }

    /** Fails when the certificate is expired or not valid yet: every handshake would fail. */
    public static void checkValidNow(X509Certificate cert, Path file, String what) {
        try {
            cert.checkValidity();
        } catch (CertificateExpiredException e) {
            throw bad(
                    what,
                    file,
                    "certificate "
                            + cert.getSubjectX500Principal().getName()
                            + " expired on "
                            + cert.getNotAfter().toInstant());
        } catch (CertificateNotYetValidException e) {
            throw bad(
                    what,
                    file,
                    "certificate "
                            + cert.getSubjectX500Principal().getName()
                            + " is not valid before "
                            + cert.getNotBefore().toInstant());
        }
    }

    @Nullable
    private static String signatureAlgorithm(PrivateKey key) {
        return switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "EdDSA", "Ed25519", "Ed448" -> "EdDSA";
            default -> null;
        };
    }

    private static PrivateKey pkcs8(byte[] der, Path file, String what) {
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
        for (String algorithm : KEY_ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (InvalidKeySpecException | java.security.NoSuchAlgorithmException e) {
                // try the next algorithm
            }
        }
        throw bad(what, file, "holds a PKCS#8 key of no algorithm this JVM reads (RSA, EC, EdDSA)");
    }

    private static List<Block> blocks(Path file, String what) {
        String text;
        try {
            // Latin-1 decodes any bytes: a binary (DER) file then fails as "not a PEM file".
            text = Files.readString(file, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw bad(what, file, "cannot be read: " + e);
        }
        List<Block> blocks = new ArrayList<>();
        Matcher m = BLOCK.matcher(text);
        while (m.find()) {
            blocks.add(new Block(m.group(1), m.group(2)));
        }
        if (blocks.isEmpty()) {
            throw bad(what, file, "is not a PEM file (no -----BEGIN ...----- block)");
        }
        return blocks;
    }

    private static IllegalArgumentException bad(String what, Path file, String why) {
        return new IllegalArgumentException(what + " " + file + " " + why);
    }

    private record Block(String type, String base64) {
        byte[] der(Path file, String what) {
            try {
                return Base64.getMimeDecoder().decode(base64);
            } catch (IllegalArgumentException e) {
                throw bad(what, file, "has a " + type + " block that is not valid base64");
            }
        }
    }
}
