/** Timers (priority-queue state) in the store: the REMOTE timer service. */
package io.taishan.backend.timers;
