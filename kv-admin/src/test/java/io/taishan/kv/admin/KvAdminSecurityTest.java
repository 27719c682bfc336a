package io.taishan.kv.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.testing.TestCertificates;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The admin CLI against a node with TLS and tokens: the same options as the client. */
class KvAdminSecurityTest {
    private static final String ADMIN = "admin-token-0123456789abcdef";
    private static final String TEAM_A = "team-a-token-0123456789abcdef";

    @TempDir static Path dir;

    private static TestCertificates certs;
    private static EmbeddedKvServer server;
    private static Path teamAToken;

    @BeforeAll
    static void start() throws IOException {
        certs = TestCertificates.create(dir.resolve("certs"));
        Path tokens =
                Files.writeString(
                        dir.resolve("tokens"), ADMIN + " * ops\n" + TEAM_A + " team_a_ team-a\n");
        teamAToken = Files.writeString(dir.resolve("team-a.token"), "# team a\n" + TEAM_A + "\n");
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .tlsCertFile(certs.server().certFile())
                                .tlsKeyFile(certs.server().keyFile())
                                .authTokenFile(tokens)
                                .build());
        try (KvStore kv =
                KvStores.connect(
                        KvClientConfig.forAddresses(server.address())
                                .tls(KvClientTls.trusting(certs.caCert()))
                                .token(ADMIN)
                                .build())) {
            kv.createTable("team_a_t", 2);
            kv.createTable("team_b_t", 2);
        }
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static Result admin(Map<String, String> env, String... args) {
        List<String> all = new ArrayList<>(List.of("--address", server.address()));
        all.addAll(List.of(args));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            exit = KvAdminMain.run(all.toArray(new String[0]), env, o, e);
        }
        return new Result(
                exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private record Result(int exit, String out, String err) {}

    private static String[] tls(String... rest) {
        List<String> all =
                new ArrayList<>(List.of("--tls-trust-cert-file", certs.caCert().toString()));
        all.addAll(List.of(rest));
        return all.toArray(new String[0]);
    }

    @Test
    void aTeamTokenFileListsOnlyItsTablesAndCannotDropAnothersTable() {
        Result tables = admin(Map.of(), tls("--token-file", teamAToken.toString(), "tables"));
        assertThat(tables.exit).as(tables.err).isZero();
        assertThat(tables.out).contains("team_a_t").doesNotContain("team_b_t");

        Result drop =
                admin(
                        Map.of(),
                        tls(
                                "--token-file",
                                teamAToken.toString(),
                                "drop-table",
                                "team_b_t",
                                "--yes"));
        assertThat(drop.exit).isEqualTo(1);
        assertThat(drop.err)
                .startsWith("taishan-kv-admin: ")
                .contains("PERMISSION_DENIED")
                .contains("does not cover table 'team_b_t'")
                .doesNotContain(TEAM_A);
        assertThat(admin(Map.of("TAISHAN_KV_TOKEN", ADMIN), tls("tables")).out)
                .contains("team_b_t");
    }

    @Test
    void theTokenFromTheEnvironmentAndHealth() {
        Result health = admin(Map.of("TAISHAN_KV_TOKEN", TEAM_A), tls("health"));
        assertThat(health.exit).as(health.err).isZero();
        assertThat(health.out).contains("SERVING");
    }

    @Test
    void noTokenOrNoTlsIsOneClearLine() {
        Result noToken = admin(Map.of(), tls("tables"));
        assertThat(noToken.exit).isEqualTo(1);
        assertThat(noToken.err.lines())
                .singleElement()
                .asString()
                .startsWith("taishan-kv-admin: not accepted by " + server.address())
                .contains("no bearer token");

        Result plaintext =
                admin(Map.of("TAISHAN_KV_TOKEN", ADMIN), "--timeout-ms", "10000", "tables");
        assertThat(plaintext.exit).isEqualTo(1);
        assertThat(plaintext.err).contains("if the server requires TLS");

        Result systemTrust = admin(Map.of("TAISHAN_KV_TOKEN", ADMIN), "--tls", "tables");
        assertThat(systemTrust.exit).isEqualTo(1);
        assertThat(systemTrust.err).contains("does not chain to a CA this client trusts");
    }

    @Test
    void badTlsOptionsAreUsageErrors() {
        Result half = admin(Map.of(), tls("--tls-cert-file", "c.pem", "tables"));
        assertThat(half.exit).isEqualTo(KvAdminMain.EXIT_USAGE);
        assertThat(half.err)
                .startsWith("taishan-kv-admin: --tls-cert-file and --tls-key-file go together");
        Result missing =
                admin(Map.of(), tls("--token-file", dir.resolve("none").toString(), "tables"));
        assertThat(missing.exit).isEqualTo(KvAdminMain.EXIT_USAGE);
        assertThat(missing.err).contains("cannot be read");
        Result missingCa =
                admin(
                        Map.of(),
                        "--tls-trust-cert-file",
                        dir.resolve("none.pem").toString(),
                        "tables");
        assertThat(missingCa.exit).isEqualTo(1);
        assertThat(missingCa.err)
                .startsWith(
                        "taishan-kv-admin: TLS trust certificate file " + dir.resolve("none.pem"));
    }
}
