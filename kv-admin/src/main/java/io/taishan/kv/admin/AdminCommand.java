package io.taishan.kv.admin;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/** The commands of the admin CLI, with the operands each takes. */
enum AdminCommand {
    HEALTH("health", List.of(), false),
    CLUSTER("cluster", List.of(), false),
    TABLES("tables", List.of(), false),
    DESCRIBE("describe", List.of("table"), false),
    SNAPSHOTS("snapshots", List.of("table"), false),
    DROP_SNAPSHOT("drop-snapshot", List.of("table", "shard", "id"), true),
    DROP_SNAPSHOTS_BELOW("drop-snapshots-below", List.of("table", "id"), true),
    DROP_TABLE("drop-table", List.of("table"), true),
    GC("gc", List.of(), true);

    private final String word;
    private final List<String> operands;
    private final boolean drops;

    AdminCommand(String word, List<String> operands, boolean drops) {
        this.word = word;
        this.operands = operands;
        this.drops = drops;
    }

    static Optional<AdminCommand> of(String word) {
        return Arrays.stream(values()).filter(c -> c.word.equals(word)).findFirst();
    }

    String word() {
        return word;
    }

    List<String> operands() {
        return operands;
    }

    /** Drop commands only act with {@code --yes}; without it they show what they would drop. */
    boolean drops() {
        return drops;
    }

    String synopsis() {
        StringBuilder text = new StringBuilder(word);
        for (String operand : operands) {
            text.append(" <").append(operand).append('>');
        }
        if (this == SNAPSHOTS) {
            text.append(" [--shard N]");
        }
        if (this == GC) {
            text.append(
                    " --table-prefix P... (--keep PATH... | --kept-snapshots FILE | --keep-none)"
                            + " [--min-idle D]");
        }
        if (drops) {
            text.append(" [--yes]");
        }
        return text.toString();
    }
}
