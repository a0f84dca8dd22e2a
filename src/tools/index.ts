// Builds the one registry every transport serves.
import { auditLine, writeAudit } from './audit.js';
import { ROOM_ID } from '../rooms/rules.js';
import { exportTools } from './export.js';
import { identityTools } from './identity.js';
import { messageTools } from './messages.js';
import { ToolRegistry } from './registry.js';
import { roomTools } from './rooms.js';
import type { ToolServices } from './services.js';

export type { ToolServices } from './services.js';

export function buildRegistry(app: ToolServices): ToolRegistry {
  const registry = new ToolRegistry({
    limitAddress: (address) => app.limits.consumeAddress(address),
    limitCaller: (caller) => app.limits.consumeParticipant(caller.id),
    observe: (call) => {
      app.metrics.countCall(call.tool, call.transport, call.outcome);
      // Names and outcomes only: message texts and tokens never reach the log at info level.
      app.logger.info({ requestId: call.requestId, tool: call.tool, transport: call.transport, outcome: call.outcome, ms: call.ms }, 'call');
    },
    succeeded: (tool, args, answer, ctx) => {
      const line = auditLine(tool, args, answer, ctx.caller);
      if (line) writeAudit(app.logger, { ...line, address: ctx.address ?? null, request_id: ctx.requestId });
    },
    authenticate: (token) => app.participants.authenticate(token),
    prime: (token) => app.participants.prime(token),
    touched: (caller) => app.presence.touch(caller.id),
    // After the call, not before: a journal append made at the start of a call queued the call's
    // own commit behind its fsync (two fsyncs in a row for a join or a status change).
    settled: (caller) => app.lastActive.called(caller.id),
    defaultLanguage: app.config.defaultLanguage,
    roomLanguage: async (roomId) => (ROOM_ID.test(roomId) ? (await app.rooms.currentRoom(roomId))?.language : undefined),
  });
  registry.register(...identityTools(app), ...roomTools(app), ...messageTools(app), ...exportTools(app));
  return registry;
}
