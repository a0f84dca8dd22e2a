// WebSocket hub at /ws (SPEC §8). Placeholder until the hub lands.
import type { MountFactory } from './mount.js';

export const wsMount: MountFactory = () => ({});
