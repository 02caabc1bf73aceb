// tests/compat/programs/Compat.java - what tests/compat runs with Java (a single-file source
// program, `java Compat.java`), natively and in a sandbox: threads, files, a TCP server and
// client on loopback, and 300 MiB allocated and touched. Prints one "ok ..." line per step and
// "compat ok" at the end; any failure exits non-zero.
//
// The 300 MiB are direct (off-heap) buffers, so the program needs no heap larger than the
// JVM's default for a small machine: run it with -XX:MaxDirectMemorySize=320m.

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class Compat {
    static final int WORKERS = 4;
    static final int MEM_MIB = 300;

    static void fail(String step, Throwable t) {
        System.err.println("FAIL " + step + ": " + t);
        t.printStackTrace();
        System.exit(1);
    }

    static byte[] sha256(byte[] data) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }

    // Each worker thread writes its own file of 1 MiB; then the main thread reads them back.
    static void threadsAndFiles(Path dir) throws Exception {
        byte[][] sums = new byte[WORKERS][];
        Throwable[] errs = new Throwable[WORKERS];
        Thread[] threads = new Thread[WORKERS];
        for (int i = 0; i < WORKERS; i++) {
            final int n = i;
            threads[i] = new Thread(() -> {
                try {
                    byte[] data = new byte[1 << 20];
                    Arrays.fill(data, (byte) ('a' + n));
                    sums[n] = sha256(data);
                    Files.write(dir.resolve("w" + n), data);
                } catch (Throwable t) {
                    errs[n] = t;
                }
            });
            threads[i].start();
        }
        for (int i = 0; i < WORKERS; i++) {
            threads[i].join();
            if (errs[i] != null)
                fail("threads", errs[i]);
        }
        System.out.println("ok threads " + WORKERS);
        for (int i = 0; i < WORKERS; i++)
            if (!Arrays.equals(sha256(Files.readAllBytes(dir.resolve("w" + i))), sums[i]))
                fail("files", new Exception("w" + i + " reads back different bytes"));
        System.out.println("ok files " + WORKERS + " MiB");
    }

    // A server on 127.0.0.1 (a port the kernel picks) echoes what one client sends.
    static void loopbackTcp() throws Exception {
        InetAddress lo = InetAddress.getByAddress(new byte[] { 127, 0, 0, 1 });
        try (ServerSocket server = new ServerSocket(0, 1, lo)) {
            Thread echo = new Thread(() -> {
                try (Socket c = server.accept()) {
                    c.getInputStream().transferTo(c.getOutputStream());
                } catch (Exception e) {
                    // the client sees the short echo
                }
            });
            echo.start();
            byte[] msg = "loopback ".repeat(100000).getBytes();
            try (Socket c = new Socket()) {
                c.connect(new InetSocketAddress(lo, server.getLocalPort()));
                Thread writer = new Thread(() -> {
                    try {
                        OutputStream out = c.getOutputStream();
                        out.write(msg);
                        c.shutdownOutput();
                    } catch (Exception e) {
                        // the reader sees the short echo
                    }
                });
                writer.start();
                ByteArrayOutputStream got = new ByteArrayOutputStream();
                InputStream in = c.getInputStream();
                in.transferTo(got);
                writer.join();
                if (!Arrays.equals(got.toByteArray(), msg))
                    fail("tcp", new Exception("echoed " + got.size() + " bytes of " + msg.length + ", or different ones"));
                System.out.println("ok tcp " + got.size() + " bytes");
            }
            echo.join();
        }
    }

    // 300 MiB in 1 MiB direct buffers, a byte written in every page of each.
    static void memory() {
        List<ByteBuffer> blocks = new ArrayList<>();
        for (int i = 0; i < MEM_MIB; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
            for (int j = 0; j < b.capacity(); j += 4096)
                b.put(j, (byte) i);
            blocks.add(b);
        }
        long sum = 0, want = 0;
        for (int i = 0; i < MEM_MIB; i++) {
            ByteBuffer b = blocks.get(i);
            for (int j = 0; j < b.capacity(); j += 4096)
                sum += b.get(j) & 0xff;
            want += 256L * (i & 0xff);
        }
        if (sum != want)
            fail("memory", new Exception("read back " + sum + ", wrote " + want));
        System.out.println("ok memory " + MEM_MIB + " MiB");
    }

    public static void main(String[] args) {
        try {
            Path dir = Files.createTempDirectory("compat-java-");
            threadsAndFiles(dir);
            for (int i = 0; i < WORKERS; i++)
                Files.delete(dir.resolve("w" + i));
            Files.delete(dir);
            loopbackTcp();
            memory();
        } catch (Throwable t) {
            fail("unexpected", t);
        }
        System.out.println("compat ok");
    }
}
