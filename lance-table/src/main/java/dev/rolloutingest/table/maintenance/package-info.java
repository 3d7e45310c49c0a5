/**
 * The base's upkeep: compaction, the record_id index in tiered segments, GC of merged generations and old versions,
 * the drop of deletes no older value can reach. Uses generations, rows and storage.
 */
package dev.rolloutingest.table.maintenance;
