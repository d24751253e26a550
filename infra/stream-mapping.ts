/**
 * How the tables' change streams are handed to the stream function, shared by the CDK stack (the event source
 * mappings) and the local stream poller, so that a record neither can hand on is given up on the same way.
 */
export const streamMapping = {
  /** Records per batch. */
  batchSize: 100,
  /** A failed batch is split in two, each half handed on alone, down to one record; a split counts as no retry. */
  bisectBatchOnError: true,
  /**
   * Then one record is tried again this often before its batch is described on the on-failure destination and the
   * stream goes on: a record is held back for a while, never for good. No maximum record age: the retries bound it.
   */
  retryAttempts: 10,
} as const;
