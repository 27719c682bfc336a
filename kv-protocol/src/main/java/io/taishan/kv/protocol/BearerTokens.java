package io.taishan.kv.protocol;

import io.grpc.Metadata;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.annotation.Nullable;

/**
 * The bearer token on the wire, for both ends: the {@code authorization: Bearer <token>} header
 * (RFC 6750), what a token may consist of, and the client's token file. Messages never contain a
 * token.
 */
public final class BearerTokens {
    /** The header every authenticated call carries. */
    public static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /** Far above any real token; keeps a header's size bounded. */
    public static final int MAX_LENGTH = 4096;

    private static final String SCHEME = "Bearer ";

    private BearerTokens() {}

    public static String headerValue(String token) {
        return SCHEME + token;
    }

    /** The token of an {@code authorization} header value, or null if it is not a bearer token. */
    @Nullable
    public static String tokenOf(@Nullable String headerValue) {
        if (headerValue == null
                || headerValue.length() <= SCHEME.length()
                || !headerValue.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
            return null;
        }
        return headerValue.substring(SCHEME.length()).trim();
    }

    /**
     * Why {@code token} cannot be a token (it must fit an HTTP/2 header as is: visible ASCII, no
     * spaces, at most {@value #MAX_LENGTH} characters), or null if it can.
     */
    @Nullable
    public static String problemWith(String token) {
        if (token.isEmpty()) {
            return "the token is empty";
        }
        if (token.length() > MAX_LENGTH) {
            return "the token is longer than " + MAX_LENGTH + " characters";
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                return "the token has a character other than visible ASCII (no spaces) at"
                        + " position "
                        + (i + 1);
            }
        }
        return null;
    }

    /**
     * The token in a client's token file: its first line that is neither blank nor a comment
     * ({@code #}), trimmed.
     *
     * @throws IllegalArgumentException naming the file (never the token) if it cannot be read or
     *     holds no valid token
     */
    public static String readTokenFile(Path file, String what) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException(what + " " + file + " cannot be read: " + e, e);
        }
        for (String line : lines) {
            String trimmed = line.trim();
            if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                continue;
            }
            String problem = problemWith(trimmed);
            if (problem != null) {
                throw new IllegalArgumentException(what + " " + file + ": " + problem);
            }
            return trimmed;
        }
        throw new IllegalArgumentException(what + " " + file + " holds no token");
    }
}
