/**
 * A partition's rows on their way to the table: the batch being filled, its write as an immutable generation dataset
 * and seal file, and the catalog of seals. Uses rows and storage.
 */
package dev.rolloutingest.table.generations;
