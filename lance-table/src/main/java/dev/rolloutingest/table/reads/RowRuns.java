package dev.rolloutingest.table.reads;

import java.util.Arrays;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VariableWidthFieldVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;

/**
 * Runs of consecutive rows of one batch (start, length), kept in order, and the copy of those rows into a new vector
 * a run at a time: bulk memory copies per run for fixed-width, variable-width, list and struct vectors (a list's
 * values are one run of its child per run), a row at a time for any other type. Dropping a few rows of a wide batch
 * this way costs about a copy of its bytes; a row-by-row copy of list columns costs ten times that.
 */
final class RowRuns {
    private int[] starts = new int[16];
    private int[] lengths = new int[16];
    private int count;
    private int rows;

    /** Appends rows [start, start + length); joins the last run when it ends at start. */
    void add(int start, int length) {
        if (length <= 0) {
            return;
        }
        rows += length;
        if (count > 0 && starts[count - 1] + lengths[count - 1] == start) {
            lengths[count - 1] += length;
            return;
        }
        if (count == starts.length) {
            starts = Arrays.copyOf(starts, count * 2);
            lengths = Arrays.copyOf(lengths, count * 2);
        }
        starts[count] = start;
        lengths[count] = length;
        count++;
    }

    /** Rows in all runs. */
    int rows() {
        return rows;
    }

    /** Keeps the first {@code n} rows only. */
    void truncate(int n) {
        int kept = 0;
        for (int r = 0; r < count; r++) {
            if (kept + lengths[r] >= n) {
                lengths[r] = n - kept;
                count = lengths[r] == 0 ? r : r + 1;
                rows = n;
                return;
            }
            kept += lengths[r];
        }
    }

    /** Copies the rows of the runs from {@code from} into {@code to}, a new empty vector of the same type. */
    void copy(FieldVector from, FieldVector to) {
        if (from instanceof BitVector bits && to instanceof BitVector out) {
            copyBits(bits, out);
        } else if (from instanceof BaseFixedWidthVector fixed && to instanceof BaseFixedWidthVector out) {
            copyFixed(fixed, out);
        } else if (from instanceof BaseVariableWidthVector variable && to instanceof BaseVariableWidthVector out) {
            copyVariable(variable, out, 4);
        } else if (from instanceof BaseLargeVariableWidthVector large
                && to instanceof BaseLargeVariableWidthVector out) {
            copyVariable(large, out, 8);
        } else if (from instanceof ListVector list && to instanceof ListVector out) {
            copyList(list, out);
        } else if (from instanceof StructVector struct && to instanceof StructVector out) {
            copyStruct(struct, out);
        } else {
            copyRowByRow(from, to);
        }
    }

    private void copyBits(BitVector from, BitVector to) {
        to.allocateNew(rows);
        int at = 0;
        for (int r = 0; r < count; r++) {
            for (int i = starts[r]; i < starts[r] + lengths[r]; i++, at++) {
                if (!from.isNull(i)) {
                    to.set(at, from.get(i));
                }
            }
        }
        to.setValueCount(rows);
    }

    private void copyFixed(BaseFixedWidthVector from, BaseFixedWidthVector to) {
        to.allocateNew(rows);
        long width = from.getTypeWidth();
        ArrowBuf source = from.getDataBuffer();
        ArrowBuf target = to.getDataBuffer();
        int at = 0;
        for (int r = 0; r < count; r++) {
            target.setBytes(at * width, source, starts[r] * width, lengths[r] * width);
            at += lengths[r];
        }
        copyValidity(from, to.getValidityBuffer());
        to.setValueCount(rows);
    }

    /** Strings and binaries, with 4-byte offsets or ({@code width} 8) large ones. */
    private void copyVariable(VariableWidthFieldVector from, VariableWidthFieldVector to, int width) {
        ArrowBuf offsets = from.getOffsetBuffer();
        long bytes = 0;
        for (int r = 0; r < count; r++) {
            bytes += offsetAt(offsets, starts[r] + lengths[r], width) - offsetAt(offsets, starts[r], width);
        }
        to.allocateNew(Math.max(bytes, 1), rows);
        ArrowBuf targetOffsets = to.getOffsetBuffer();
        ArrowBuf target = to.getDataBuffer();
        int at = 0;
        long written = 0;
        targetOffsets.setZero(0, width);
        for (int r = 0; r < count; r++) {
            long first = offsetAt(offsets, starts[r], width);
            long end = offsetAt(offsets, starts[r] + lengths[r], width);
            target.setBytes(written, from.getDataBuffer(), first, end - first);
            shiftOffsets(offsets, starts[r], targetOffsets, at, lengths[r], written - first, width);
            written += end - first;
            at += lengths[r];
        }
        copyValidity(from, to.getValidityBuffer());
        to.setLastSet(rows - 1);
        to.setValueCount(rows);
    }

