/**
 * The write path: {@link io.taishan.backend.write.StateWriter} takes every mutation to the ordered,
 * batched {@link io.taishan.backend.write.WriteBatchQueue} and to the read path's layers; {@link
 * io.taishan.backend.write.PendingWrites} indexes what the server has not acknowledged.
 */
package io.taishan.backend.write;
