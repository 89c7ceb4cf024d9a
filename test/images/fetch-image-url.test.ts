import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';

import sharp from 'sharp';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import {
  compileAddressPolicy,
  defaultImageFetchOptions,
  fetchImageUrl,
  type ImageFetchLookup,
  type ImageFetchOptions,
} from '../../src/images/fetch-image-url.js';

/** A server on 127.0.0.1 that counts the connections and requests it saw; closed after each test. */
type TestServer = { origin: string; requests: string[]; connections: () => number };

const servers: Server[] = [];

const startServer = async (handler: RequestListener): Promise<TestServer> => {
  const requests: string[] = [];
  let connections = 0;
  const server = createServer((request, response) => {
    requests.push(request.url ?? '');
    handler(request, response);
  });
  server.on('connection', () => (connections += 1));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, requests, connections: () => connections };
};

afterEach(async () => {
  const closing = servers.splice(0).map(
    (server) =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  await Promise.all(closing);
});

const local = ['127.0.0.1/32'];
const optionsWith = (overrides: Partial<ImageFetchOptions> = {}): ImageFetchOptions => ({
  ...defaultImageFetchOptions,
  ...overrides,
});

/** A `dns.lookup` fake answering from a table (ENOTFOUND otherwise), recording the names asked. */
const fakeLookup = (table: Record<string, string[]>): { lookup: ImageFetchLookup; calls: string[] } => {
  const calls: string[] = [];
  const lookup: ImageFetchLookup = (hostname, _options, callback) => {
    calls.push(hostname);
    const addresses = table[hostname];
    setImmediate(() =>
      addresses === undefined
        ? callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), [])
        : callback(
            null,
            addresses.map((address) => ({ address, family: isIP(address) })),
          ),
    );
  };
  return { lookup, calls };
};

let png: Buffer;
beforeAll(async () => {
  png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } })
    .png()
    .toBuffer();
});

const pngServer = (): Promise<TestServer> =>
  startServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'image/png; charset=binary', 'content-length': png.length });
    response.end(png);
  });

const expectFailure = async (pending: ReturnType<typeof fetchImageUrl>, reason: string): Promise<string> => {
  const result = await pending;
  if (result.ok) throw new Error(`expected a '${reason}' failure, got an image`);
  expect(result.error.reason).toBe(reason);
  return result.error.message;
};

describe('fetchImageUrl: allowed fetches', () => {
  it('fetches an image from an allowed network', async () => {
    const server = await pngServer();
    const result = await fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local }));
    expect(result).toEqual({
      ok: true,
      value: { bytes: png, contentType: 'image/png', url: `${server.origin}/x.png` },
    });
  });

  it('connects to the address its lookup checked, sending the hostname as Host', async () => {
    const hosts: (string | undefined)[] = [];
    const server = await startServer((request, response) => {
      hosts.push(request.headers.host);
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(png);
    });
    const port = new URL(server.origin).port;
    const { lookup, calls } = fakeLookup({ 'images.example': ['127.0.0.1'] });
    const result = await fetchImageUrl(
      `http://images.example:${port}/x.png`,
      optionsWith({ allowNetworks: local, lookup }),
    );
    expect(result.ok).toBe(true);
    expect(calls).toEqual(['images.example']);
    expect(hosts).toEqual([`images.example:${port}`]);
  });

  it('sends accept and user-agent, and no cookie or authorization', async () => {
    const headers: Record<string, unknown>[] = [];
    const server = await startServer((request, response) => {
      headers.push({ ...request.headers });
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(png);
    });
    await fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local }));
    expect(headers[0]).toMatchObject({ accept: 'image/*', 'user-agent': 'cursor-bridge' });
    expect(headers[0]).not.toHaveProperty('cookie');
    expect(headers[0]).not.toHaveProperty('authorization');
  });

  it('follows a redirect and reports the final URL', async () => {
    const server = await startServer((request, response) => {
      if (request.url === '/old.png') {
        response.writeHead(301, { location: '/new.png' });
        response.end();
        return;
      }
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(png);
    });
    const result = await fetchImageUrl(`${server.origin}/old.png`, optionsWith({ allowNetworks: local }));
    expect(result.ok && result.value.url).toBe(`${server.origin}/new.png`);
    expect(server.requests).toEqual(['/old.png', '/new.png']);
  });

  it('takes a response without a content type as application/octet-stream (the bytes decide later)', async () => {
    const server = await startServer((_request, response) => response.end(png));
    const result = await fetchImageUrl(`${server.origin}/x`, optionsWith({ allowNetworks: local }));
    expect(result.ok && result.value.contentType).toBe('application/octet-stream');
    expect(result.ok && result.value.bytes).toEqual(png);
  });
});

