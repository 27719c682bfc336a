package io.taishan.kv.server.security;

import java.net.SocketAddress;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs refused calls: every one at DEBUG, and at most one WARN line every {@value
 * #WARN_EVERY_SECONDS} seconds with the number refused since, so that a client retrying a bad token
 * in a loop (or a scan of the port) cannot flood the log. Never a token: a credential is named by
 * its name in the token file.
 */
final class DenialLog {
    private static final Logger LOG = LoggerFactory.getLogger(DenialLog.class);
    static final long WARN_EVERY_SECONDS = 10;

    private final AtomicLong nextWarnNanos = new AtomicLong(System.nanoTime());
    private final AtomicLong suppressed = new AtomicLong();

    void unauthenticated(String method, String why, @Nullable SocketAddress peer) {
        log("UNAUTHENTICATED", method, why, peer);
    }

    void denied(Credential credential, String method, String why, @Nullable SocketAddress peer) {
        log("PERMISSION_DENIED", method, why, peer);
    }

    private void log(String status, String method, String why, @Nullable SocketAddress peer) {
        LOG.debug("{} {} from {}: {}", status, method, peer, why);
        long now = System.nanoTime();
        long next = nextWarnNanos.get();
        if (now - next >= 0
                && nextWarnNanos.compareAndSet(next, now + WARN_EVERY_SECONDS * 1_000_000_000L)) {
            long before = suppressed.getAndSet(0);
            LOG.warn(
                    "Refused {} from {} with {}: {}{}",
                    method,
                    peer,
                    status,
                    why,
                    before == 0
                            ? ""
                            : " (and "
                                    + before
                                    + " other call(s) refused since the last such line)");
        } else {
            suppressed.incrementAndGet();
        }
    }
}
