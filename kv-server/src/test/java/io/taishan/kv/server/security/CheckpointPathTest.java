package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CheckpointPathTest {
    @ParameterizedTest(name = "{0} covers {1}: {2}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '"',
            value = {
                // dir                                | path                                   |
                // covered
                "s3://bucket/team-a/                  | s3://bucket/team-a/job/shared/f1       | true",
                "s3://bucket/team-a                   | s3://bucket/team-a/job/chk-3           | true",
                "s3://bucket/team-a/                  | s3://bucket/team-a                     | true",
                "s3://bucket/team-a/                  | s3://bucket/team-a/                    | true",
                "S3://bucket/team-a/                  | s3://bucket/team-a/x                   | true",
                "s3://bucket/team-a/                  | S3://bucket/team-a/x                   | true",
                "s3://bucket/                         | s3://bucket/anything/x                 | true",
                "hdfs://nn:8020/flink/team-a          | hdfs://NN:8020/flink/team-a/x          | true",
                "hdfs://user@nn:8020/flink/team-a     | hdfs://user@nn:8020/flink/team-a/x     | true",
                "hdfs://[::1]:8020/team-a             | hdfs://[::1]:8020/team-a/x             | true",
                "file:///data/ckpt/team-a             | file:/data/ckpt/team-a/shared/x        | true",
                "file:/data/ckpt/team-a               | file:///data/ckpt/team-a/shared/x      | true",
                "file:///data/ckpt/team-a             | file:///data/ckpt/team-a/x             | true",
                // A segment is compared whole and exactly.
                "s3://bucket/team-a/                  | s3://bucket/team-ab/x                  | false",
                "s3://bucket/team-a                   | s3://bucket/team-ab                    | false",
                "s3://bucket/team-a/                  | s3://bucket/Team-a/x                   | false",
                "s3://bucket/team-a/                  | s3://bucket/                           | false",
                "s3://bucket/team-a/job               | s3://bucket/team-a/x                   | false",
                // Another scheme, bucket, host, port or user.
                "s3://bucket/team-a/                  | s3a://bucket/team-a/x                  | false",
                "s3://bucket/team-a/                  | s3://bucket2/team-a/x                  | false",
                "s3://bucket/team-a/                  | s3://bucke/team-a/x                    | false",
                "hdfs://nn:8020/flink/team-a          | hdfs://nn:8021/flink/team-a/x          | false",
                "hdfs://nn:8020/flink/team-a          | hdfs://nn/flink/team-a/x               | false",
                "hdfs://nn/flink/team-a               | hdfs://nn:8020/flink/team-a/x          | false",
                "hdfs://user@nn/flink/team-a          | hdfs://other@nn/flink/team-a/x         | false",
                "hdfs://user@nn/flink/team-a          | hdfs://nn/flink/team-a/x               | false",
                // file: ignores the authority when it opens a file; a path with one is not ours.
                "file:///data/ckpt/team-a             | file://evil/data/ckpt/team-a/x         | false",
                "file:///data/ckpt/team-a             | file://localhost/data/ckpt/team-a/x    | false",
            })
    void coverage(String dir, String path, boolean covered) {
        assertThat(CheckpointPath.parse(dir).covers(CheckpointPath.parse(path))).isEqualTo(covered);
        if (covered) {
            // Cross-check with what the node will use: Flink's reading of the path is under the
            // directory too.
            String flinkPath = new org.apache.flink.core.fs.Path(path).toUri().getPath();
            String flinkDir = new org.apache.flink.core.fs.Path(dir).toUri().getPath();
            assertThat(flinkPath.equals(flinkDir) || flinkPath.startsWith(withSlash(flinkDir)))
                    .as(flinkPath + " under " + flinkDir)
                    .isTrue();
        }
    }

    private static String withSlash(String s) {
        return s.endsWith("/") ? s : s + "/";
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '"',
            value = {
                "s3://bucket/team-a/../team-b/x       | has a '..' segment",
                "s3://bucket/team-a/..                | has a '..' segment",
                "file:/data/ckpt/team-a/./x           | has a '.' segment",
                "s3://bucket/team-a//x                | has an empty segment",
                "file:////data/ckpt                   | has an empty segment",
                "s3://bucket                          | has no absolute path",
                "s3:bucket/team-a                     | has no absolute path",
                "file:data/ckpt                       | has no absolute path",
                "/data/ckpt/team-a                    | has no scheme",
                "data/ckpt/team-a                     | has no scheme",
                "c:/data/ckpt                         | does not start with a scheme",
                "1s://bucket/x                        | does not start with a scheme",
                "s3://bucket/team-a\\..\\team-b       | has whitespace, a control character",
                "s3://bucket/team-a/%2e%2e/team-b     | has whitespace, a control character",
                "s3://bucket/team-a/x?y               | has whitespace, a control character",
                "s3://bucket/team-a/x#y               | has whitespace, a control character",
                "hdfs://nn:port/x                     | has an authority whose port is not",
                "hdfs://nn:/x                         | has an authority whose port is not",
            })
    void refusedOutright(String path, String why) {
        assertThatThrownBy(() -> CheckpointPath.parse(path))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(why)
                .hasMessageNotContaining(path);
    }

    @Test
    void whitespaceAndControlCharactersAreRefused() {
        // Flink trims a path: 's3://b/team-a/.. ' would be s3://b/.
        for (String path :
                new String[] {
                    "s3://bucket/team-a/.. ",
                    " s3://bucket/team-a/x",
                    "s3://bucket/team-a/x\n",
                    "s3://bucket/team a/x",
                    "s3://bucket/team-a/\u0000x",
                    "s3://bucket/team-a/\u00a0x",
                    "",
                }) {
            assertThatThrownBy(() -> CheckpointPath.parse(path))
                    .as("'%s'", path)
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void equalWhenEachCoversTheOtherAndPrintedAsWritten() {
        assertThat(CheckpointPath.parse("file:/x/y"))
                .isEqualTo(CheckpointPath.parse("file:///x/y/"));
        assertThat(CheckpointPath.parse("S3://B/x")).isEqualTo(CheckpointPath.parse("s3://b/x"));
        assertThat(CheckpointPath.parse("s3://b/x")).isNotEqualTo(CheckpointPath.parse("s3://b/X"));
        assertThat(CheckpointPath.parse("file:///x/y/")).hasToString("file:///x/y/");
    }
}
