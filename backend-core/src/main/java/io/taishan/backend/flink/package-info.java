/**
 * Where Flink 1.20 and Flink 2 differ for a keyed state backend, and nothing else: the bases of the
 * state backend, keyed backend and builder (constructors, state metrics, how the current key is
 * set), the meta info of a restored state and the migration of stored values.
 *
 * <p>Every class here exists twice with the same name and members, once per Flink line: {@code
 * backend-core/src/main-flink-1.20/java} and {@code backend-flink2/src/main/java}. Everything else
 * in the backend is one source, compiled once against each line.
 */
package io.taishan.backend.flink;
