/**
 * Many tables under one root: which tables there are, their names, and one open {@code RolloutTable} per table,
 * created on its first record. Above the table's entry point: uses it and storage (for listing the root).
 */
package dev.rolloutingest.table.catalog;
