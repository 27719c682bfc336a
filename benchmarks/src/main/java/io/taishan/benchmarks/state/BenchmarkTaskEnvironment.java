package io.taishan.benchmarks.state;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.LocalRecoveryConfig;
import org.apache.flink.runtime.state.TaskStateManager;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * The part of a task's {@link Environment} that {@code createKeyedStateBackend} reads: the
 * execution config, the user-code class loader and, for the HashMap backend, a task state manager
 * with local recovery off. Flink's own state benchmarks bypass the environment by calling the
 * backend builders directly; here each backend is created through its public factory method, so the
 * few answers it needs are given, and anything else fails with the method's name rather than
 * pulling Flink's test utilities (and their JUnit and Testcontainers) onto the classpath.
 */
final class BenchmarkTaskEnvironment {
    private BenchmarkTaskEnvironment() {}

    static Environment create() {
        ExecutionConfig executionConfig = new ExecutionConfig();
        UserCodeClassLoader classLoader =
                SimpleUserCodeClassLoader.create(BenchmarkTaskEnvironment.class.getClassLoader());
        TaskStateManager taskStateManager =
                answering(
                        TaskStateManager.class,
                        (method) ->
                                method.getName().equals("createLocalRecoveryConfig")
                                        ? LocalRecoveryConfig.BACKUP_AND_RECOVERY_DISABLED
                                        : null);
        return answering(
                Environment.class,
                (method) -> {
                    switch (method.getName()) {
                        case "getExecutionConfig":
                            return executionConfig;
                        case "getUserCodeClassLoader":
                            return classLoader;
                        case "getTaskStateManager":
                            return taskStateManager;
                        default:
                            return null;
                    }
                });
    }

    private interface Answers {
        /** The answer to a call without arguments, or null when there is none. */
        Object answer(Method method);
    }

    private static <T> T answering(Class<T> type, Answers answers) {
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
                                    method.getParameterCount() == 0 ? answers.answer(method) : null;
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
