package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class TokenFileTest {
    private static final Path FILE = Path.of("/etc/taishan/tokens");
    private static final String T1 = "0123456789abcdef-one";
    private static final String T2 = "0123456789abcdef-two";

    private static Credentials parse(String... lines) {
        return TokenFile.parse(FILE, List.of(lines));
    }

    @Test
    void readsCommentsBlanksTabsScopesAndNames() {
        Credentials c =
                parse(
                        "# comment",
                        "",
                        "   # indented comment",
                        T1 + "\t*\tops",
                        "  " + T2 + "   job_a_,shared.x  ");
        assertThat(c.size()).isEqualTo(2);
        assertThat(c.adminCount()).isEqualTo(1);
        assertThat(c.authenticate(T1)).isEqualTo(new Credential("ops", true, List.of()));
        Credential scoped = c.authenticate(T2);
        assertThat(scoped)
                .isEqualTo(new Credential("line 5", false, List.of("job_a_", "shared.x")));
        assertThat(scoped.covers("job_a_table")).isTrue();
        assertThat(scoped.covers("shared.x")).isTrue();
        assertThat(scoped.covers("job_b_table")).isFalse();
        assertThat(scoped.covers("job_a")).isFalse();
        assertThat(c.authenticate(T1 + "x")).isNull();
        assertThat(c.authenticate(T1.substring(1))).isNull();
        assertThat(c.authenticate("")).isNull();
    }

    @Test
    void badLinesNameTheFileAndLineButNeverTheToken() {
        String where = "auth.token-file " + FILE + " line 2: ";
        expect(where + "expected '<token> <scope> [name]'", "#", T1);
        expect(where + "expected '<token> <scope> [name]'", "#", T1 + " * ops extra");
        expect(where + "the token is shorter than 16 characters", "#", "short * ops");
        expect(where + "the token is already on an earlier line", T1 + " *", T1 + " x_");
        expect(
                where + "the name 'ops' is already on an earlier line",
                T1 + " * ops",
                T2 + " x ops");
        expect(where + "table prefix 2 of the scope is empty", "#", T1 + " a_,,b_");
        expect(where + "table prefix 1 of the scope has a character", "#", T1 + " " + T2 + "/");
        expect(where + "the token has a character other than visible ASCII", "#", T1 + "é *");
    }

    @Test
    void aFileWithoutCredentialsIsRefused() {
        assertThatThrownBy(() -> parse("# only", "", "  "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("auth.token-file " + FILE + " holds no credential");
    }

    private static void expect(String message, String... lines) {
        assertThatThrownBy(() -> parse(lines))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(message)
                .hasMessageNotContaining(T1)
                .hasMessageNotContaining(T2);
    }
}
