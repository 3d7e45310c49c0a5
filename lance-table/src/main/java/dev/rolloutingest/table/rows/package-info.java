/**
 * One row of the table: the Arrow schema of the {@code Rollout} contract, decoding Avro straight into Arrow, the columns
 * producers add, deletes as rows ({@code Tombstones}), which row of a key wins ({@code NewestWins}), key
 * hashes and filters, timestamps. Uses storage (a column added to the base) and the table's values.
 */
package dev.rolloutingest.table.rows;
