/**
 * Named snapshots: a cut by offsets, the fold up to it, the choice of a base version that holds exactly what its
 * watermarks say, lance tags with the offsets in their metadata, export. Uses merge (a fold's result), generations,
 * rows and storage.
 */
package dev.rolloutingest.table.snapshots;
