package io.taishan.kv.server.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import javax.annotation.Nullable;

/**
 * The tokens of one version of the token file, immutable, found in time independent of the token.
 *
 * <p>Only SHA-256 digests of the tokens are kept. A presented token is hashed, then compared with
 * every entry by {@link MessageDigest#isEqual} (constant time for equal lengths) without stopping
 * at a match, so how long a lookup takes says nothing about how much of a token was right, or which
 * entry matched. Cost: one SHA-256 of the header (well under a microsecond for tokens of tens of
 * bytes) plus a 32-byte comparison per entry, on every call; a file of some hundreds of tokens adds
 * microseconds to a call that takes hundreds.
 */
public final class Credentials {
    private final byte[][] digests;
    private final Credential[] credentials;
    private final int admins;

    Credentials(List<byte[]> digests, List<Credential> credentials) {
        this.digests = digests.toArray(new byte[0][]);
        this.credentials = credentials.toArray(new Credential[0]);
        int a = 0;
        for (Credential c : credentials) {
            a += c.admin() ? 1 : 0;
        }
        this.admins = a;
    }

    /** The credential of this token, or null if the token is not in the file. */
    @Nullable
    public Credential authenticate(String token) {
        byte[] presented = digest(token);
        Credential found = null;
        for (int i = 0; i < digests.length; i++) {
            if (MessageDigest.isEqual(digests[i], presented)) {
                found = credentials[i];
            }
        }
        return found;
    }

    public int size() {
        return credentials.length;
    }

    public int adminCount() {
        return admins;
    }

    static byte[] digest(String token) {
        try {
            return MessageDigest.getInstance("SHA-256")
                    .digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
