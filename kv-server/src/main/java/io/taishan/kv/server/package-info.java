/**
 * The kv-server node: {@link io.taishan.kv.server.KvServer} (lifecycle), its config, the command
 * line ({@link io.taishan.kv.server.KvServerMain}) and {@link
 * io.taishan.kv.server.EmbeddedKvServer} for tests and demos.
 */
package io.taishan.kv.server;
