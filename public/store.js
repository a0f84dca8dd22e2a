// @ts-check
// The messages of one room the page holds, as disjoint ranges of consecutive seqs. It knows
// where the live edge is (the resume point for `subscribe after_seq`), notices gaps (a live
// message arriving past a hole) and forgets messages far from what the reader looks at, so
// memory follows the window, not the history. Rendering is the view's job (messages.js).

/** @typedef {{ message_id: string, seq: number, [key: string]: any }} Message */

export class MessageStore {
  /** @param {{ maxKept?: number }} [opts] */
  constructor({ maxKept = 3000 } = {}) {
    /** @type {Map<number, Message>} seq → message */
    this.bySeq = new Map();
    /** @type {Map<string, number>} message_id → seq */
    this.seqById = new Map();
    /** Disjoint, sorted [lo, hi] ranges of seqs held (every seq inside is present). */
    /** @type {Array<[number, number]>} */
    this.ranges = [];
    /** The newest seq the server is known to have (from any message seen). */
    this.latestSeq = 0;
    /** The range that touches the live edge ends here: subscribe after it. null = unknown. */
    this.resumeSeq = /** @type {number|null} */ (null);
    this.maxKept = maxKept;
  }

  get size() {
    return this.bySeq.size;
  }

  /** @param {number} seq */
  has(seq) {
    return this.bySeq.has(seq);
  }

  /** @param {number} seq */
  get(seq) {
    return this.bySeq.get(seq);
  }

  /** @param {string} id */
  byId(id) {
    const seq = this.seqById.get(id);
    return seq === undefined ? undefined : this.bySeq.get(seq);
  }

  /** The range holding `seq`, or null. @param {number} seq */
  rangeOf(seq) {
    for (const r of this.ranges) if (seq >= r[0] && seq <= r[1]) return r;
    return null;
  }

  /** The range at the live edge (holding resumeSeq), or null. */
  liveRange() {
    return this.resumeSeq === null ? null : this.rangeOf(this.resumeSeq);
  }

  /**
   * A page the server answered for [from, to] (messages inside, consecutive): every seq between
   * is covered even when the page's ends are not messages (e.g. an empty room).
   * @param {Message[]} messages
   * @param {{ live?: boolean }} [opts]  live: the page reaches the newest message (resume there)
   */
  addPage(messages, { live = false } = {}) {
    for (const m of messages) this.put(m);
    if (messages.length > 0) {
      this.cover(messages[0].seq, messages[messages.length - 1].seq);
    }
    if (live) {
      const top = messages.length ? messages[messages.length - 1].seq : 0;
      this.resumeSeq = Math.max(this.resumeSeq ?? 0, top);
      this.latestSeq = Math.max(this.latestSeq, top);
      // Live messages that arrived ahead of this page now connect to it.
      while (this.bySeq.has(this.resumeSeq + 1)) {
        this.resumeSeq += 1;
        this.cover(this.resumeSeq, this.resumeSeq);
      }
    }
  }

  /**
   * A message from the socket or a send answer. Returns 'new' | 'updated' | 'duplicate', and
   * `gap: true` when it lies past a hole after the resume point (the caller asks for a replay).
   * @param {Message} m
   */
  addLive(m) {
    const outcome = this.put(m);
    if (outcome === 'new') {
      this.latestSeq = Math.max(this.latestSeq, m.seq);
      if (this.resumeSeq !== null && m.seq === this.resumeSeq + 1) {
        this.cover(m.seq, m.seq);
        this.resumeSeq = m.seq;
        // Messages that came ahead of the hole now connect.
        while (this.bySeq.has(this.resumeSeq + 1)) {
          this.resumeSeq += 1;
          this.cover(this.resumeSeq, this.resumeSeq);
        }
      } else if (this.resumeSeq === null || m.seq > this.resumeSeq) {
        // Ahead of a hole: held but outside every range until the hole is filled.
        return { outcome, gap: this.resumeSeq !== null };
      } else {
        this.cover(m.seq, m.seq);
      }
    }
    return { outcome, gap: false };
  }

