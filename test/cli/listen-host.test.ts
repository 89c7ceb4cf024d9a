import { describe, expect, it } from 'vitest';

import { decideListenHost } from '../../src/cli/listen-host.js';
import { main } from '../../src/cli/main.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';
import { resolveConfig } from '../../src/config/load-config.js';

const fileConfig = (raw: Record<string, unknown>) =>
  resolveConfig(raw, { path: '/c.json', env: {}, homedir: '/h' });

describe('decideListenHost', () => {
  it('listens on loopback without a key, from any source', () => {
    expect(decideListenHost({ env: {}, config: fileConfig({}), inContainer: true })).toEqual({
      ok: true,
      host: '127.0.0.1',
    });
    expect(
      decideListenHost({
        flagHost: '::1',
        env: { HOST: 'localhost' },
        config: fileConfig({}),
        inContainer: false,
      }),
    ).toEqual({ ok: true, host: '::1' });
  });

  it('HOST=0.0.0.0 with APIKEY from the environment: both are used (the container setup)', () => {
    expect(
      decideListenHost({
        env: { HOST: '0.0.0.0', APIKEY: 'secret' },
        config: fileConfig({ HOST: '127.0.0.1', APIKEY: 'from-file' }),
        inContainer: true,
      }),
    ).toEqual({ ok: true, host: '0.0.0.0', apiKey: 'secret' });
  });

  it('an APIKEY in the environment lets a config-file HOST through that the file alone could not', () => {
    const config = fileConfig({ HOST: '0.0.0.0' });
    expect(config.host).toBe('127.0.0.1');
    expect(decideListenHost({ env: { APIKEY: 'k' }, config, inContainer: false })).toEqual({
      ok: true,
      host: '0.0.0.0',
      apiKey: 'k',
    });
  });

  it.each([
    ['$HOST', { env: { HOST: '0.0.0.0' } }, false],
    ['--host', { flagHost: '192.168.1.5', env: {} }, false],
    ['$HOST', { env: { HOST: '0.0.0.0', APIKEY: '  ' } }, true],
  ])('refuses %s beyond loopback without a key (container: %s)', (source, input, inContainer) => {
    const decision = decideListenHost({ ...input, config: fileConfig({}), inContainer });
    expect(decision).toEqual({ ok: false, message: expect.stringContaining(`${source} `) });
    expect(decision.ok ? '' : decision.message).toMatch(/needs APIKEY/);
  });

  it('a config-file HOST without a key: CCR’s fallback to 127.0.0.1 outside a container, refusal inside one', () => {
    const config = fileConfig({ HOST: '0.0.0.0' });
    expect(config.warnings).toEqual([expect.stringMatching(/HOST 0\.0\.0\.0 needs APIKEY/)]);
    expect(decideListenHost({ env: {}, config, inContainer: false })).toEqual({
      ok: true,
      host: '127.0.0.1',
    });
    const inside = decideListenHost({ env: {}, config, inContainer: true });
    expect(inside).toEqual({
      ok: false,
      message: expect.stringMatching(/^HOST in the config 0\.0\.0\.0 needs APIKEY.*inside a container/),
    });
  });
});

describe('cursor-bridge serve refusing a host', () => {
  it('exits 2 before starting anything for --host 0.0.0.0 without APIKEY', async () => {
    const captured = createCapturedIo({ homedir: '/nonexistent-home', env: {} });
    const code = await main(
      ['serve', '--host', '0.0.0.0', '--port', '0', '--config', '/nonexistent/config.json'],
      captured.io,
    );
    expect(code).toBe(2);
    expect(captured.stderr()).toMatch(/^cursor-bridge: --host 0\.0\.0\.0 needs APIKEY: /);
    expect(captured.stderr()).not.toMatch(/listening/);
  });
});
