package io.polylock.spring;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/** Asks the test Redis directly (RESP over a socket), to see the keys polylock writes. */
final class RedisProbe {
    static final String URL = System.getenv().getOrDefault("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379");

    private RedisProbe() {}

    static long exists(String key) throws IOException {
        return integer("EXISTS", key);
    }

    static long llen(String key) throws IOException {
        return integer("LLEN", key);
    }

    /** GET: the value as text, or null when the key is missing. */
    static String get(String key) throws IOException {
        String[] reply = new String[1];
        ask(in -> {
            String head = line(in);
            if (head.startsWith("$-1")) {
                return;
            }
            if (!head.startsWith("$")) {
                throw new IOException("unexpected reply to GET " + key + ": " + head);
            }
            byte[] bytes = in.readNBytes(Integer.parseInt(head.substring(1)));
            line(in);
            reply[0] = new String(bytes, StandardCharsets.UTF_8);
        }, "GET", key);
        return reply[0];
    }

    private interface Reader {
        void read(InputStream in) throws IOException;
    }

    private static long integer(String... command) throws IOException {
        long[] got = new long[1];
        ask(in -> {
            String reply = line(in);
            if (!reply.startsWith(":")) {
                throw new IOException("unexpected reply to " + String.join(" ", command) + ": " + reply);
            }
            got[0] = Long.parseLong(reply.substring(1));
        }, command);
        return got[0];
    }

    private static void ask(Reader reader, String... command) throws IOException {
        URI uri = URI.create(URL);
        try (Socket s = new Socket(uri.getHost(), uri.getPort() < 0 ? 6379 : uri.getPort())) {
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            InputStream in = new BufferedInputStream(s.getInputStream());
            String userInfo = uri.getUserInfo();
            if (userInfo != null && !userInfo.isEmpty()) {
                int colon = userInfo.indexOf(':');
                if (colon > 0) {
                    send(out, "AUTH", userInfo.substring(0, colon), userInfo.substring(colon + 1));
                } else {
                    send(out, "AUTH", colon == 0 ? userInfo.substring(1) : userInfo);
                }
                line(in);
            }
            String path = uri.getPath();
            if (path != null && path.length() > 1) {
                send(out, "SELECT", path.substring(1));
                line(in);
            }
            send(out, command);
            reader.read(in);
        }
    }

    private static void send(OutputStream out, String... args) throws IOException {
        StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) {
            byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
            b.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
        }
        out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != -1 && c != '\n') {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }
}
