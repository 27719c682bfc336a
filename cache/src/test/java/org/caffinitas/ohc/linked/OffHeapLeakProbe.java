package org.caffinitas.ohc.linked;

import java.lang.reflect.Field;
import java.util.Map;

/**
 * The allocations OHC has not freed, from the tracker its {@code debugOffHeapAccess} mode keeps
 * (enabled for this module's tests in the pom). Counts every OHC allocation of the JVM: entries,
 * hash tables, whatever any open cache holds.
 */
public final class OffHeapLeakProbe {
    private OffHeapLeakProbe() {}

    /** Whether OHC tracks allocations in this JVM; the probe is blind otherwise. */
    public static boolean enabled() {
        return tracker() != null;
    }

    /** Allocations made and not yet freed. */
    public static int outstandingAllocations() {
        Map<?, ?> tracker = tracker();
        if (tracker == null) {
            throw new IllegalStateException(
                    "OHC allocation tracking is off: run with -Dorg.caffinitas.ohc.debugOffHeapAccess=true");
        }
        return tracker.size();
    }

    private static Map<?, ?> tracker() {
        try {
            Field f = Uns.class.getDeclaredField("ohDebug");
            f.setAccessible(true);
            return (Map<?, ?>) f.get(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }
}
