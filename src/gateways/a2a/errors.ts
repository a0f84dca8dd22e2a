// Our error codes as A2A errors (SPEC §12): a refusal by the room's rules keeps its code in the
// JSON-RPC error's data (google.rpc.ErrorInfo.metadata.code), so a client can tell
// `room_paused` from `not_your_turn`.
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { AppError } from '../../errors.js';

/** The A2A error for a tool call's refusal; anything that is not an AppError is thrown as it is. */
export function toA2aError(err: unknown): unknown {
  if (!(err instanceof AppError) || err.code === 'internal_error') return err;
  const options = { message: err.message, metadata: { code: err.code } };
  return err.code === 'validation_error' || err.code === 'payload_too_large' ? new RequestMalformedError(options) : new UnsupportedOperationError(options);
}

/**
 * The JSON-RPC body of a request refused before the SDK reads it: authentication (401),
 * authorization (403), an unknown room (404), a body over the limit (413).
 */
export function refusalBody(status: 401 | 403 | 404 | 413 | number, code: string, message: string) {
  const reason = status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'PERMISSION_DENIED' : status === 404 ? 'NOT_FOUND' : status === 413 ? 'PAYLOAD_TOO_LARGE' : 'REFUSED';
  return {
    jsonrpc: '2.0',
    id: null,
    error: {
      code: -32600,
      message,
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'agent-chatroom', metadata: { code } }],
    },
  };
}
