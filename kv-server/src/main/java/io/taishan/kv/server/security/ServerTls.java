package io.taishan.kv.server.security;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.taishan.kv.protocol.PemFiles;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLException;

/**
 * The node's TLS context from its PEM files, checked before the port is bound: every file readable
 * and well formed, the key the private half of the certificate, the certificate valid now. A node
 * with a bad file does not start, rather than failing every handshake later.
 */
public final class ServerTls {
    private ServerTls() {}

    /**
     * @throws IllegalArgumentException naming the key and file of the first problem
     */
    public static SslContext sslContext(SecurityOptions options) {
        Path certFile = Objects.requireNonNull(options.certFile(), "no tls.cert-file");
        Path keyFile = Objects.requireNonNull(options.keyFile(), "no tls.key-file");
        List<X509Certificate> chain = PemFiles.certificates(certFile, "tls.cert-file");
        PrivateKey key = PemFiles.privateKey(keyFile, "tls.key-file");
        PemFiles.checkKeyMatches(
                key, keyFile, "tls.key-file", chain.get(0), certFile, "tls.cert-file");
        PemFiles.checkValidNow(chain.get(0), certFile, "tls.cert-file");
        SslContextBuilder builder =
                GrpcSslContexts.configure(
                        SslContextBuilder.forServer(key, chain.toArray(new X509Certificate[0])));
        Path clientCa = options.clientCaFile();
        if (clientCa != null) {
            builder.trustManager(
                            PemFiles.certificates(clientCa, "tls.client-ca-file")
                                    .toArray(new X509Certificate[0]))
                    .clientAuth(ClientAuth.REQUIRE);
        }
        try {
            return builder.build();
        } catch (SSLException | RuntimeException e) {
            throw new IllegalArgumentException(
                    "cannot set up TLS with tls.cert-file "
                            + certFile
                            + " and tls.key-file "
                            + keyFile
                            + ": "
                            + e,
                    e);
        }
    }
}
