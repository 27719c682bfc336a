/** The connection to the kv-server: one shared client per cluster, metered calls. */
package io.taishan.backend.remote;
