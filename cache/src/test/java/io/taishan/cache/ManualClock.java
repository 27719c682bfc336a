package io.taishan.cache;

import java.time.Instant;
import java.time.InstantSource;

/** A clock that moves only when told to; expiry tests need no sleeps. */
final class ManualClock implements InstantSource {
    private volatile long millis;

    ManualClock(long millis) {
        this.millis = millis;
    }

    void advance(long deltaMillis) {
        millis += deltaMillis;
    }

    @Override
    public long millis() {
        return millis;
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis);
    }
}
