/**
 * The rollout table: a Lance base table with MemWAL, its sealed generations, merges, reads, snapshots and upkeep.
 *
 * <p>This package is the entry point the apps use: {@link dev.rolloutingest.table.RolloutTable} and the values it
 * takes ({@link dev.rolloutingest.table.TableLocation}, {@link dev.rolloutingest.table.TableSettings}, {@link
 * dev.rolloutingest.table.ShardId}, {@link dev.rolloutingest.table.RolloutTableException}), and {@link
 * dev.rolloutingest.table.MemoryBudget}, the one budget every bound on kept memory is a use of. The packages below it, by
 * role, bottom up (each may use only those before it and this package's values):
 *
 * <ol>
 *   <li>{@code storage}: object stores, opening and committing Lance datasets, the commit fence, watermarks;
 *   <li>{@code rows}: one row of the table: its schema, decoding, added columns, deletes, order, key hashes;
 *   <li>{@code generations}: a partition's batch, writing it as a sealed generation, listing the seals;
 *   <li>{@code reads}, {@code merge}, {@code maintenance}: reading base + pending generations; folding generations
 *       into the base; compaction, the key index, GC and the drop of old deletes;
 *   <li>{@code snapshots}: named, tagged versions at known offsets.
 * </ol>
 *
 * Other modules use only the types {@code ApiBoundaryTest} lists (the table's API); everything else is public only so
 * that the packages of this module can use each other.
 */
package dev.rolloutingest.table;
