package io.taishan.kv.server.security;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A location in checkpoint storage, as a token's checkpoint directory ({@code checkpoints=} in the
 * token file) or as a path a request names, reduced to what decides whether one lies under the
 * other.
 *
 * <p>The node hands a request's paths to Flink's {@code Path} and file systems, which resolve
 * {@code ..}, merge {@code //}, turn {@code \} into {@code /}, trim whitespace and, on {@code
 * file:}, ignore the authority. Rather than copy that normalisation (and every plugin's), a path
 * whose meaning could change on the way is refused outright, so the text compared is the text used:
 *
 * <ul>
 *   <li>It is an absolute URI: a scheme of at least two characters ({@code
 *       [A-Za-z][A-Za-z0-9+.-]+}; Flink takes {@code c:} for a Windows drive), an optional {@code
 *       //authority}, and a path that starts with {@code /}. No scheme means the node's default
 *       file system, which is not a place a token can be given.
 *   <li>No segment is {@code .} or {@code ..}, and no segment is empty ({@code //} inside the
 *       path); one trailing {@code /} is allowed ({@code s3://bucket/team-a/} is a directory).
 *   <li>No whitespace or control character, and none of {@code \ % ? #}: Flink trims, reads {@code
 *       \} as a separator, and a URI reads the others as escapes, query and fragment.
 * </ul>
 *
 * A directory covers a path when their schemes are equal ignoring case, their authorities are equal
 * (user info and port exactly, host ignoring case; no authority and an empty one are the same, so
 * {@code file:/x} is {@code file:///x}), and the directory's segments begin the path's, whole
 * segments compared exactly: {@code /team-a} covers {@code /team-a} and {@code /team-a/x}, not
 * {@code /team-ab/x}. Nothing else is taken as equal: {@code hdfs://nn/} and {@code
 * hdfs://nn:8020/} differ, and so do {@code file:///x} and {@code file://localhost/x}, which only
 * ever refuses a path, never admits one.
 */
public final class CheckpointPath {
    private final String text;
    private final String scheme;
    private final String userInfo;
    private final String host;
    private final String port;
    private final List<String> segments;

    private CheckpointPath(
            String text,
            String scheme,
            String userInfo,
            String host,
            String port,
            List<String> segments) {
        this.text = text;
        this.scheme = scheme;
        this.userInfo = userInfo;
        this.host = host;
        this.port = port;
        this.segments = segments;
    }

    /**
     * @throws IllegalArgumentException saying what is wrong, without repeating the text (the token
     *     file's errors never print a field that could be a misplaced token)
     */
    public static CheckpointPath parse(String text) {
        if (text.isEmpty()) {
            throw new IllegalArgumentException("is empty");
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isISOControl(c)
                    || Character.isWhitespace(c)
                    || Character.isSpaceChar(c)
                    || c == '\\'
                    || c == '%'
                    || c == '?'
                    || c == '#') {
                throw new IllegalArgumentException(
                        "has whitespace, a control character or one of \\ % ? # at position "
                                + (i + 1));
            }
        }
        int colon = text.indexOf(':');
        int slash = text.indexOf('/');
        if (colon < 0 || (slash >= 0 && slash < colon)) {
            throw new IllegalArgumentException("has no scheme (write it as an absolute URI)");
        }
        String scheme = text.substring(0, colon);
        if (!isScheme(scheme)) {
            throw new IllegalArgumentException(
                    "does not start with a scheme of at least two characters"
                            + " ([A-Za-z][A-Za-z0-9+.-]+:)");
        }
        String rest = text.substring(colon + 1);
        String authority = "";
        if (rest.startsWith("//")) {
            int end = rest.indexOf('/', 2);
            authority = rest.substring(2, end < 0 ? rest.length() : end);
            rest = end < 0 ? "" : rest.substring(end);
        }
        if (!rest.startsWith("/")) {
            throw new IllegalArgumentException(
                    "has no absolute path after the scheme and authority (a bucket or file system"
                            + " root is written with a trailing /)");
        }
        String userInfo = "";
        String hostPort = authority;
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            userInfo = authority.substring(0, at);
            hostPort = authority.substring(at + 1);
        }
        String host = hostPort;
        String port = "";
        int portColon = hostPort.lastIndexOf(':');
        if (portColon >= 0 && hostPort.indexOf(']', portColon) < 0) {
            host = hostPort.substring(0, portColon);
            port = hostPort.substring(portColon + 1);
            if (port.isEmpty() || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw new IllegalArgumentException("has an authority whose port is not a number");
            }
        }
        List<String> segments = new ArrayList<>();
        String[] parts = rest.substring(1).split("/", -1);
        for (int i = 0; i < parts.length; i++) {
            String segment = parts[i];
            boolean last = i == parts.length - 1;
            if (segment.isEmpty()) {
                if (last) {
                    break; // a trailing '/', or the root
                }
                throw new IllegalArgumentException("has an empty segment (// inside the path)");
            }
            if (segment.equals(".") || segment.equals("..")) {
                throw new IllegalArgumentException("has a '" + segment + "' segment");
            }
            segments.add(segment);
        }
        return new CheckpointPath(
                text,
                scheme.toLowerCase(Locale.ROOT),
                userInfo,
                host.toLowerCase(Locale.ROOT),
                port,
                List.copyOf(segments));
    }

    private static boolean isScheme(String s) {
        if (s.length() < 2 || !isLetter(s.charAt(0))) {
            return false;
        }
        for (int i = 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(isLetter(c) || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    private static boolean isLetter(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    /** Whether {@code path} is this directory or lies under it. */
    public boolean covers(CheckpointPath path) {
        return scheme.equals(path.scheme)
                && userInfo.equals(path.userInfo)
                && host.equals(path.host)
                && port.equals(path.port)
                && path.segments.size() >= segments.size()
                && path.segments.subList(0, segments.size()).equals(segments);
    }

    /** As written. */
    @Override
    public String toString() {
        return text;
    }

    /** Equal when each covers the other: {@code file:/x} equals {@code file:///x/}. */
    @Override
    public boolean equals(Object o) {
        return o instanceof CheckpointPath p && covers(p) && p.covers(this);
    }

    @Override
    public int hashCode() {
        return Objects.hash(scheme, userInfo, host, port, segments);
    }
}
