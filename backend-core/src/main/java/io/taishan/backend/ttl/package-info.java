/**
 * State TTL beyond Flink's wrapper: server-side expiry of the entries of TTL'd states, driven by
 * the subtask's TTL clock.
 */
package io.taishan.backend.ttl;
