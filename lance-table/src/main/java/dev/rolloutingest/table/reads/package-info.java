/**
 * Reads over the base plus every pending generation, newest wins: point lookups through key filters and the record_id
 * index, pages, counts, scans and tails for training as Arrow streams, the cached catalog of pending generations and
 * its dataset handles, the backlog guard. Uses generations, rows and storage.
 */
package dev.rolloutingest.table.reads;