describe('fetchImageUrl: addresses', () => {
  it('refuses loopback by default without connecting', async () => {
    const server = await pngServer();
    const message = await expectFailure(fetchImageUrl(`${server.origin}/x.png`, optionsWith()), 'address');
    expect(message).toContain('127.0.0.1, a loopback address');
    expect(message).toContain('allowNetworks');
    expect(server.requests).toEqual([]);
    expect(server.connections()).toBe(0);
  });

  it('refuses a hostname that resolves to loopback without connecting', async () => {
    const server = await pngServer();
    const port = new URL(server.origin).port;
    const { lookup } = fakeLookup({ localhost: ['127.0.0.1'] });
    const message = await expectFailure(
      fetchImageUrl(`http://localhost:${port}/x.png`, optionsWith({ lookup })),
      'address',
    );
    expect(message).toContain('resolves to 127.0.0.1, a loopback address');
    expect(server.connections()).toBe(0);
  });

  it.each([
    ['http://10.0.0.5/x.png', '10.0.0.5, a private address'],
    ['http://192.168.1.1/x.png', '192.168.1.1, a private address'],
    ['http://172.16.0.1/x.png', '172.16.0.1, a private address'],
    ['http://100.64.0.1/x.png', '100.64.0.1, a carrier-grade NAT address'],
    ['http://[::1]/x.png', '::1, a loopback address'],
    ['http://[fd00::1]/x.png', 'fd00::1, a unique local address'],
    ['http://[::ffff:127.0.0.1]/x.png', 'a loopback address'],
    ['http://0.0.0.0/x.png', '0.0.0.0, an unspecified address'],
    ['http://[::]/x.png', '::, an unspecified address'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254, a link-local address (the cloud metadata'],
    ['http://[fe80::1]/x.png', 'fe80::1, a link-local address'],
    ['http://224.0.0.1/x.png', 'a multicast address'],
    ['http://255.255.255.255/x.png', 'the broadcast address'],
    ['http://240.0.0.1/x.png', 'a reserved address'],
    ['http://[2002:a00:1::1]/x.png', 'a 6to4 address'],
    ['http://[2001:0:a00:1::1]/x.png', 'a Teredo address'],
    ['http://[64:ff9b::a00:1]/x.png', 'a NAT64 address'],
    ['http://[::7f00:1]/x.png', 'not a global unicast address'],
    ['http://2130706433/x.png', '127.0.0.1, a loopback address'],
  ])('refuses %s', async (url, named) => {
    const { lookup, calls } = fakeLookup({});
    const message = await expectFailure(fetchImageUrl(url, optionsWith({ lookup })), 'address');
    expect(message).toContain(named);
    expect(message).toContain('the bridge fetches only from public addresses');
    expect(calls).toEqual([]);
  });

  it('refuses a hostname resolving to a private address (a connection would have timed out instead)', async () => {
    const { lookup, calls } = fakeLookup({ 'images.example': ['10.1.2.3'] });
    const message = await expectFailure(
      fetchImageUrl('http://images.example/x.png', optionsWith({ lookup })),
      'address',
    );
    expect(message).toBe(
      'http://images.example/x.png resolves to 10.1.2.3, a private address; the bridge fetches only from ' +
        'public addresses (a config can allow a network with cursorImages.allowNetworks)',
    );
    expect(calls).toEqual(['images.example']);
  });

  it('refuses a hostname whose lookup answers synchronously', async () => {
    const lookup: ImageFetchLookup = (_hostname, _options, callback) =>
      callback(null, [{ address: '10.1.2.3', family: 4 }]);
    const message = await expectFailure(
      fetchImageUrl('http://images.example/x.png', optionsWith({ lookup })),
      'address',
    );
    expect(message).toContain('resolves to 10.1.2.3, a private address');
  });

  it('refuses a hostname with one public and one private address', async () => {
    const { lookup } = fakeLookup({ 'mixed.example': ['93.184.216.34', '10.0.0.1'] });
    const message = await expectFailure(
      fetchImageUrl('https://mixed.example/x.png', optionsWith({ lookup })),
      'address',
    );
    expect(message).toContain('resolves to 10.0.0.1, a private address');
  });

  it('refuses a redirect to a private address', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(302, { location: 'http://10.0.0.7/secret.png' });
      response.end();
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'address',
    );
    expect(message).toContain(
      `http://10.0.0.7/secret.png (redirected from ${server.origin}/x.png) is 10.0.0.7, a private address`,
    );
  });

  it('refuses a redirect to the cloud metadata address', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(307, { location: 'http://169.254.169.254/' });
      response.end();
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'address',
    );
    expect(message).toContain('169.254.169.254, a link-local address (the cloud metadata service)');
  });

  it('allows the networks listed in allowNetworks', async () => {
    const policy = compileAddressPolicy(['10.0.0.0/8', 'fd00::/8']);
    expect(policy.check('10.1.2.3')).toEqual({ allowed: true });
    expect(policy.check('::ffff:10.1.2.3')).toEqual({ allowed: true });
    expect(policy.check('fd00::1')).toEqual({ allowed: true });
    expect(policy.check('192.168.0.1')).toEqual({ allowed: false, range: 'a private address' });
  });
});

