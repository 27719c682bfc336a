package io.taishan.backend;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.api.common.JobID;

/**
 * The table of a keyed operator: {@code <prefix>_<job id>_<operator id>}.
 *
 * <p>Flink's operator identifier is {@code <operator class>_<32-hex OperatorID>_(<i>/<p>)}; the
 * subtask suffix changes with parallelism, so only the OperatorID is used. An identifier without
 * one (Flink's test harnesses pass e.g. {@code test_op}) is used whole, without a subtask suffix,
 * with characters the store does not allow replaced by '_'. The prefix must consist of allowed
 * characters only: replacing its characters could make two prefixes name the same tables.
 */
final class TableNames {
    private static final Pattern OPERATOR_ID =
            Pattern.compile("_([0-9a-fA-F]{32})_\\(\\d+/\\d+\\)$");
    private static final Pattern SUBTASK_SUFFIX = Pattern.compile("_\\(\\d+/\\d+\\)$");
    private static final Pattern NOT_ALLOWED = Pattern.compile("[^A-Za-z0-9_.-]");
    private static final int MAX_NAME_LENGTH = 200;

    private TableNames() {}

    /** A prefix that two jobs could share with another only by choosing the same one. */
    static void checkPrefix(String prefix) {
        if (prefix.isEmpty() || NOT_ALLOWED.matcher(prefix).find() || prefix.length() > 64) {
            throw new IllegalArgumentException(
                    "taishan.table.prefix '"
                            + prefix
                            + "' must be 1 to 64 letters, digits, '_', '.' or '-': other"
                            + " characters would be replaced, and different prefixes could then"
                            + " name the same tables");
        }
    }

    static String of(String prefix, JobID jobId, String operatorIdentifier) {
        checkPrefix(prefix);
        String operator;
        Matcher id = OPERATOR_ID.matcher(operatorIdentifier);
        if (id.find()) {
            operator = id.group(1).toLowerCase();
        } else {
            operator = SUBTASK_SUFFIX.matcher(operatorIdentifier).replaceFirst("");
        }
        String name = NOT_ALLOWED.matcher(prefix + "_" + jobId + "_" + operator).replaceAll("_");
        return name.length() > MAX_NAME_LENGTH ? name.substring(0, MAX_NAME_LENGTH) : name;
    }
}
