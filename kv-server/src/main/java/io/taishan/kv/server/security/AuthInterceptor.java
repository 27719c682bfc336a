package io.taishan.kv.server.security;

import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.ListTablesResponse;
import io.taishan.kv.proto.TableInfo;
import io.taishan.kv.protocol.BearerTokens;
import io.taishan.kv.protocol.KvErrors;
import java.net.SocketAddress;
import java.util.List;
import javax.annotation.Nullable;

/**
 * Checks every call against the token file before the service sees it, by the rules of {@link
 * CallRules}: the bearer token is authenticated from the headers when the call starts ({@code
 * UNAUTHENTICATED} otherwise, before the request is even read), and the tables a call names are
 * authorized when its request arrives ({@code PERMISSION_DENIED} otherwise, and the request never
 * reaches the service), and so are the paths in checkpoint storage it names (under the token's
 * checkpoint directories, {@link CheckpointPath}), so a refused upload or restore never wrote or
 * read a byte. An answer to {@code ListTables} is cut down to the tables the token covers. Both
 * failures carry the error code trailer, like every error of the service.
 *
 * <p>The check runs where the call runs (for {@code Get} the network thread): a header lookup, a
 * SHA-256 and a prefix match per table, no allocation beyond the header's string and the digest.
 */
public final class AuthInterceptor implements ServerInterceptor {
    private final TokenStore tokens;
    private final DenialLog denials = new DenialLog();

    public AuthInterceptor(TokenStore tokens) {
        this.tokens = tokens;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String method = call.getMethodDescriptor().getFullMethodName();
        CallRules.Rule rule = CallRules.of(method);
        if (rule.kind() == CallRules.Kind.OPEN) {
            return next.startCall(call, headers);
        }
        String header = headers.get(BearerTokens.AUTHORIZATION);
        String token = BearerTokens.tokenOf(header);
        Credential credential = token == null ? null : tokens.current().authenticate(token);
        if (credential == null) {
            String why =
                    header == null
                            ? "no bearer token: this kv-server requires one on every call"
                            : token == null
                                    ? "the authorization header holds no bearer token"
                                    : "unknown bearer token";
            denials.unauthenticated(method, why, peer(call));
            close(call, Status.UNAUTHENTICATED, ErrorCode.UNAUTHENTICATED, why);
            return new ServerCall.Listener<>() {};
        }
        if (credential.admin()) {
            return next.startCall(call, headers);
        }
        switch (rule.kind()) {
            case ANY_CREDENTIAL:
                return next.startCall(call, headers);
            case LIST_TABLES:
                return next.startCall(new CoveredTablesOnly<>(call, credential), headers);
            case TABLES:
                return new TableCheck<>(next.startCall(call, headers), call, credential, rule);
            default:
                String why = method + " needs an admin token; " + credential + " is not one";
                denials.denied(credential, method, why, peer(call));
                close(call, Status.PERMISSION_DENIED, ErrorCode.PERMISSION_DENIED, why);
                return new ServerCall.Listener<>() {};
        }
    }

    private static void close(ServerCall<?, ?> call, Status status, ErrorCode code, String why) {
        Metadata trailers = new Metadata();
        trailers.put(KvErrors.ERROR_CODE_KEY, code.name());
        call.close(status.withDescription(why), trailers);
    }

    @Nullable
    private static SocketAddress peer(ServerCall<?, ?> call) {
        return call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    }

    /**
     * Holds the request back from the service until its tables are checked; after a refusal the
     * service hears nothing more of the call but its end (it never started work).
     */
    private final class TableCheck<Q, R>
            extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
        private final ServerCall<Q, R> call;
        private final Credential credential;
        private final CallRules.Rule rule;
        private boolean refused;

        TableCheck(
                ServerCall.Listener<Q> delegate,
                ServerCall<Q, R> call,
                Credential credential,
                CallRules.Rule rule) {
            super(delegate);
            this.call = call;
            this.credential = credential;
            this.rule = rule;
        }

        @Override
        public void onMessage(Q request) {
            if (refused) {
                return;
            }
            List<String> tables = rule.tablesOf(request);
            for (int i = 0; i < tables.size(); i++) {
                String table = tables.get(i);
                if (!credential.covers(table)) {
                    refuse("token " + credential + " does not cover table '" + table + "'");
                    return;
                }
            }
            List<String> paths = rule.pathsOf(request);
            for (int i = 0; i < paths.size(); i++) {
                String why = pathRefusal(paths.get(i));
                if (why != null) {
                    refuse(why);
                    return;
                }
            }
            super.onMessage(request);
        }

        /** Why the credential may not name {@code path}, or null if it may. */
        @Nullable
        private String pathRefusal(String path) {
            String shown = printable(path);
            if (credential.checkpointDirs().isEmpty()) {
                return "token "
                        + credential
                        + " may name no path in checkpoint storage, and this call names '"
                        + shown
                        + "': give it its checkpoint directories with"
                        + " checkpoints=<dir>[,<dir>...] after its scope and name in the token"
                        + " file (auth.token-file)";
            }
            CheckpointPath parsed;
            try {
                parsed = CheckpointPath.parse(path);
            } catch (IllegalArgumentException e) {
                return "path '"
                        + shown
                        + "' in checkpoint storage "
                        + e.getMessage()
                        + ": only absolute URIs without '.', '..' or empty segments, whitespace,"
                        + " \\, %, ? or # are accepted from token "
                        + credential;
            }
            if (!credential.mayName(parsed)) {
                return "token "
                        + credential
                        + " does not cover path '"
                        + shown
                        + "' in checkpoint storage";
            }
            return null;
        }

        private void refuse(String why) {
            refused = true;
            String method = call.getMethodDescriptor().getFullMethodName();
            denials.denied(credential, method, why, peer(call));
            close(call, Status.PERMISSION_DENIED, ErrorCode.PERMISSION_DENIED, why);
        }

        @Override
        public void onHalfClose() {
            // The unary handler would answer a half-close without a request by closing the call
            // a second time.
            if (!refused) {
                super.onHalfClose();
            }
        }

        @Override
        public void onReady() {
            if (!refused) {
                super.onReady();
            }
        }
    }

    /**
     * A path as the client sent it, for a message and the log: control characters escaped so that a
     * crafted path cannot forge log lines, and a long one cut.
     */
    static String printable(String path) {
        StringBuilder b = new StringBuilder();
        int limit = Math.min(path.length(), 500);
        for (int i = 0; i < limit; i++) {
            char c = path.charAt(i);
            if (Character.isISOControl(c)) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return limit < path.length() ? b.append("...").toString() : b.toString();
    }

    /** Passes a ListTables answer on with only the tables the credential covers. */
    private static final class CoveredTablesOnly<Q, R>
            extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        private final Credential credential;

        CoveredTablesOnly(ServerCall<Q, R> call, Credential credential) {
            super(call);
            this.credential = credential;
        }

        @Override
        @SuppressWarnings("unchecked")
        public void sendMessage(R message) {
            if (message instanceof ListTablesResponse all) {
                ListTablesResponse.Builder covered = ListTablesResponse.newBuilder();
                for (TableInfo table : all.getTablesList()) {
                    if (credential.covers(table.getName())) {
                        covered.addTables(table);
                    }
                }
                super.sendMessage((R) covered.build());
            } else {
                super.sendMessage(message);
            }
        }
    }
}
