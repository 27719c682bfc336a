/**
 * The keyed states (value, list, map, reducing, aggregating) in RocksDB's byte layout behind a
 * state id, their registry and their factory; a state sees its backend only through {@link
 * io.taishan.backend.state.StateContext}.
 */
package io.taishan.backend.state;
