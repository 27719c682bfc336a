/**
 * Transport security and access control of a node: TLS from PEM files ({@link
 * io.taishan.kv.server.security.ServerTls}), bearer tokens from a token file, each scoped to table
 * name prefixes and to directories in checkpoint storage ({@link
 * io.taishan.kv.server.security.TokenFile}, {@link io.taishan.kv.server.security.TokenStore},
 * {@link io.taishan.kv.server.security.CheckpointPath}), and the interceptor that checks every call
 * before the service sees it ({@link io.taishan.kv.server.security.AuthInterceptor}).
 */
package io.taishan.kv.server.security;
