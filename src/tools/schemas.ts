// The shared argument schemas live with the protocol (the import format uses them too).
export * from '../protocol/schemas.js';
