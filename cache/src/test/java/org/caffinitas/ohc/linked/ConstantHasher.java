package org.caffinitas.ohc.linked;

import java.lang.reflect.Field;
import org.caffinitas.ohc.OHCache;

/**
 * A hasher that gives every key the same hash, installed into a live OHC cache (and the lookup
 * bridge attached to it): every entry then shares one segment and one bucket chain, so only the key
 * comparison tells keys apart.
 */
public final class ConstantHasher extends Hasher {
    @Override
    long hash(byte[] array) {
        return 42L;
    }

    @Override
    long hash(long address, long offset, int length) {
        return 42L;
    }

    /** Replaces the hasher of an empty cache, and of the bridge attached to it if not null. */
    public static void install(OHCache<?, ?> cache, TaishanLinkedAccess access) {
        try {
            if (cache.size() != 0) {
                throw new IllegalStateException("entries hashed with the old hasher");
            }
            set(OHCacheLinkedImpl.class, cache, new ConstantHasher());
            if (access != null) {
                set(TaishanLinkedAccess.class, access, new ConstantHasher());
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void set(Class<?> owner, Object target, Hasher hasher)
            throws ReflectiveOperationException {
        Field f = owner.getDeclaredField("hasher");
        f.setAccessible(true);
        f.set(target, hasher);
    }
}
