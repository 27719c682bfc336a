package io.taishan.kv.client;

import java.util.concurrent.CountDownLatch;

/**
 * Stands in for {@code KvServerMain} in the tests of the child-JVM fixture, which must not depend
 * on the kv-server: serves {@link ScriptedKvService} and prints {@code LISTENING host:port} as the
 * real one does. With {@code --fail-with CODE} it prints a few lines and exits with CODE instead.
 */
public final class ScriptedKvServerMain {
    private ScriptedKvServerMain() {}

    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--fail-with")) {
                System.out.println("scripted server starting");
                System.err.println("scripted failure: data dir not writable");
                System.exit(Integer.parseInt(args[i + 1]));
            }
        }
        ScriptedCluster cluster = ScriptedCluster.start(1);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    cluster.close();
                                    System.out.println("scripted server stopped");
                                    stopped.countDown();
                                }));
        System.out.println("LISTENING " + cluster.address(0));
        stopped.await();
    }
}
