package io.taishan.kv.admin;

import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.KvUnavailableException;
import java.io.PrintStream;
import java.util.Map;

/**
 * {@code taishan-kv-admin --address host:port[,host:port] [TLS and token options] <command>}: what
 * an operator needs to see and clean up on a kv-server cluster, chiefly the pinned snapshots of
 * native savepoints (Flink never tells a backend a savepoint was disposed) and the tables of
 * finished jobs.
 *
 * <p>Tables go to stdout. A failure is one line on stderr with exit code 1 (including a node that
 * is not serving, for {@code health}), a bad command line exits 2, and a drop command without
 * {@code --yes} prints what it would drop and exits 3.
 */
public final class KvAdminMain {
    static final int EXIT_USAGE = 2;

    private static final String NAME = "taishan-kv-admin";

    /** The token, when no --token-file is given: an argument would show in {@code ps}. */
    static final String TOKEN_ENV = "TAISHAN_KV_TOKEN";

    private KvAdminMain() {}

    public static void main(String[] args) {
        if (System.getProperty("log4j.configurationFile") == null
                && System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty(
                    "log4j2.configurationFile", "io/taishan/kv/admin/kv-admin-log4j2.xml");
        }
        System.exit(run(args, System.out, System.err));
    }

    /** Runs one command; returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, System.getenv(), out, err);
    }

    /** With the environment given, for tests. */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        AdminArgs parsed;
        KvClientConfig config;
        try {
            parsed = AdminArgs.parse(args);
            if (parsed == null) {
                out.print(usage());
                return AdminCommands.EXIT_OK;
            }
            config = clientConfig(parsed, env);
        } catch (AdminUsageException | IllegalArgumentException e) {
            err.println(NAME + ": " + e.getMessage());
            err.print(usage());
            return EXIT_USAGE;
        }
        if (parsed.command() == AdminCommand.CLUSTER) {
            return cluster(parsed, config, out, err);
        }
        KvStore kv;
        try {
            kv = KvStores.connect(config);
        } catch (AuthenticationException e) {
            err.println(NAME + ": not accepted by " + parsed.addresses() + ": " + oneLine(e));
            return AdminCommands.EXIT_FAILED;
        } catch (KvException e) {
            err.println(NAME + ": cannot reach " + parsed.addresses() + ": " + oneLine(e));
            return AdminCommands.EXIT_FAILED;
        } catch (IllegalArgumentException e) {
            // A TLS file that is missing or malformed: found when connecting.
            err.println(NAME + ": " + e.getMessage());
            return AdminCommands.EXIT_FAILED;
        }
        try (kv) {
            return new AdminCommands(kv, out).run(parsed);
        } catch (AdminException e) {
            err.println(NAME + ": " + e.getMessage());
        } catch (KvUnavailableException e) {
            err.println(NAME + ": kv-server unavailable: " + oneLine(e));
        } catch (KvException e) {
            err.println(NAME + ": " + oneLine(e));
        } finally {
            out.flush();
        }
        return AdminCommands.EXIT_FAILED;
    }

    /** {@code cluster} asks every node itself, before (and whether or not) a store connects. */
    private static int cluster(
            AdminArgs parsed, KvClientConfig config, PrintStream out, PrintStream err) {
        try {
            return new ClusterCommand(config, out).run();
        } catch (AuthenticationException e) {
            err.println(NAME + ": not accepted by " + parsed.addresses() + ": " + oneLine(e));
        } catch (KvUnavailableException e) {
            err.println(NAME + ": cannot reach " + parsed.addresses() + ": " + oneLine(e));
        } catch (KvException e) {
            err.println(NAME + ": " + oneLine(e));
        } catch (IllegalArgumentException e) {
            err.println(NAME + ": " + e.getMessage());
        } finally {
            out.flush();
        }
        return AdminCommands.EXIT_FAILED;
    }

    /**
     * One attempt more than none: an admin command is run by hand, so a dead address should be
     * reported within about two timeouts rather than after the client's default back-off.
     */
    private static KvClientConfig clientConfig(AdminArgs args, Map<String, String> env) {
        KvClientConfig.Builder config =
                KvClientConfig.forAddresses(args.addresses())
                        .requestTimeout(args.timeout())
                        .maxAttempts(2)
                        .tls(args.tls());
        String envToken = env.get(TOKEN_ENV);
        if (args.tokenFile() != null) {
            config.tokenFile(args.tokenFile());
        } else if (envToken != null && !envToken.isBlank()) {
            config.token(envToken.trim());
        }
        return config.build();
    }

    private static String oneLine(Exception e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.replaceAll("\\s*\\R\\s*", " ");
    }

    static String usage() {
        StringBuilder text = new StringBuilder();
        text.append("usage: ")
                .append(NAME)
                .append(" --address host:port[,host:port] [--timeout-ms N] <command>\n")
                .append(
                        "  [--tls] [--tls-trust-cert-file PEM] [--tls-cert-file PEM --tls-key-file PEM]")
                .append(" [--token-file FILE]\n")
                .append("  (the token also from $" + TOKEN_ENV + ")\n")
                .append("commands:\n");
        for (AdminCommand command : AdminCommand.values()) {
            text.append("  ").append(command.synopsis()).append('\n');
        }
        text.append("drop commands without --yes print what they would drop and exit 3\n");
        text.append(
                "gc drops every table and shard snapshot under the prefixes that no kept"
                        + " checkpoint or savepoint\n"
                        + "  references (--keep: a chk-N or savepoint directory or its _metadata),"
                        + " sparing tables\n"
                        + "  leased, written or snapshotted within --min-idle (default 1h)\n");
        return text.toString();
    }
}
