/**
 * Runs an async job per key with at most one run in flight; requests that
 * arrive meanwhile collapse into one more run after it. Used so a burst of
 * `stark/treeChanged` notifications costs at most two `stark/tree` requests.
 */
export class Coalescer<K> {
  private readonly inFlight = new Set<K>();
  private readonly again = new Set<K>();

  constructor(private readonly job: (key: K) => Promise<void>) {}

  request(key: K): Promise<void> {
    if (this.inFlight.has(key)) {
      this.again.add(key);
      return Promise.resolve();
    }
    return this.run(key);
  }

  private async run(key: K): Promise<void> {
    this.inFlight.add(key);
    try {
      do {
        this.again.delete(key);
        try {
          await this.job(key);
        } catch {
          // The job reports its own errors; a failed run must not stop later ones.
        }
      } while (this.again.has(key));
    } finally {
      this.inFlight.delete(key);
    }
  }
}
