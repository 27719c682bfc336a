package io.taishan.benchmarks.state;

import java.io.File;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.LocalRecoveryConfig;
import org.apache.flink.runtime.state.TaskStateManager;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.util.SimpleUserCodeClassLoader;

/**
 * The part of a task's {@link Environment} that {@code createKeyedStateBackend} reads: the job, the
 * execution config, the user-code class loader, a task state manager with local recovery off, a
 * task manager with a working directory, and whatever else a backend asks for ({@link
 * BackendUnderTest#environment()}). Flink's own state benchmarks bypass the environment by calling
 * the backend builders directly; here each backend is made through its public factory method, as a
 * task makes it, so the few answers it needs are given, and anything else fails with the method's
 * name rather than pulling Flink's test utilities (and their JUnit and Testcontainers) in.
 */
public final class BenchmarkTaskEnvironment {
    private BenchmarkTaskEnvironment() {}

    public static Environment create(JobID jobId, File workDir, Map<String, Object> extra) {
        Map<String, Object> taskManager = new HashMap<>();
        taskManager.put("getConfiguration", new Configuration());
        taskManager.put("getTmpWorkingDirectory", workDir);
        taskManager.put("getTmpDirectories", new String[] {workDir.getPath()});

        Map<String, Object> answers = new HashMap<>();
        answers.put("getJobID", jobId);
        answers.put("getExecutionConfig", new ExecutionConfig());
        answers.put(
                "getUserCodeClassLoader",
                SimpleUserCodeClassLoader.create(BenchmarkTaskEnvironment.class.getClassLoader()));
        answers.put(
                "getTaskStateManager",
                answering(
                        TaskStateManager.class,
                        Map.of(
                                "createLocalRecoveryConfig",
                                LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED)));
        answers.put("getTaskManagerInfo", answering(TaskManagerRuntimeInfo.class, taskManager));
        answers.putAll(extra);
        return answering(Environment.class, answers);
    }

    /** A {@code type} whose methods without arguments answer from {@code answers}, by name. */
    private static <T> T answering(Class<T> type, Map<String, Object> answers) {
        Object proxy =
                Proxy.newProxyInstance(
                        type.getClassLoader(),
                        new Class<?>[] {type},
                        (self, method, args) -> {
                            if (method.getDeclaringClass() == Object.class) {
                                return switch (method.getName()) {
                                    case "equals" -> self == args[0];
                                    case "hashCode" -> System.identityHashCode(self);
                                    default -> "benchmark " + type.getSimpleName();
                                };
                            }
                            Object answer =
                                    method.getParameterCount() == 0
                                            ? answers.get(method.getName())
                                            : null;
                            if (answer == null) {
                                throw new UnsupportedOperationException(
                                        "the benchmark's "
                                                + type.getSimpleName()
                                                + " has no "
                                                + method.getName());
                            }
                            return answer;
                        });
        return type.cast(proxy);
    }
}
