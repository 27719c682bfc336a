/**
 * What only the Flink 2 build of the Nexmark harness has: Taishan with Flink SQL's asynchronous
 * state. Everything else of the harness is the shared source of {@code benchmarks-nexmark}, {@code
 * benchmarks-state} and {@code benchmarks}.
 */
package io.taishan.benchmarks.flink2;
