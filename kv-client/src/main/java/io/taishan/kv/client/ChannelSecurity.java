package io.taishan.kv.client;

import io.grpc.ClientInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.taishan.kv.protocol.PemFiles;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.annotation.Nullable;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every channel of one client is built with: TLS or plaintext, and the bearer token. Made once
 * per {@link KvStores#connect}: the PEM files are read and checked there, and one {@link
 * SslContext} serves every channel to every node.
 */
final class ChannelSecurity {
    private static final Logger LOG = LoggerFactory.getLogger(ChannelSecurity.class);

    static final String TRUST_FILE = "TLS trust certificate file";
    static final String CERT_FILE = "TLS client certificate file";
    static final String KEY_FILE = "TLS client key file";

    @Nullable private final SslContext ssl;
    @Nullable private final ClientInterceptor token;

    private ChannelSecurity(@Nullable SslContext ssl, @Nullable ClientInterceptor token) {
        this.ssl = ssl;
        this.token = token;
    }

    /**
     * @throws IllegalArgumentException naming the file when a TLS file is missing, unreadable or
     *     malformed, or the client key does not belong to its certificate
     */
    static ChannelSecurity of(KvClientConfig config) {
        SslContext ssl = config.tls() == null ? null : sslContext(config.tls());
        ClientInterceptor token =
                config.token() == null ? null : new BearerToken(config.token()).interceptor();
        if (token != null && ssl == null) {
            LOG.warn(
                    "Sending the kv-server token to {} without TLS: anyone on the network path"
                            + " can read it. Configure TLS on the server and the client.",
                    config.addresses());
        }
        return new ChannelSecurity(ssl, token);
    }

    /** Plaintext or TLS, and the token on every call. */
    NettyChannelBuilder apply(NettyChannelBuilder builder) {
        if (ssl == null) {
            builder.usePlaintext();
        } else {
            builder.sslContext(ssl);
        }
        if (token != null) {
            builder.intercept(token);
        }
        return builder;
    }

    boolean usesTls() {
        return ssl != null;
    }

    private static SslContext sslContext(KvClientTls tls) {
        SslContextBuilder builder = GrpcSslContexts.forClient();
        Path trust = tls.trustCertFile();
        if (trust != null) {
            builder.trustManager(
                    PemFiles.certificates(trust, TRUST_FILE).toArray(new X509Certificate[0]));
        }
        Path certFile = tls.certFile();
        Path keyFile = tls.keyFile();
        if (certFile != null && keyFile != null) {
            List<X509Certificate> chain = PemFiles.certificates(certFile, CERT_FILE);
            PrivateKey key = PemFiles.privateKey(keyFile, KEY_FILE);
            PemFiles.checkKeyMatches(key, keyFile, KEY_FILE, chain.get(0), certFile, CERT_FILE);
            PemFiles.checkValidNow(chain.get(0), certFile, CERT_FILE);
            builder.keyManager(key, chain.toArray(new X509Certificate[0]));
        }
        try {
            return builder.build();
        } catch (SSLException e) {
            throw new IllegalArgumentException("cannot set up TLS with " + tls + ": " + e, e);
        }
    }
}
