package io.taishan.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Flink 1.20 standalone session cluster on this host, every process a JVM of its own, started the
 * way {@code bin/jobmanager.sh}, {@code bin/taskmanager.sh} and {@code bin/flink} start them (no
 * Flink distribution can be downloaded here, so the Maven artifacts stand in for {@code
 * flink-dist}):
 *
 * <ul>
 *   <li>a Flink home with {@code conf/config.yaml}, {@code conf/log4j*.properties}, {@code lib/}
 *       (where a user copies the plugin jar), {@code log/} and an empty {@code plugins/};
 *   <li>the class path as {@code config.sh}'s {@code constructFlinkClassPath}: the jars of {@code
 *       lib/}, sorted, then the distribution (here the Flink artifacts' class path);
 *   <li>JVM options as {@code config.sh} reads them, through {@code BashJavaUtils
 *       UPDATE_AND_GET_FLINK_CONFIGURATION -flatten}: {@code -XX:+IgnoreUnrecognizedVMOptions},
 *       {@code env.java.default-opts.all}, {@code env.java.opts.all}, then the process kind's;
 *   <li>memory flags and dynamic properties from {@code BashJavaUtils GET_JM_RESOURCE_PARAMS} /
 *       {@code GET_TM_RESOURCE_PARAMS}, split on blanks as the scripts do;
 *   <li>{@code -Dlog.file}, {@code -Dlog4j.configuration(File)} as {@code flink-daemon.sh} sets
 *       them, and {@code FLINK_CONF_DIR} etc. in the environment as {@code config.sh} exports them.
 * </ul>
 */
final class StandaloneFlinkCluster implements AutoCloseable {
    static final String JOB_MANAGER_MAIN =
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint";
    static final String TASK_MANAGER_MAIN =
            "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";
    static final String CLI_MAIN = "org.apache.flink.client.cli.CliFrontend";
    static final String BASH_JAVA_UTILS = "org.apache.flink.runtime.util.bash.BashJavaUtils";

    private static final String EXECUTION_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:";
    private static final Duration UTILITY_TIMEOUT = Duration.ofSeconds(60);
    private static final Pattern SUBMITTED =
            Pattern.compile("Job has been submitted with JobID ([0-9a-f]{32})");

    private final Path home;
    private final Path conf;
    private final Path logs;
    private final String classpath;
    private final int restPort;
    private final List<ChildProcess> processes = new ArrayList<>();
    private final Map<String, String> flatConfig;
    private final Map<String, String> environment;
    private List<String> taskManagerResourceParams;

    private StandaloneFlinkCluster(
            Path home, String classpath, int restPort, Map<String, String> flatConfig) {
        this.home = home;
        this.conf = home.resolve("conf");
        this.logs = home.resolve("log");
        this.classpath = classpath;
        this.restPort = restPort;
        this.flatConfig = flatConfig;
        this.environment = environment(home);
    }

    /** What {@code config.sh} exports. */
    private static Map<String, String> environment(Path home) {
        Map<String, String> environment = new HashMap<>();
        environment.put("FLINK_HOME", home.toString());
        environment.put("FLINK_CONF_DIR", home.resolve("conf").toString());
        environment.put("FLINK_LIB_DIR", home.resolve("lib").toString());
        environment.put("FLINK_PLUGINS_DIR", home.resolve("plugins").toString());
        environment.put("FLINK_OPT_DIR", home.resolve("opt").toString());
        environment.put("FLINK_BIN_DIR", home.resolve("bin").toString());
        return environment;
    }

    /**
     * Lays out a Flink home: {@code config.yaml} with the given entries plus this host's addresses
     * and free ports, the jars to drop into {@code lib/}, and the distribution's class path.
     */
    static StandaloneFlinkCluster install(
            Path home, List<Path> distribution, List<Path> libJars, Map<String, String> config)
            throws IOException, InterruptedException {
        Path conf = Files.createDirectories(home.resolve("conf"));
        Path lib = Files.createDirectories(home.resolve("lib"));
        Files.createDirectories(home.resolve("log"));
        Files.createDirectories(home.resolve("plugins"));
        for (Path jar : libJars) {
            Files.copy(jar, lib.resolve(jar.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }

        int restPort = freePort();
        Map<String, String> yaml = new LinkedHashMap<>();
        yaml.put("jobmanager.rpc.address", "127.0.0.1");
        yaml.put("jobmanager.rpc.port", Integer.toString(freePort()));
        yaml.put("jobmanager.bind-host", "127.0.0.1");
        yaml.put("taskmanager.host", "127.0.0.1");
        yaml.put("taskmanager.bind-host", "127.0.0.1");
        yaml.put("rest.address", "127.0.0.1");
        yaml.put("rest.bind-address", "127.0.0.1");
        yaml.put("rest.port", Integer.toString(restPort));
        yaml.putAll(config);
        StringBuilder text = new StringBuilder("# Written by StandaloneFlinkCluster.\n");
        yaml.forEach((key, value) -> text.append(key).append(": ").append(value).append('\n'));
        Files.writeString(conf.resolve("config.yaml"), text, StandardCharsets.UTF_8);
        Files.writeString(conf.resolve("log4j.properties"), log4jProperties("MainAppender"));
        Files.writeString(conf.resolve("log4j-cli.properties"), log4jProperties("FileAppender"));

        // constructFlinkClassPath: lib/*.jar sorted, flink-dist last.
        List<String> entries = new ArrayList<>();
        try (Stream<Path> jars = Files.list(lib)) {
            jars.filter(p -> p.toString().endsWith(".jar"))
                    .sorted()
                    .forEach(p -> entries.add(p.toString()));
        }
        distribution.forEach(p -> entries.add(p.toString()));
        String classpath = String.join(":", entries);

        Map<String, String> flat = new HashMap<>();
        for (String line :
                bashJavaUtils(
                        classpath,
                        home,
                        "UPDATE_AND_GET_FLINK_CONFIGURATION",
                        "--configDir",
                        conf.toString(),
                        "-flatten")) {
            int colon = line.indexOf(": ");
            if (colon > 0) {
                flat.put(line.substring(0, colon), line.substring(colon + 2).trim());
            }
        }
        return new StandaloneFlinkCluster(home, classpath, restPort, flat);
    }

    FlinkRest rest() {
        return new FlinkRest("127.0.0.1", restPort);
    }

    Path home() {
        return home;
    }

    String classpath() {
        return classpath;
    }

    /** {@code bin/jobmanager.sh start}: a standalone session entry point. */
    ChildProcess startJobManager() throws IOException, InterruptedException {
        List<String> params =
                bashJavaUtils(
                        classpath, home, "GET_JM_RESOURCE_PARAMS", "--configDir", conf.toString());
        List<String> args = new ArrayList<>(split(dynamicParameters(params)));
        args.addAll(List.of("--configDir", conf.toString(), "--executionMode", "cluster"));
        return daemon(
                "standalonesession", JOB_MANAGER_MAIN, jvmParameters(params), "jobmanager", args);
    }

    /**
     * {@code bin/taskmanager.sh start}. The resource parameters are computed for the first
     * TaskManager and reused: the configuration does not change, and each BashJavaUtils JVM costs
     * seconds on a loaded machine.
     */
    ChildProcess startTaskManager(String name) throws IOException, InterruptedException {
        if (taskManagerResourceParams == null) {
            taskManagerResourceParams =
                    bashJavaUtils(
                            classpath,
                            home,
                            "GET_TM_RESOURCE_PARAMS",
                            "--configDir",
                            conf.toString());
        }
        List<String> params = taskManagerResourceParams;
        List<String> args = new ArrayList<>(split(dynamicParameters(params)));
        args.addAll(List.of("--configDir", conf.toString()));
        return daemon(name, TASK_MANAGER_MAIN, jvmParameters(params), "taskmanager", args);
    }

    /** {@code bin/flink run -d jar args...}; returns the job id the client printed. */
    String submitDetached(Path jobJar, String... jobArgs) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(java());
        command.addAll(javaOptions("client"));
        command.add("-Dlog.file=" + logs.resolve("flink-client.log"));
        command.add("-Dlog4j.configuration=file:" + conf.resolve("log4j-cli.properties"));
        command.add("-Dlog4j.configurationFile=file:" + conf.resolve("log4j-cli.properties"));
        command.add("-classpath");
        command.add(classpath);
        command.add(CLI_MAIN);
        command.addAll(List.of("run", "-d", jobJar.toString()));
        command.addAll(Arrays.asList(jobArgs));
        ChildProcess client = start("flink-client", command, logs.resolve("flink-client.out"));
        try {
            if (!client.waitFor(Duration.ofSeconds(120))) {
                throw new IllegalStateException(
                        "flink run did not return within 120 s:\n" + client.tail(40));
            }
            Matcher m = SUBMITTED.matcher(client.output());
            if (client.exitValue() != 0 || !m.find()) {
                throw new IllegalStateException(
                        "flink run failed (exit " + client.exitValue() + "):\n" + client.tail(60));
            }
            return m.group(1);
        } finally {
            client.close();
        }
    }

    /** The last lines of a process's log4j file, for failure messages. */
    String logTail(String logName, int lines) {
        Path log = logs.resolve(logName + ".log");
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return log
                    + ":\n"
                    + String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(no " + log + ")";
        }
    }

    /** Kills every process this cluster started that is still running. */
    @Override
    public void close() {
        for (ChildProcess process : processes) {
            process.close();
        }
    }

    private ChildProcess daemon(
            String name, String mainClass, String jvmParameters, String kind, List<String> args) {
        List<String> command = new ArrayList<>(java());
        command.addAll(split(jvmParameters));
        command.addAll(javaOptions(kind));
        command.add("-Dlog.file=" + logs.resolve(name + ".log"));
        command.add("-Dlog4j.configuration=file:" + conf.resolve("log4j.properties"));
        command.add("-Dlog4j.configurationFile=file:" + conf.resolve("log4j.properties"));
        command.add("-Dlogback.configurationFile=file:" + conf.resolve("logback.xml"));
        command.add("-classpath");
        command.add(classpath);
        command.add(mainClass);
        command.addAll(args);
        return start(name, command, logs.resolve(name + ".out"));
    }

    private ChildProcess start(String name, List<String> command, Path output) {
        ChildProcess process = ChildProcess.start(name, command, environment, output);
        processes.add(process);
        return process;
    }

    /**
     * {@code config.sh}: {@code -XX:+IgnoreUnrecognizedVMOptions}, then {@code
     * env.java.default-opts.all} and {@code env.java.opts.all}; {@code flink-daemon.sh} / {@code
     * bin/flink} add the process kind's default and own options.
     */
    private List<String> javaOptions(String kind) {
        List<String> options = new ArrayList<>();
        options.add("-XX:+IgnoreUnrecognizedVMOptions");
        options.addAll(split(flatConfig.getOrDefault("env.java.default-opts.all", "")));
        options.addAll(split(flatConfig.getOrDefault("env.java.opts.all", "")));
        options.addAll(split(flatConfig.getOrDefault("env.java.default-opts." + kind, "")));
        options.addAll(split(flatConfig.getOrDefault("env.java.opts." + kind, "")));
        return options;
    }

    /** {@code runBashJavaUtilsCmd} + {@code extractExecutionResults}: the result lines only. */
    private static List<String> bashJavaUtils(String classpath, Path home, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(java());
        command.add("-classpath");
        command.add(classpath);
        command.add(BASH_JAVA_UTILS);
        command.addAll(Arrays.asList(args));
        Path output =
                Files.createTempFile(
                        home.resolve("log"), "bash-java-utils-" + args[0] + "-", ".out");
        try (ChildProcess utility =
                ChildProcess.start(args[0], command, environment(home), output)) {
            if (!utility.waitFor(UTILITY_TIMEOUT) || utility.exitValue() != 0) {
                throw new IllegalStateException(
                        "BashJavaUtils " + args[0] + " failed:\n" + utility.tail(40));
            }
            List<String> results = new ArrayList<>();
            for (String line : utility.output().lines().toList()) {
                if (line.startsWith(EXECUTION_PREFIX)) {
                    results.add(line.substring(EXECUTION_PREFIX.length()));
                }
            }
            return results;
        }
    }

    private static String jvmParameters(List<String> resourceParams) {
        checkTwoLines(resourceParams);
        return resourceParams.get(0);
    }

    private static String dynamicParameters(List<String> resourceParams) {
        checkTwoLines(resourceParams);
        return resourceParams.get(1);
    }

    private static void checkTwoLines(List<String> resourceParams) {
        if (resourceParams.size() != 2) {
            throw new IllegalStateException(
                    "BashJavaUtils printed "
                            + resourceParams.size()
                            + " result lines, not 2: "
                            + resourceParams);
        }
    }

    private static List<String> java() {
        return new ArrayList<>(
                List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    }

    /** The shell's word splitting of an unquoted expansion. */
    private static List<String> split(String words) {
        List<String> parts = new ArrayList<>();
        for (String part : words.trim().split("\\s+")) {
            if (!part.isEmpty()) {
                parts.add(part);
            }
        }
        return parts;
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Flink's {@code conf/log4j.properties}, reduced: one file per process at INFO. */
    private static String log4jProperties(String appender) {
        return String.join(
                "\n",
                "monitorInterval = 30",
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = " + appender,
                "logger.pekko.name = org.apache.pekko",
                "logger.pekko.level = INFO",
                "logger.shaded_zookeeper.name = org.apache.flink.shaded.zookeeper3",
                "logger.shaded_zookeeper.level = INFO",
                "appender.main.name = " + appender,
                "appender.main.type = File",
                "appender.main.append = true",
                "appender.main.fileName = ${sys:log.file}",
                "appender.main.layout.type = PatternLayout",
                "appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n",
                "");
    }
}
