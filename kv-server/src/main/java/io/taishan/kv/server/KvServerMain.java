package io.taishan.kv.server;

import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * {@code taishan-kv-server --port P --data-dir D [--host H] [--config FILE] [--tls-cert-file F
 * --tls-key-file F [--tls-client-ca-file F]] [--auth-token-file F] [--metrics-port P]}: serves
 * until SIGTERM, then shuts down gracefully (flushes every shard). Prints one line to stdout,
 * {@code LISTENING host:port}, once it serves; with metrics on, {@code METRICS
 * http://host:port/metrics} before it. Bad arguments or config exit with 2, a failed start with 1,
 * each with a one-line reason on stderr.
 */
public final class KvServerMain {
    static final int EXIT_FAILED_START = 1;
    static final int EXIT_USAGE = 2;

    private static final String USAGE =
            "usage: taishan-kv-server --port P --data-dir D [--host H] [--config FILE]\n"
                    + "       [--tls-cert-file PEM --tls-key-file PEM [--tls-client-ca-file PEM]]"
                    + " [--auth-token-file FILE]\n"
                    + "       [--metrics-port P]";

    private KvServerMain() {}

    public static void main(String[] args) {
        // Before the first logger exists: our own log config, logging to stderr, and no log4j
        // shutdown hook, so the graceful shutdown can still log.
        if (System.getProperty("log4j.configurationFile") == null
                && System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty("log4j2.configurationFile", "taishan-kv-server-log4j2.xml");
        }
        System.setProperty("log4j.shutdownHookEnabled", "false");
        int exit = run(args, System.out, System.err);
        if (exit != 0) {
            System.exit(exit);
        }
    }

    /** Runs the server until it is shut down; returns the exit code. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        KvServerConfig config;
        try {
            config = parse(args);
        } catch (UsageException e) {
            err.println("taishan-kv-server: " + e.getMessage());
            err.println(USAGE);
            return EXIT_USAGE;
        } catch (IllegalArgumentException e) {
            err.println("taishan-kv-server: bad config: " + e.getMessage());
            return EXIT_USAGE;
        }
        if (config == null) {
            out.println(USAGE);
            return 0;
        }
        KvServer server;
        try {
            server = KvServer.start(config);
        } catch (KvServerStartupException e) {
            err.println("taishan-kv-server: cannot start: " + e.getMessage());
            return EXIT_FAILED_START;
        }
        Runtime.getRuntime()
                .addShutdownHook(new Thread(server::close, "taishan-kv-server-shutdown"));
        if (server.metricsUrl() != null) {
            out.println("METRICS " + server.metricsUrl() + "/metrics");
        }
        out.println("LISTENING " + server.address());
        out.flush();
        try {
            server.awaitTermination();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** The config from the command line, or null for {@code --help}. */
    static KvServerConfig parse(String[] args) {
        String host = null;
        Integer port = null;
        Path dataDir = null;
        Path configFile = null;
        Path certFile = null;
        Path keyFile = null;
        Path clientCaFile = null;
        Path tokenFile = null;
        Integer metricsPort = null;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "-h", "--help" -> {
                    return null;
                }
                case "--host" -> host = value(args, ++i, arg);
                case "--port" -> port = portValue(arg, value(args, ++i, arg));
                case "--data-dir" -> dataDir = Path.of(value(args, ++i, arg));
                case "--config" -> configFile = Path.of(value(args, ++i, arg));
                case "--tls-cert-file" -> certFile = Path.of(value(args, ++i, arg));
                case "--tls-key-file" -> keyFile = Path.of(value(args, ++i, arg));
                case "--tls-client-ca-file" -> clientCaFile = Path.of(value(args, ++i, arg));
                case "--auth-token-file" -> tokenFile = Path.of(value(args, ++i, arg));
                case "--metrics-port" -> metricsPort = portValue(arg, value(args, ++i, arg));
                default -> throw new UsageException("unknown argument '" + arg + "'");
            }
        }
        KvServerConfig.Builder b = KvServerConfig.builder();
        if (configFile != null) {
            b.properties(load(configFile));
        }
        if (host != null) {
            b.host(host);
        }
        if (port != null) {
            b.port(port);
        }
        if (dataDir != null) {
            b.dataDir(dataDir);
        }
        if (certFile != null) {
            b.tlsCertFile(certFile);
        }
        if (keyFile != null) {
            b.tlsKeyFile(keyFile);
        }
        if (clientCaFile != null) {
            b.tlsClientCaFile(clientCaFile);
        }
        if (tokenFile != null) {
            b.authTokenFile(tokenFile);
        }
        if (metricsPort != null) {
            b.metricsPort(metricsPort);
        }
        KvServerConfig config = b.build();
        if (config.dataDir() == null) {
            throw new UsageException("--data-dir is required (or data.dir in the config file)");
        }
        if (port == null && (configFile == null || !load(configFile).containsKey("port"))) {
            throw new UsageException("--port is required (or port in the config file)");
        }
        return config;
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length || args[i].startsWith("--")) {
            throw new UsageException(flag + " needs a value");
        }
        return args[i];
    }

    private static int portValue(String flag, String v) {
        try {
            int p = Integer.parseInt(v);
            if (p < 0 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException e) {
            throw new UsageException("bad " + flag + " '" + v + "': expected 0..65535");
        }
    }

    private static Properties load(Path file) {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read config file " + file + ": " + e);
        }
        return p;
    }

    /** A command line that does not parse. */
    static final class UsageException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }
}
