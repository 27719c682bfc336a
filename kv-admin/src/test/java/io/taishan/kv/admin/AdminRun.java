package io.taishan.kv.admin;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** One in-process run of the admin CLI against {@code address}: exit code and what it printed. */
record AdminRun(int exit, String out, String err) {
    static AdminRun of(String address, String... command) {
        String[] args = new String[command.length + 2];
        args[0] = "--address";
        args[1] = address;
        System.arraycopy(command, 0, args, 2, command.length);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            exit = KvAdminMain.run(args, o, e);
        }
        return new AdminRun(
                exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
