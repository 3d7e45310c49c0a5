package dev.rolloutingest.table.merge;

/** The points of a commit a test can fail at, as a crash there would. */
public enum CommitStage {
    /** The group's watermarks are checked and its rows split; its data is not committed yet. */
    CHECKED,
    /** The round's base commit landed; its deletes are not kept beside the base yet, its marks not committed. */
    BASE_COMMITTED,
    /** The round's rows are committed; its marks are not. */
    APPENDED,
    /** The marks are committed. */
    MARKED
}