    private static long offsetAt(ArrowBuf offsets, int index, int width) {
        return width == 4 ? offsets.getInt((long) index * 4) : offsets.getLong((long) index * 8);
    }

    private void copyList(ListVector from, ListVector to) {
        to.setInitialCapacity(rows);
        to.allocateNew();
        ArrowBuf offsets = from.getOffsetBuffer();
        ArrowBuf targetOffsets = to.getOffsetBuffer();
        RowRuns values = new RowRuns();
        int at = 0;
        int written = 0;
        targetOffsets.setInt(0, 0);
        for (int r = 0; r < count; r++) {
            int first = offsets.getInt((long) starts[r] * 4);
            int end = offsets.getInt((long) (starts[r] + lengths[r]) * 4);
            values.add(first, end - first);
            shiftOffsets(offsets, starts[r], targetOffsets, at, lengths[r], written - first, 4);
            written += end - first;
            at += lengths[r];
        }
        copyValidity(from, to.getValidityBuffer());
        values.copy(from.getDataVector(), to.getDataVector());
        to.setLastSet(rows - 1);
        to.setValueCount(rows);
    }

    /**
     * Offsets {@code from[start + 1 .. start + n]} plus {@code shift} into {@code to[at + 1 .. at + n]}: bounds checked
     * once per run, then read and written by address (checked reads and writes per row cost several times the copy).
     */
    private static void shiftOffsets(ArrowBuf from, int start, ArrowBuf to, int at, int n, long shift, int width) {
        checkCovers(from, (long) (start + n + 1) * width);
        checkCovers(to, (long) (at + n + 1) * width);
        long source = from.memoryAddress() + (long) (start + 1) * width;
        long target = to.memoryAddress() + (long) (at + 1) * width;
        if (width == 4) {
            for (long i = 0; i < n * 4L; i += 4) {
                MemoryUtil.putInt(target + i, (int) (MemoryUtil.getInt(source + i) + shift));
            }
        } else {
            for (long i = 0; i < n * 8L; i += 8) {
                MemoryUtil.putLong(target + i, MemoryUtil.getLong(source + i) + shift);
            }
        }
    }

    private static void checkCovers(ArrowBuf buffer, long bytes) {
        if (buffer.capacity() < bytes) {
            throw new IndexOutOfBoundsException(
                    "an offsets buffer of " + buffer.capacity() + " bytes, " + bytes + " needed");
        }
    }

    private void copyStruct(StructVector from, StructVector to) {
        to.setInitialCapacity(rows);
        to.allocateNew();
        for (String child : from.getChildFieldNames()) {
            copy((FieldVector) from.getChild(child), (FieldVector) to.getChild(child));
        }
        copyValidity(from, to.getValidityBuffer());
        to.setValueCount(rows);
    }

    private void copyRowByRow(FieldVector from, FieldVector to) {
        to.setInitialCapacity(rows);
        to.allocateNew();
        int at = 0;
        for (int r = 0; r < count; r++) {
            for (int i = starts[r]; i < starts[r] + lengths[r]; i++) {
                to.copyFromSafe(i, at++, from);
            }
        }
        to.setValueCount(rows);
    }

    /** The validity bits of the runs' rows; all set at once when {@code from} has no null. */
    private void copyValidity(FieldVector from, ArrowBuf target) {
        if (from.getNullCount() == 0) {
            target.setOne(0, BitVectorHelper.getValidityBufferSize(rows));
            return;
        }
        int at = 0;
        for (int r = 0; r < count; r++) {
            for (int i = starts[r]; i < starts[r] + lengths[r]; i++, at++) {
                BitVectorHelper.setValidityBit(target, at, from.isNull(i) ? 0 : 1);
            }
        }
    }
}
