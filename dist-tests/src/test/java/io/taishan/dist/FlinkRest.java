package io.taishan.dist;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The JobManager's REST API, as an operator's tooling reads it: job state, checkpoint counts and
 * the restored checkpoint, the exception history, registered TaskManagers.
 */
final class FlinkRest {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

    private final URI base;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final ObjectMapper json = new ObjectMapper();

    FlinkRest(String host, int port) {
        this.base = URI.create("http://" + host + ":" + port);
    }

    /** The parsed body of a GET; throws on a connection failure or a status other than 200. */
    JsonNode get(String path) throws IOException, InterruptedException {
        HttpRequest request =
                HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT).GET().build();
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException(
                    "GET " + path + ": " + response.statusCode() + " " + response.body());
        }
        return json.readTree(response.body());
    }

    /**
     * TaskManagers registered with the ResourceManager (a killed one until its heartbeat times
     * out).
     */
    int taskManagers() throws IOException, InterruptedException {
        return get("/taskmanagers").path("taskmanagers").size();
    }

    JobStatus job(String jobId) throws IOException, InterruptedException {
        JsonNode job = get("/jobs/" + jobId);
        boolean allRunning = job.path("vertices").size() > 0;
        for (JsonNode vertex : job.path("vertices")) {
            allRunning &= "RUNNING".equals(vertex.path("status").asText());
        }
        JsonNode checkpoints = get("/jobs/" + jobId + "/checkpoints");
        JsonNode latest = checkpoints.path("latest");
        return new JobStatus(
                job.path("state").asText(),
                allRunning,
                checkpoints.path("counts").path("completed").asLong(),
                checkpoints.path("counts").path("restored").asLong(),
                latest.path("completed").path("id").asLong(-1),
                latest.path("restored").path("id").asLong(-1));
    }

    /** The exception history, newest first: each failure's exception and its root cause. */
    List<String> exceptions(String jobId) throws IOException, InterruptedException {
        List<String> causes = new ArrayList<>();
        for (JsonNode entry :
                get("/jobs/" + jobId + "/exceptions?maxExceptions=50")
                        .path("exceptionHistory")
                        .path("entries")) {
            List<String> trace = entry.path("stacktrace").asText().lines().toList();
            String rootCause =
                    trace.stream()
                            .filter(line -> line.startsWith("Caused by: "))
                            .reduce((first, second) -> second)
                            .orElse(trace.isEmpty() ? "" : trace.get(0));
            causes.add(
                    entry.path("exceptionName").asText()
                            + " in "
                            + entry.path("taskName").asText("(global)")
                            + ", root cause "
                            + rootCause);
        }
        return causes;
    }

    /** What the REST API says about a job at one moment. */
    record JobStatus(
            String state,
            boolean allVerticesRunning,
            long completedCheckpoints,
            long restoredCheckpoints,
            long latestCompletedId,
            long latestRestoredId) {

        /** Running on every subtask and checkpointed at least once since its last restore. */
        boolean runningAndCheckpointedSinceRestore() {
            return "RUNNING".equals(state)
                    && allVerticesRunning
                    && latestCompletedId > latestRestoredId;
        }

        boolean isGloballyTerminal() {
            return state.equals("FINISHED") || state.equals("FAILED") || state.equals("CANCELED");
        }
    }
}