describe('compileAddressPolicy', () => {
  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.216.34'])(
    'allows the public address %s',
    (address) => {
      expect(compileAddressPolicy([]).check(address)).toEqual({ allowed: true });
    },
  );

  it('refuses what is not an IP address', () => {
    expect(compileAddressPolicy([]).check('images.example')).toEqual({
      allowed: false,
      range: 'not an IP address',
    });
  });

  it('throws on an entry that is not a CIDR', () => {
    expect(() => compileAddressPolicy(['not-a-cidr'])).toThrow(/"not-a-cidr" is not a CIDR/);
  });

  it('makes fetchImageUrl return a failure, not reject, on such an entry', async () => {
    const message = await expectFailure(
      fetchImageUrl('http://93.184.216.34/x.png', optionsWith({ allowNetworks: ['10.0.0.0/99'] })),
      'address',
    );
    expect(message).toContain('"10.0.0.0/99" is not a CIDR');
  });
});

describe('fetchImageUrl: schemes and redirects', () => {
  it.each([
    ['file:///etc/passwd', 'uses file:'],
    ['data:image/png;base64,iVBORw0KGgo=', 'uses data:'],
    ['ftp://images.example/x.png', 'uses ftp:'],
    ['not a url', 'is not a valid URL'],
  ])('refuses %s', async (url, named) => {
    const message = await expectFailure(fetchImageUrl(url, optionsWith()), 'scheme');
    expect(message).toContain(named);
  });

  it('refuses a URL with credentials, without repeating them', async () => {
    const message = await expectFailure(
      fetchImageUrl('http://user:hunter2@images.example/x.png', optionsWith()),
      'scheme',
    );
    expect(message).toContain('carries credentials');
    expect(message).not.toContain('hunter2');
  });

  it('stops a redirect chain longer than maxRedirects', async () => {
    const server = await startServer((request, response) => {
      const step = Number(request.url?.slice('/r/'.length));
      response.writeHead(302, { location: `/r/${step + 1}` });
      response.end();
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/r/0`, optionsWith({ allowNetworks: local, maxRedirects: 2 })),
      'redirects',
    );
    expect(message).toContain('redirected more than 2 times');
    expect(server.requests).toEqual(['/r/0', '/r/1', '/r/2']);
  });

  it('refuses a redirect to ftp:', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(302, { location: 'ftp://images.example/x.png' });
      response.end();
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'scheme',
    );
    expect(message).toContain(
      `ftp://images.example/x.png (redirected from ${server.origin}/x.png) uses ftp:`,
    );
  });
});

describe('fetchImageUrl: responses', () => {
  it('fails on a 404, naming the status', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(404, { 'content-type': 'text/html' });
      response.end('<h1>secret body</h1>');
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'status',
    );
    expect(message).toBe(`${server.origin}/x.png answered 404 Not Found`);
  });

  it('refuses text/html without showing the body', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<h1>secret body</h1>');
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'content-type',
    );
    expect(message).toContain('answered with text/html, not an image');
    expect(message).not.toContain('secret');
  });

  it('refuses image/svg+xml: vector images are not accepted', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'image/svg+xml' });
      response.end('<svg xmlns="http://www.w3.org/2000/svg"/>');
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.svg`, optionsWith({ allowNetworks: local })),
      'content-type',
    );
    expect(message).toContain('vector images are not accepted');
  });

  it('refuses a content-length over the cap at once', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': 1_000_000 });
      response.write(Buffer.alloc(16));
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local, maxBytes: 1000 })),
      'too-large',
    );
    expect(message).toContain('sends 1000000 bytes, more than the 1000 bytes the bridge fetches at most');
  });

  it('stops reading a chunked body once it passes the cap', async () => {
    let serverClosed: Promise<void> = Promise.resolve();
    const server = await startServer((_request, response) => {
      serverClosed = new Promise((resolve) => response.on('close', resolve));
      response.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(16 * 1024);
      const pump = (): void => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', pump);
      };
      pump();
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local, maxBytes: 64 * 1024 })),
      'too-large',
    );
    expect(message).toBe(`${server.origin}/x.png sends more than the 65536 bytes the bridge fetches at most`);
    await serverClosed;
  });

  it('fails with network when nothing listens', async () => {
    const server = await pngServer();
    const closing = servers
      .splice(0)
      .map((open) => new Promise<void>((resolve) => open.close(() => resolve())));
    await Promise.all(closing);
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local })),
      'network',
    );
    expect(message).toContain('ECONNREFUSED');
  });

  it('clips a long URL in its message', async () => {
    const message = await expectFailure(
      fetchImageUrl(`http://10.0.0.5/${'a'.repeat(5000)}.png`, optionsWith()),
      'address',
    );
    expect(message.length).toBeLessThan(500);
  });
});

