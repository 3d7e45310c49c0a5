/**
 * Named snapshots ({@code TableSnapshots}): a cut by offsets ({@code CutPlan}), the fold up to it ({@code
 * SnapshotFold}), the choice of a base version that holds exactly what its watermarks say ({@code SnapshotVersions}),
 * lance tags with the offsets in their metadata ({@code SnapshotTags}), export ({@code SnapshotExport}). Uses merge (a
 * fold's result), generations, rows and storage.
 */
package dev.rolloutingest.table.snapshots;
