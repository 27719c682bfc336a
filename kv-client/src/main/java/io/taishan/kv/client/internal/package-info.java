/**
 * Internals the kv-server shares with the client (reading PEM files). Not API: may change without
 * notice.
 */
package io.taishan.kv.client.internal;
