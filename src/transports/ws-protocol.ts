// Moved to src/protocol/frames.ts (shared by server and client).
export * from '../protocol/frames.js';
