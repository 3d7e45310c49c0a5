/**
 * Where the table's bytes live: the object stores (local disk, S3, Azure Blob Storage) for seal files, listings and
 * copies, opening and writing Lance datasets with the table's storage options ({@code LanceIo}), the fenced commit
 * every row change goes through ({@code FencedCommit}), the MemWAL watermarks, and what a store error means. Uses only
 * the table's values.
 */
package dev.rolloutingest.table.storage;
