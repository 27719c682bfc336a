package io.taishan.kv.admin;

import io.taishan.kv.client.KvClientTls;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.annotation.Nullable;

/**
 * The parsed command line. Options may stand anywhere among the operands, as operators type them
 * after the fact ({@code drop-table t --yes}).
 *
 * @param tls null for plaintext
 * @param tokenFile the bearer token's file, or null (then {@code TAISHAN_KV_TOKEN}, if set)
 */
record AdminArgs(
        String addresses,
        Duration timeout,
        AdminCommand command,
        List<String> operands,
        @Nullable Integer shard,
        boolean yes,
        @Nullable GcOptions gc,
        @Nullable KvClientTls tls,
        @Nullable Path tokenFile) {

    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    /** The arguments, or null when help was asked for. */
    @Nullable
    static AdminArgs parse(String[] args) {
        String addresses = null;
        Duration timeout = DEFAULT_TIMEOUT;
        Integer shard = null;
        boolean yes = false;
        GcOptions.Builder gc = new GcOptions.Builder();
        boolean tls = false;
        Path trustCertFile = null;
        Path certFile = null;
        Path keyFile = null;
        Path tokenFile = null;
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "-h", "--help", "help" -> {
                    return null;
                }
                case "--address" -> addresses = value(args, ++i, arg);
                case "--timeout-ms" ->
                        timeout = Duration.ofMillis(positive(value(args, ++i, arg), arg));
                case "--shard" -> shard = nonNegativeInt(value(args, ++i, arg), "--shard");
                case "--yes" -> yes = true;
                case "--keep" -> gc.keep(value(args, ++i, arg));
                case "--kept-snapshots" -> gc.keptSnapshots(value(args, ++i, arg));
                case "--keep-none" -> gc.keepNone();
                case "--table-prefix" -> gc.tablePrefix(value(args, ++i, arg));
                case "--min-idle" -> gc.minIdle(value(args, ++i, arg));
                case "--tls" -> tls = true;
                case "--tls-trust-cert-file" -> trustCertFile = Path.of(value(args, ++i, arg));
                case "--tls-cert-file" -> certFile = Path.of(value(args, ++i, arg));
                case "--tls-key-file" -> keyFile = Path.of(value(args, ++i, arg));
                case "--token-file" -> tokenFile = Path.of(value(args, ++i, arg));
                default -> {
                    if (arg.startsWith("-")) {
                        throw new AdminUsageException("unknown option '" + arg + "'");
                    }
                    positional.add(arg);
                }
            }
        }
        if (addresses == null) {
            throw new AdminUsageException("--address host:port[,host:port] is required");
        }
        if (positional.isEmpty()) {
            throw new AdminUsageException("no command given");
        }
        AdminCommand command =
                AdminCommand.of(positional.get(0))
                        .orElseThrow(
                                () ->
                                        new AdminUsageException(
                                                "unknown command '" + positional.get(0) + "'"));
        List<String> operands = List.copyOf(positional.subList(1, positional.size()));
        if (operands.size() != command.operands().size()) {
            throw new AdminUsageException("usage: " + command.synopsis());
        }
        if (shard != null && command != AdminCommand.SNAPSHOTS) {
            throw new AdminUsageException("--shard only applies to snapshots");
        }
        if (yes && !command.drops()) {
            throw new AdminUsageException("--yes only applies to the drop commands");
        }
        if (gc.given() && command != AdminCommand.GC) {
            throw new AdminUsageException(
                    "--keep, --kept-snapshots, --keep-none, --table-prefix and --min-idle only"
                            + " apply to gc");
        }
        if ((certFile == null) != (keyFile == null)) {
            throw new AdminUsageException("--tls-cert-file and --tls-key-file go together");
        }
        KvClientTls clientTls = null;
        if (tls || trustCertFile != null || certFile != null) {
            clientTls =
                    trustCertFile == null
                            ? KvClientTls.systemTrust()
                            : KvClientTls.trusting(trustCertFile);
            if (certFile != null) {
                clientTls = clientTls.withClientCertificate(certFile, keyFile);
            }
        }
        AdminArgs parsed =
                new AdminArgs(
                        addresses,
                        timeout,
                        command,
                        operands,
                        shard,
                        yes,
                        command == AdminCommand.GC ? gc.build() : null,
                        clientTls,
                        tokenFile);
        // Checked now so that a typo fails before anything connects.
        if (command.operands().contains("shard")) {
            parsed.shardOperand();
        }
        if (command.operands().contains("id")) {
            parsed.snapshotId();
        }
        return parsed;
    }

    String table() {
        return operands.get(command.operands().indexOf("table"));
    }

    int shardOperand() {
        return nonNegativeInt(operands.get(command.operands().indexOf("shard")), "shard");
    }

    long snapshotId() {
        String text = operands.get(command.operands().indexOf("id"));
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new AdminUsageException("bad snapshot id '" + text + "': expected a number");
        }
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length || args[i].startsWith("--")) {
            throw new AdminUsageException(flag + " needs a value");
        }
        return args[i];
    }

    private static long positive(String text, String what) {
        try {
            long value = Long.parseLong(text);
            if (value <= 0) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw new AdminUsageException("bad " + what + " '" + text + "': expected > 0");
        }
    }

    private static int nonNegativeInt(String text, String what) {
        try {
            int value = Integer.parseInt(text);
            if (value < 0) {
                throw new NumberFormatException();
            }
            return value;
        } catch (NumberFormatException e) {
            throw new AdminUsageException("bad " + what + " '" + text + "': expected >= 0");
        }
    }
}
