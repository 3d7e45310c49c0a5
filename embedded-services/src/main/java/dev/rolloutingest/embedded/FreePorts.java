package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Picks loopback ports that are free right now. */
public final class FreePorts {
    private FreePorts() {}

    public static int next() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("No free loopback port", e);
        }
    }
}
