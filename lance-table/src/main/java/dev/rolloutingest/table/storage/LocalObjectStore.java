package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.TableLocation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** The local-disk object store. Writes go through a temp file and an atomic rename. */
final class LocalObjectStore implements ObjectStore {
    /** What a put's temporary file has in its name until it is renamed into place. */
    static final String TMP_SUFFIX = ".tmp-";

    private final Path root;

    LocalObjectStore(TableLocation location) {
        this.root = Path.of(location.uri());
    }

    @Override
    public List<Entry> list(String folder) {
        Path dir = root.resolve(folder);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Entry> entries = new ArrayList<>();
        try (Stream<Path> children = Files.list(dir)) {
            children.forEach(p -> entries.add(new Entry(p.getFileName().toString(), Files.isDirectory(p))));
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot list " + dir, e);
        }
        return entries;
    }

    @Override
    public List<String> listRecursive(String folder) {
        Path dir = root.resolve(folder);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<String> files = new ArrayList<>();
        try {
            walk(dir, dir, files);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot list " + dir, e);
        }
        return files;
    }

    /**
     * Files below {@code at}, tolerating entries that go while it lists (a put's temporary file renamed, a folder GC
     * removes): another process may write the table meanwhile, and Files.walk fails on the first such entry.
     */
    private static void walk(Path dir, Path at, List<String> files) throws IOException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(at)) {
            for (Path entry : entries) {
                if (entry.getFileName().toString().contains(TMP_SUFFIX)) {
                    continue; // a put in progress: not a file of the store yet
                }
                BasicFileAttributes attributes;
                try {
                    attributes = Files.readAttributes(entry, BasicFileAttributes.class);
                } catch (NoSuchFileException gone) {
                    continue;
                }
                if (attributes.isDirectory()) {
                    walk(dir, entry, files);
                } else if (attributes.isRegularFile()) {
                    files.add(dir.relativize(entry).toString().replace('\\', '/'));
                }
            }
        } catch (NoSuchFileException gone) {
            // the folder went while listing
        }
    }

    @Override
    public void put(String path, byte[] bytes) {
        Path target = root.resolve(path);
        try {
            Files.createDirectories(target.getParent());
            Path tmp = target.resolveSibling(
                    target.getFileName() + TMP_SUFFIX + ProcessHandle.current().pid());
            Files.write(tmp, bytes);
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write " + target, e);
        }
    }

    @Override
    public byte[] get(String path) {
        try {
            return Files.readAllBytes(root.resolve(path));
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + root.resolve(path), e);
        }
    }

    @Override
    public void copy(String from, String to) {
        Path source = root.resolve(from);
        Path target = root.resolve(to);
        try {
            Files.createDirectories(target.getParent());
            try {
                Files.createLink(target, source);
            } catch (UnsupportedOperationException | FileSystemException e) {
                if (Files.exists(target)) {
                    throw e;
                }
                Files.copy(source, target); // another file system, or no hard links here
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot copy " + source + " to " + target, e);
        }
    }

    @Override
    public void delete(String path) {
        Path target = root.resolve(path);
        if (!Files.exists(target)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(target)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot delete " + target, e);
        }
    }

    @Override
    public void close() {}
}
