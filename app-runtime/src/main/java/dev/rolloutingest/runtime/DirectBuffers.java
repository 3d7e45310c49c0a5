package dev.rolloutingest.runtime;

/**
 * Arrow's large buffers without the JDK's zeroing. A buffer over Netty's pooled chunk (4 MiB: a batch's payload
 * column, its token lists) comes from Netty's unpooled allocator, which allocates through
 * {@code ByteBuffer.allocateDirect} unless it may reach the no-cleaner constructor by reflection: the JDK then zeroes
 * every such buffer, the stream thread touching each fresh page first (a fifth of its samples in a profile of a
 * drain). Arrow initialises what it reads (validity and offsets) itself, as it does for Netty's pooled buffers, which
 * are never zeroed. Opening {@code java.nio} to Netty is the rest, which the apps' jar and command already do.
 */
public final class DirectBuffers {
    /** Netty's switch; read once, when its {@code PlatformDependent} class initialises. */
    static final String NETTY_REFLECTION = "io.netty.tryReflectionSetAccessible";

    private DirectBuffers() {}

    /** Before any Netty class loads (first in a main); a value the command line set wins. */
    public static void allocateUnzeroed() {
        if (System.getProperty(NETTY_REFLECTION) == null) {
            System.setProperty(NETTY_REFLECTION, "true");
        }
    }
}
