package dev.rolloutingest.table.storage;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.ByteArrayReadableSeekableByteChannel;
import org.lance.FragmentMetadata;
import org.lance.fragment.DeletionFile;
import org.lance.fragment.DeletionFileType;
import org.roaringbitmap.RoaringBitmap;

/**
 * A fragment's rows marked deleted by writing its next deletion file here, in the Lance format's layout
 * ({@code _deletions/<fragment>-<read version>-<id>.arrow|.bin}: an Arrow IPC file of one non-null UInt32 column
 * {@code row_id}, or a portable Roaring bitmap from 5,000 rows on, as lance-core writes them), instead of through
 * lance-core's {@code Fragment.deleteRows}.
 *
 * <p>Why: a round of updates marks rows deleted in every fragment its keys were last written to, dozens a round, and
 * lance-core's call costs 0.6-1.2 ms a fragment of a few hundred rows (each row handed over one JNI call at a time,
 * the file compressed), serialised on the dataset's lock: 40-80 ms of a 200 ms round at 100M rows. Here the file is
 * read, joined with the new rows and written in ~0.1 ms. The fragment's other metadata is kept as it was, as lance-core
 * keeps it. A deletion file this cannot read (another base's, or one it fails to parse) is left to lance-core.
 */
public final class DeletionFiles {
    /** lance-core writes a bitmap from this many deleted rows on, an array below. */
    static final int BITMAP_FROM_ROWS = 5_000;

    private static final Schema ARRAY_SCHEMA =
            new Schema(List.of(new Field("row_id", new FieldType(false, new ArrowType.Int(32, false), null), null)));

    private DeletionFiles() {}

    /** Thrown when the fragment's deletion file is not one this reads: the caller leaves the rows to lance-core. */
    public static final class Unreadable extends RuntimeException {
        Unreadable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * The fragment with {@code rows} (offsets within it) marked deleted beside the rows its deletion file already
     * marks, its new deletion file written; null when no row is left (the commit removes the fragment).
     *
     * @param readVersion the version the fragment was read at (a part of the file's name, as lance-core names it)
     * @throws Unreadable when its current deletion file cannot be read here
     */
    public static FragmentMetadata withDeleted(
            ObjectStore store,
            BufferAllocator allocator,
            long readVersion,
            FragmentMetadata fragment,
            List<Integer> rows) {
        RoaringBitmap deleted = read(store, allocator, fragment);
        long physicalRows = fragment.getPhysicalRows();
        for (int row : rows) {
            if (row < 0 || row >= physicalRows) {
                throw new IllegalArgumentException(
                        "row " + row + " is not in fragment " + fragment.getId() + " of " + physicalRows + " rows");
            }
            deleted.add(row);
        }
        long count = deleted.getLongCardinality();
        if (count == physicalRows) {
            return null;
        }
        DeletionFileType type = count >= BITMAP_FROM_ROWS ? DeletionFileType.BITMAP : DeletionFileType.ARRAY;
        DeletionFile file = new DeletionFile(
                ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, readVersion, count, type, null);
        store.put(
                path(fragment.getId(), file),
                type == DeletionFileType.BITMAP ? bitmap(deleted) : array(deleted, allocator));
        return new FragmentMetadata(
                fragment.getId(),
                fragment.getFiles(),
                physicalRows,
                file,
                fragment.getRowIdMeta(),
                fragment.getCreatedAtVersionMeta(),
                fragment.getLastUpdatedAtVersionMeta());
    }

    /** The rows the fragment's deletion file marks deleted (none without one). */
    static RoaringBitmap read(ObjectStore store, BufferAllocator allocator, FragmentMetadata fragment) {
        DeletionFile file = fragment.getDeletionFile();
        RoaringBitmap deleted = new RoaringBitmap();
        if (file == null) {
            return deleted;
        }
        String path = path(fragment.getId(), file);
        if (file.getBaseId().isPresent()) {
            throw new Unreadable("the deletion file " + path + " lives in another base of the dataset", null);
        }
        byte[] bytes = store.get(path);
        if (bytes == null) {
            throw new Unreadable("the deletion file " + path + " is missing", null);
        }
        try {
            if (file.getFileType() == DeletionFileType.BITMAP) {
                deleted.deserialize(ByteBuffer.wrap(bytes));
            } else {
                try (ArrowFileReader reader = new ArrowFileReader(
                        new ByteArrayReadableSeekableByteChannel(bytes),
                        allocator,
                        CommonsCompressionFactory.INSTANCE)) {
                    while (reader.loadNextBatch()) {
                        UInt4Vector rows =
                                (UInt4Vector) reader.getVectorSchemaRoot().getVector(0);
                        for (int i = 0; i < rows.getValueCount(); i++) {
                            deleted.add(rows.get(i));
                        }
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new Unreadable("the deletion file " + path + " cannot be read: " + e.getMessage(), e);
        }
        Long expected = file.getNumDeletedRows();
        if (expected != null && expected != deleted.getLongCardinality()) {
            throw new Unreadable(
                    "the deletion file " + path + " holds " + deleted.getLongCardinality()
                            + " rows where its fragment says " + expected,
                    null);
        }
        return deleted;
    }

    /** Where lance-core reads a fragment's deletion file, relative to the table's root. */
    static String path(int fragment, DeletionFile file) {
        return "_deletions/" + fragment + "-" + Long.toUnsignedString(file.getReadVersion()) + "-"
                + Long.toUnsignedString(file.getId())
                + (file.getFileType() == DeletionFileType.BITMAP ? ".bin" : ".arrow");
    }

    private static byte[] bitmap(RoaringBitmap deleted) {
        ByteBuffer out = ByteBuffer.allocate(deleted.serializedSizeInBytes());
        deleted.serialize(out);
        return out.array();
    }

    private static byte[] array(RoaringBitmap deleted, BufferAllocator allocator) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64 + deleted.getCardinality() * 4);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(ARRAY_SCHEMA, allocator);
                ArrowFileWriter writer = new ArrowFileWriter(root, null, Channels.newChannel(out))) {
            UInt4Vector rows = (UInt4Vector) root.getVector(0);
            rows.allocateNew(deleted.getCardinality());
            int i = 0;
            for (int row : deleted) {
                rows.set(i++, row);
            }
            rows.setValueCount(i);
            root.setRowCount(i);
            writer.start();
            writer.writeBatch();
            writer.end();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
