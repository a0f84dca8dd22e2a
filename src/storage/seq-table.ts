// A compact multimap from a 32-bit hash to seqs, in typed arrays (8 bytes a slot): how a room
// finds the seq of a message id or of a (sender, client_msg_id) without keeping the strings.
// Hashes collide; callers read the candidates and compare the real values.

/** FNV-1a over the UTF-16 code units, never 0 (0 marks an empty slot). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h === 0 ? 1 : h;
}

export class SeqTable {
  private keys: Int32Array;
  private seqs: Int32Array;
  private used = 0;

  constructor(capacity = 16) {
    let size = 16;
    while (size < capacity * 2) size *= 2;
    this.keys = new Int32Array(size);
    this.seqs = new Int32Array(size);
  }

  get size(): number {
    return this.used;
  }

  /** Bytes held (for memory figures). */
  get bytes(): number {
    return this.keys.byteLength + this.seqs.byteLength;
  }

  /** The table's arrays and fill, for the persisted index (room-index.ts). */
  export(): { keys: Int32Array; seqs: Int32Array; used: number } {
    return { keys: this.keys, seqs: this.seqs, used: this.used };
  }

  static import(keys: Int32Array, seqs: Int32Array, used: number): SeqTable {
    if (keys.length !== seqs.length || keys.length < 16 || (keys.length & (keys.length - 1)) !== 0 || used * 2 > keys.length) {
      throw new Error('bad seq table');
    }
    const table = new SeqTable();
    table.keys = keys;
    table.seqs = seqs;
    table.used = used;
    return table;
  }

  add(hash: number, seq: number): void {
    if ((this.used + 1) * 2 > this.keys.length) this.grow();
    this.insert(hash | 0, seq);
    this.used++;
  }

  /** Whether anything is stored under the hash (no allocation: probed once per room by getMessage). */
  has(hash: number): boolean {
    const mask = this.keys.length - 1;
    const key = hash | 0;
    for (let i = key & mask; this.keys[i] !== 0; i = (i + 1) & mask) if (this.keys[i] === key) return true;
    return false;
  }

  /** Seqs stored under the hash (callers check which, if any, is the one they want). */
  candidates(hash: number): number[] {
    const out: number[] = [];
    const mask = this.keys.length - 1;
    const key = hash | 0;
    for (let i = key & mask; this.keys[i] !== 0; i = (i + 1) & mask) if (this.keys[i] === key) out.push(this.seqs[i]!);
    return out;
  }

  private insert(key: number, seq: number): void {
    const mask = this.keys.length - 1;
    let i = key & mask;
    while (this.keys[i] !== 0) i = (i + 1) & mask;
    this.keys[i] = key;
    this.seqs[i] = seq;
  }

  private grow(): void {
    const keys = this.keys;
    const seqs = this.seqs;
    this.keys = new Int32Array(keys.length * 2);
    this.seqs = new Int32Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) if (keys[i] !== 0) this.insert(keys[i]!, seqs[i]!);
  }
}
