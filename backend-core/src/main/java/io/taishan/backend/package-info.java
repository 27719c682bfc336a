/**
 * {@code TaishanStateBackend}: the Flink keyed state backend on the Taishan KV service, its
 * factory, options, states, key layout and timers.
 */
package io.taishan.backend;
