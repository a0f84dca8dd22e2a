// HTTP requests from a chosen local address (127.0.0.2 stands for "another client" on loopback),
// so per-address limits can be tested: fetch cannot bind its source address.
import http from 'node:http';

export interface Answer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

export function requestFrom(
  baseUrl: string,
  localAddress: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; agent?: http.Agent } = {},
): Promise<Answer> {
  const url = new URL(path, baseUrl);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress,
        agent: options.agent ?? false,
        headers: {
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A tool call over REST from `localAddress`. */
export function toolFrom(baseUrl: string, localAddress: string, tool: string, args: unknown = {}, token?: string, agent?: http.Agent): Promise<Answer> {
  return requestFrom(baseUrl, localAddress, 'POST', `/api/v1/tools/${tool}`, {
    body: args,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    ...(agent ? { agent } : {}),
  });
}

/** `localAddress` as a keep-alive agent (many requests over few connections). */
export function agentFrom(localAddress: string, maxSockets = 16): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, localAddress } as http.AgentOptions);
}
