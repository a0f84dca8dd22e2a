// The remote A2A agent as the runner sees it: its card read once at start, a client on the
// first interface of the card that the SDK speaks here (JSON-RPC or HTTP+JSON), and the
// credentials (--header, --bearer-env) added to every request. Credentials are never logged:
// only header names are.
import { type AgentCard } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { networkReason, StartError } from '../agent/connect.js';

/** Bindings this runner can call (the SDK's gRPC transport needs extra packages, not installed). */
export const SUPPORTED_BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;

/** Reading the card gives up after this long. */
export const CARD_TIMEOUT_MS = 10_000;

export interface RemoteAgent {
  card: AgentCard;
  client: Client;
  /** The binding chosen (JSONRPC or HTTP+JSON). */
  binding: string;
  streaming: boolean;
}

/** `Name: value` → [name, value]; throws on anything else (the value is never echoed). */
export function parseHeader(raw: string): [string, string] {
  const colon = raw.indexOf(':');
  const name = colon > 0 ? raw.slice(0, colon).trim() : '';
  const value = colon > 0 ? raw.slice(colon + 1).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || !value || /[\r\n]/.test(value)) {
    throw new Error(`--header must look like 'Name: value'${name ? ` (header ${name})` : ''}`);
  }
  return [name, value];
}

/** A fetch that adds the credentials to every request (the card, the calls). */
export function fetchWithHeaders(headers: Readonly<Record<string, string>>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged });
  };
}

export async function connectRemote(cardUrl: string, headers: Readonly<Record<string, string>>): Promise<RemoteAgent> {
  let url: URL;
  try {
    url = new URL(cardUrl);
  } catch {
    throw new StartError(`--card: "${cardUrl}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StartError(`--card: "${cardUrl}" is not an http(s) URL`);
  const fetchImpl = fetchWithHeaders(headers);
  const timed: typeof fetch = (input, init) => fetchImpl(input, { ...init, signal: AbortSignal.timeout(CARD_TIMEOUT_MS) });
  let card: AgentCard;
  try {
    card = await new DefaultAgentCardResolver({ fetchImpl: timed }).resolve(url.href, url.href);
  } catch (err) {
    const why = err instanceof Error && /Failed to fetch Agent Card/.test(err.message) ? err.message.replace(/^.*: (\d+)$/, 'HTTP $1') : networkReason(err);
    throw new StartError(`Cannot read the agent card at ${url.href} (${why})`);
  }
  const offered = (card.supportedInterfaces ?? []).map((i) => i.protocolBinding);
  const binding = offered.find((b) => (SUPPORTED_BINDINGS as readonly string[]).includes(b));
  if (!binding) {
    throw new StartError(
      `The agent card at ${url.href} offers no interface this runner speaks (${SUPPORTED_BINDINGS.join(' or ')}); it offers ${offered.length ? offered.join(', ') : 'none'}`,
    );
  }
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [binding as 'JSONRPC' | 'HTTP+JSON'],
  });
  let client: Client;
  try {
    client = await factory.createFromAgentCard(card);
  } catch (err) {
    throw new StartError(`Cannot use the agent card at ${url.href}: ${(err as Error).message}`);
  }
  return { card, client, binding, streaming: card.capabilities?.streaming === true };
}
