// Sends a request line as written, byte for byte, over a real socket: for targets no HTTP client would send.
import { type AddressInfo, connect, type Server } from 'node:net';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function rawRequest(server: Server, method: string, target: string, extraHeaders = ''): Promise<RawResponse> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.end(
      Buffer.from(
        `${method} ${target} HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n${extraHeaders}\r\n`,
        'utf8',
      ),
    );
  });
}
