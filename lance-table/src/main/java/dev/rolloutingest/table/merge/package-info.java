/**
 * Folding pending generations into the base in rounds: the entry point ({@code TableMerges}) and its requests ({@code
 * MergeQueue}), a round planned and prepared ({@code RoundPreparer}, {@code PreparedRound}), the plan ({@code
 * MergeRound}), reading a shard's generations ({@code MergePreparer}, {@code GenerationReads}), the serial commit
 * ({@code MergeCommitter}) and its rows ({@code RoundWrite}, which states where each row goes), the committer's filter
 * of base keys and its book of the newest keys' addresses, adoption of whole generations. Uses generations, rows and storage.
 */
package dev.rolloutingest.table.merge;
