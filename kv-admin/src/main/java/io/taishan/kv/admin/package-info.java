/**
 * The admin CLI of a kv-server cluster ({@link io.taishan.kv.admin.KvAdminMain}): health, tables,
 * snapshots and their sizes, the drops an operator does by hand, and {@code gc}. It talks to the
 * cluster through the public client API only, never through the server's classes.
 *
 * <table>
 *   <caption>Entry classes</caption>
 *   <tr><th>class</th><th>its job</th></tr>
 *   <tr><td>{@link io.taishan.kv.admin.KvAdminMain}</td><td>the command line: options, client
 *       config, exit codes, one line per failure</td></tr>
 *   <tr><td>{@code AdminCommands}</td><td>health, tables, describe, snapshots and the drop
 *       commands</td></tr>
 *   <tr><td>{@code GcCommand}</td><td>{@code gc}: what the kept checkpoints reference
 *       ({@code KeptSnapshots}, read by a child JVM with Flink's classes), the plan
 *       ({@code GcPlan}), the drops</td></tr>
 * </table>
 */
@ParametersAreNonnullByDefault
package io.taishan.kv.admin;

import javax.annotation.ParametersAreNonnullByDefault;