describe('fetchImageUrl: time bounds and cancellation', () => {
  it('times out a server that never answers, and closes the connection', async () => {
    let serverClosed: Promise<void> = Promise.resolve();
    const server = await startServer((request) => {
      serverClosed = new Promise((resolve) => request.socket.on('close', () => resolve()));
    });
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local, totalTimeoutMs: 300 })),
      'timeout',
    );
    expect(message).toContain('took longer than 300 ms in all');
    await serverClosed;
  });

  it('times out a hop whose lookup never answers', async () => {
    const lookup: ImageFetchLookup = () => {};
    const message = await expectFailure(
      fetchImageUrl('http://images.example/x.png', optionsWith({ lookup, connectTimeoutMs: 100 })),
      'timeout',
    );
    expect(message).toContain('connecting to images.example (DNS and TCP/TLS) took longer than 100 ms');
  });

  it('stops when the caller aborts', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const server = await startServer(() => arrived());
    const controller = new AbortController();
    const pending = fetchImageUrl(
      `${server.origin}/x.png`,
      optionsWith({ allowNetworks: local }),
      controller.signal,
    );
    await requestArrived;
    controller.abort();
    await expectFailure(pending, 'aborted');
  });

  it('does not connect when the signal is already aborted', async () => {
    const server = await pngServer();
    const message = await expectFailure(
      fetchImageUrl(`${server.origin}/x.png`, optionsWith({ allowNetworks: local }), AbortSignal.abort()),
      'aborted',
    );
    expect(message).toContain('cancelled');
    expect(server.connections()).toBe(0);
  });
});
