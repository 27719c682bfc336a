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
        String expected = "expected '<token> <scope> [name] [checkpoints=<dir>[,<dir>...]]'";
        expect(where + expected, "#", T1);
        expect(where + expected, "#", T1 + " * ops extra");
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
    void checkpointDirectoriesFollowTheScopeWithOrWithoutAName() {
        Credentials c =
                parse(
                        T1 + " team_a_ team-a checkpoints=s3://bucket/team-a/",
                        T2
                                + "\tteam_b_\tcheckpoints=hdfs://nn:8020/flink/team-b,"
                                + "file:///data/ckpt/team-b");
        Credential a = c.authenticate(T1);
        assertThat(a)
                .isEqualTo(
                        new Credential(
                                "team-a",
                                false,
                                List.of("team_a_"),
                                List.of(CheckpointPath.parse("s3://bucket/team-a"))));
        assertThat(a.mayName(CheckpointPath.parse("s3://bucket/team-a/job/shared/x"))).isTrue();
        assertThat(a.mayName(CheckpointPath.parse("s3://bucket/team-b/job/shared/x"))).isFalse();
        assertThat(a.toString())
                .isEqualTo("'team-a' (tables [team_a_], checkpoints [s3://bucket/team-a/])");
        Credential b = c.authenticate(T2);
        assertThat(b.name()).isEqualTo("line 2");
        assertThat(b.checkpointDirs())
                .extracting(Object::toString)
                .containsExactly("hdfs://nn:8020/flink/team-b", "file:///data/ckpt/team-b");
        assertThat(b.mayName(CheckpointPath.parse("file:/data/ckpt/team-b/chk-1"))).isTrue();
        assertThat(b.mayName(CheckpointPath.parse("s3://bucket/team-a/x"))).isFalse();
    }

    @Test
    void withoutCheckpointDirectoriesAScopedTokenMayNameNoPathAndAnAdminAny() {
        Credentials c = parse(T1 + " * ops", T2 + " team_a_ team-a");
        CheckpointPath anywhere = CheckpointPath.parse("s3://bucket/team-a/x");
        assertThat(c.authenticate(T1).mayName(anywhere)).isTrue();
        assertThat(c.authenticate(T2).mayName(anywhere)).isFalse();
        assertThat(c.authenticate(T2).checkpointDirs()).isEmpty();
    }

    @Test
    void badCheckpointFieldsNameTheFileAndLineButNeverTheToken() {
        String where = "auth.token-file " + FILE + " line 2: ";
        String expected = "expected '<token> <scope> [name] [checkpoints=<dir>[,<dir>...]]'";
        expect(
                where + "an admin token (scope *) may name every path; checkpoints= is for",
                "#",
                T1 + " * ops checkpoints=s3://b/x/");
        expect(where + "checkpoints= names no directory", "#", T1 + " a_ checkpoints=");
        expect(
                where + "checkpoint directory 2 of checkpoints= is empty",
                "#",
                T1 + " a_ n checkpoints=s3://b/a/,");
        expect(
                where + "checkpoint directory 2 of checkpoints= has a '..' segment",
                "#",
                T1 + " a_ n checkpoints=s3://b/a/,s3://b/a/../b");
        expect(
                where + "checkpoint directory 1 of checkpoints= has no scheme",
                "#",
                T1 + " a_ checkpoints=/data/ckpt/a");
        expect(where + expected, "#", T1 + " a_ checkpoints=s3://b/a/ name");
        expect(where + expected, "#", T1 + " a_ checkpoints=s3://b/a/ checkpoints=s3://b/c/");
        expect(where + expected, "#", T1 + " a_ n checkpoints=s3://b/a/ extra");
        // A misspelt key would otherwise be taken for a name, and the token given no directory.
        expect(
                where + "the third field looks like a misspelt checkpoints=",
                "#",
                T1 + " a_ Checkpoint=s3://b/a/");
        // The dir is not printed: a line with its fields mixed up could show a token there.
        expect(where + "checkpoint directory 1 of checkpoints=", "#", T1 + " a_ checkpoints=" + T2);
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
