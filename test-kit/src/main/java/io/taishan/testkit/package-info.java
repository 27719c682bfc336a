/**
 * Test kit for users of Taishan: a kv-server for their Flink job tests, in the test's JVM ({@link
 * io.taishan.testkit.TaishanKvServerExtension}, a JUnit 5 extension) or in a Docker container
 * ({@link io.taishan.testkit.TaishanKvServerContainer}, Testcontainers).
 */
package io.taishan.testkit;
