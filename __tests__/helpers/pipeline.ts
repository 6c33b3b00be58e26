// Sends many HTTP/1.1 requests on one socket in one write (pipelining), and reads the status of each answer in order.
import { connect } from 'node:net';

export interface PipelinedRequest {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** The status codes of the responses in `text`, an HTTP/1.1 stream of responses with Content-Length or chunked bodies. */
function statusesOf(text: string): number[] {
  const statuses: number[] = [];
  let at = 0;
  while (at < text.length) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd === -1)
      throw new Error(`an incomplete response head at byte ${at}: ${JSON.stringify(text.slice(at, at + 80))}`);
    const [statusLine = '', ...lines] = text.slice(at, headEnd).split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3}) /.exec(statusLine);
    if (!match) throw new Error(`not a status line at byte ${at}: ${JSON.stringify(statusLine)}`);
    const status = Number(match[1]);
    statuses.push(status);
    const headers = new Map(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    at = headEnd + 4;
    if (status < 200 || status === 204 || status === 304) continue;
    if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
      for (;;) {
        const sizeEnd = text.indexOf('\r\n', at);
        const size = parseInt(text.slice(at, sizeEnd), 16);
        at = sizeEnd + 2 + size + 2;
        if (size === 0) break;
      }
    } else {
      at += Number(headers.get('content-length') ?? 0);
    }
  }
  return statuses;
}

/**
 * Opens one TCP connection to `url` (`http://host:port`), writes every request in one write (`Connection: keep-alive`,
 * the last `Connection: close`), and resolves with the responses' status codes in order once the server closes it.
 */
export function pipeline(url: string, requests: readonly PipelinedRequest[]): Promise<number[]> {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '');
  const text = requests
    .map(({ method = 'GET', path, headers = {} }, i) => {
      const connection = i === requests.length - 1 ? 'close' : 'keep-alive';
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      return `${method} ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${lines.join('')}Connection: ${connection}\r\n\r\n`;
    })
    .join('');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), host);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      try {
        resolve(statusesOf(Buffer.concat(chunks).toString('latin1')));
      } catch (error) {
        reject(error);
      }
    });
    socket.write(text);
  });
}

/** How many times each value occurs, e.g. `{ 200: 3, 403: 37 }`, for exact assertions on racing requests. */
export function tally(values: readonly (number | string)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
