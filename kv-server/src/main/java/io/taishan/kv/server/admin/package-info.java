/**
 * The admin CLI of the kv-server ({@link io.taishan.kv.server.admin.KvAdminMain}): health, tables,
 * snapshots and their sizes, and the drops an operator does by hand. It uses only the public client
 * API.
 */
@ParametersAreNonnullByDefault
package io.taishan.kv.server.admin;

import javax.annotation.ParametersAreNonnullByDefault;
