import io.polylock.DistributedLock;
import io.polylock.LockLostException;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A worker of the fault harness (faults/harness.py) on the Java binding: the same loop as
 * faults/worker.rs. Usage: FaultWorker URL NAME RESOURCE(host:port) SECONDS WATCHDOG_MS
 */
public final class FaultWorker {
    public static void main(String[] args) throws Exception {
        String url = args[0], name = args[1], resource = args[2];
        long end = System.nanoTime() + (long) (Double.parseDouble(args[3]) * 1e9);
        String me = "java-" + ProcessHandle.current().pid();
        Polylock.Options options = new Polylock.Options()
                .watchdogTimeout(Duration.ofMillis(Long.parseLong(args[4])))
                .sessionTimeout(Duration.ofSeconds(4));
        PolylockClient client;
        while (true) {
            try {
                client = Polylock.connect(url, options);
                break;
            } catch (PolylockException e) {
                if (System.nanoTime() >= end) throw e;
                System.out.println("{\"acquire_error\":\"" + e.getCode() + "\"}");
                Thread.sleep(200);
            }
        }
        DistributedLock lock = client.getLock(name);
        String[] hostPort = resource.split(":");
        try (Socket socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            BufferedReader in = new BufferedReader(
                    new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            OutputStream out = socket.getOutputStream();
            String[] steps = {"BEGIN", "WRITE", "WRITE", "WRITE", "END"};
            while (System.nanoTime() < end) {
                try {
                    if (!lock.tryLock(2, TimeUnit.SECONDS)) continue;
                } catch (PolylockException e) {
                    System.out.println("{\"acquire_error\":\"" + e.getCode() + "\"}");
                    Thread.sleep(200);
                    continue;
                }
                long token = lock.getFencingToken();
                boolean refused = false;
                for (int i = 0; i < steps.length; i++) {
                    out.write((steps[i] + " " + me + " " + token + "\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    if (!"OK".equals(in.readLine())) {
                        refused = true;
                        break;
                    }
                    if (i + 1 < steps.length) Thread.sleep(40);
                }
                boolean lostBefore = lock.isLost();
                String release = "";
                for (int attempt = 0; attempt < 20; attempt++) { // an unanswered release is tried again
                    try {
                        lock.unlock();
                        release = "ok";
                    } catch (LockLostException e) {
                        release = "LockLost";
                    } catch (PolylockException e) {
                        release = String.valueOf(e.getCode());
                        Thread.sleep(100);
                        continue;
                    }
                    break;
                }
                boolean told = lostBefore || release.equals("LockLost");
                System.out.println("{\"worker\":\"" + me + "\",\"token\":" + token + ",\"refused\":" + refused
                        + ",\"told\":" + told + ",\"lost\":" + (lostBefore ? "\"lost\"" : "null")
                        + ",\"release\":\"" + release + "\"}");
                System.out.flush();
                Thread.sleep(5 + token % 20);
            }
        }
        client.close();
    }
}
