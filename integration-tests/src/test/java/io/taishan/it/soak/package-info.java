/**
 * The soak: one stateful job checkpointing every second against one kv-server for a long time, its
 * curves sampled to a CSV, judged against bounds stated in advance and drawn; run only by the
 * {@code soak} Maven profile ({@code docs/soak.md}).
 */
package io.taishan.it.soak;
