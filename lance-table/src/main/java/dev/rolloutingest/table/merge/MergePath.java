package dev.rolloutingest.table.merge;

/**
 * Where a merged row went: appended as a new key (written again), adopted with its whole generation as a new key (its
 * data files linked, not written), joined (in place of an older base row of its key, written or adopted), or superseded (the base
 * already held its key as new or newer: a round redone after a crash, or a newer value of another partition
 * merged first).
 */
public enum MergePath {
    APPEND,
    ADOPT,
    JOIN,
    SUPERSEDED
}