  /** Messages held after the resume point that do not connect to it (waiting for a replay). */
  hasGap() {
    return this.resumeSeq !== null && this.latestSeq > this.resumeSeq;
  }

  /** @param {Message} m */
  put(m) {
    const known = this.bySeq.get(m.seq);
    if (known && known.message_id === m.message_id) {
      if (sameVersion(known, m)) return 'duplicate';
      this.bySeq.set(m.seq, m);
      return 'updated';
    }
    const otherSeq = this.seqById.get(m.message_id);
    if (otherSeq !== undefined && otherSeq !== m.seq) this.bySeq.delete(otherSeq);
    this.bySeq.set(m.seq, m);
    this.seqById.set(m.message_id, m.seq);
    return known ? 'updated' : 'new';
  }

  /** Forgets every message outside [keepLo, keepHi] (they may be stale; paging reads them again). @param {number} keepLo @param {number} keepHi */
  forgetOutside(keepLo, keepHi) {
    const kept = this.maxKept;
    this.maxKept = 0;
    try {
      this.trim(keepLo, keepHi);
    } finally {
      this.maxKept = kept;
    }
  }

  /** Marks [lo, hi] as held, merging with touching ranges. @param {number} lo @param {number} hi */
  cover(lo, hi) {
    const out = [];
    let merged = /** @type {[number, number]} */ ([lo, hi]);
    for (const r of this.ranges) {
      if (r[1] < merged[0] - 1 || r[0] > merged[1] + 1) out.push(r);
      else merged = [Math.min(r[0], merged[0]), Math.max(r[1], merged[1])];
    }
    out.push(merged);
    out.sort((a, b) => a[0] - b[0]);
    this.ranges = out;
  }

  /**
   * Forgets messages outside [keepLo, keepHi] once more than maxKept are held, farthest first.
   * @param {number} keepLo @param {number} keepHi
   */
  trim(keepLo, keepHi) {
    if (this.bySeq.size <= this.maxKept) return;
    const seqs = [...this.bySeq.keys()].filter((s) => s < keepLo || s > keepHi);
    seqs.sort((a, b) => Math.max(keepLo - b, b - keepHi) - Math.max(keepLo - a, a - keepHi));
    const drop = seqs.slice(0, this.bySeq.size - this.maxKept);
    for (const s of drop) {
      const m = this.bySeq.get(s);
      if (m) this.seqById.delete(m.message_id);
      this.bySeq.delete(s);
    }
    // Rebuild the ranges from what is left (only seqs that were inside a range stay covered).
    const old = this.ranges;
    this.ranges = [];
    for (const [lo, hi] of old) {
      let start = -1;
      for (let s = lo; s <= hi + 1; s++) {
        const held = s <= hi && this.bySeq.has(s);
        if (held && start < 0) start = s;
        if (!held && start >= 0) {
          this.ranges.push([start, s - 1]);
          start = -1;
        }
      }
    }
    // The resume point stays even when its message was dropped: the subscription resumes after
    // it and live messages keep extending it.
  }

  /** Seqs held in [lo, hi], ascending. @param {number} lo @param {number} hi */
  seqsIn(lo, hi) {
    const out = [];
    for (let s = lo; s <= hi; s++) if (this.bySeq.has(s)) out.push(s);
    return out;
  }

  clear() {
    this.bySeq.clear();
    this.seqById.clear();
    this.ranges = [];
    this.latestSeq = 0;
    this.resumeSeq = null;
  }
}

/** @param {Message} a @param {Message} b */
function sameVersion(a, b) {
  return (
    a.text_content === b.text_content &&
    a.deleted === b.deleted &&
    a.edited_at === b.edited_at &&
    a.processed === b.processed &&
    a.file_url === b.file_url
  );
}
