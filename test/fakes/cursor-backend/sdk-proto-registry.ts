/**
 * Protobuf message classes of `@cursor/sdk`, taken out of a patched *copy* of its webpack bundle.
 *
 * The SDK does not export its generated protobuf-es classes. Its bundle keeps them behind the webpack
 * require function (`K` in 1.0.32). We copy `dist/esm` into a git-ignored cache, append
 * `export const __wpRequire=K;` to the copy's `index.js`, import the copy, and walk every
 * `proto/dist/generated` module plus the message fields reachable from them (about 3260 types).
 * The SDK under test (`node_modules/@cursor/sdk`) stays unmodified.
 *
 * The copy lives in `test/.cache/cursor-sdk-<version>-<hash>/node_modules/@cursor/sdk`: inside a
 * `node_modules` folder so vitest externalizes it and its bare imports (`@bufbuild/protobuf`, `zod`, …)
 * resolve to the same installed packages as the real SDK. Building it is idempotent and safe when
 * several processes race: each builds in its own temp dir and renames it into place atomically.
 */

import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The SDK version the patch was verified against. Another version fails loudly. */
export const PATCHED_SDK_VERSION = '1.0.32';

/** Bump when the layout of the patched copy changes, so stale caches are not reused. */
const PATCH_FORMAT = 1;
const READY_MARKER = '.patched-ready';
const EXPORT_LINE = '\nexport const __wpRequire=K;\n';

/** A decoded protobuf-es (v1) message. Build and read them through proto3 JSON to stay type-safe. */
export interface ProtoMessage {
  toBinary(): Uint8Array;
  toJson(options?: { emitDefaultValues?: boolean }): unknown;
}

/** A protobuf-es (v1) message class. */
export interface ProtoMessageType {
  readonly typeName: string;
  fromBinary(bytes: Uint8Array): ProtoMessage;
  fromJson(json: unknown, options?: { ignoreUnknownFields?: boolean }): ProtoMessage;
}

/** Message classes by full type name (`agent.v1.AgentServerMessage`). */
export interface ProtoRegistry {
  readonly size: number;
  has(typeName: string): boolean;
  /** Throws a clear error when the SDK version no longer has the type. */
  get(typeName: string): ProtoMessageType;
}

type WebpackRequire = ((moduleId: string) => unknown) & { m: Record<string, unknown> };

type FieldInfo = { kind: string; T?: unknown; V?: { kind: string; T?: unknown } };

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** Default cache folder (git-ignored). */
const defaultCacheRoot = path.join(repoRoot, 'test', '.cache');

const exists = async (file: string): Promise<boolean> =>
  stat(file).then(
    () => true,
    () => false,
  );

/** Directory of the installed (unmodified) `@cursor/sdk` package. */
const findSdkRoot = (): string => {
  const require = createRequire(import.meta.url);
  // `require` resolves the package's CJS entry: <root>/dist/cjs/index.js.
  return path.resolve(path.dirname(require.resolve('@cursor/sdk')), '../..');
};

/** Fails unless the bundle still names its webpack require function `K`. */
const assertWebpackRequireIsK = (source: string, version: string): void => {
  const definesK = /function K\(\w+\)\{var \w+=\w+\[\w+\];if\(void 0!==\w+\)return \w+\.exports/.test(source);
  const hasModules = /\bK\.m=\w+/.test(source);
  if (!definesK || !hasModules) {
    throw new Error(
      `@cursor/sdk ${version}: the webpack require function in dist/esm/index.js is not \`K\` ` +
        `(expected "function K(…){var …=…[…];if(void 0!==…)return ….exports" and "K.m=…"). ` +
        `The fake Cursor backend patch was written for ${PATCHED_SDK_VERSION}; find the new symbol and ` +
        `update test/fakes/cursor-backend/sdk-proto-registry.ts.`,
    );
  }
};

/**
 * Ensures the patched copy exists under `cacheRoot` (default `test/.cache`) and returns the path of its
 * `dist/esm/index.js`. Idempotent and safe under concurrent callers (other test files / processes).
 */
export const ensurePatchedSdkCopy = async (cacheRoot: string = defaultCacheRoot): Promise<string> => {
  const sdkRoot = findSdkRoot();
  const packageJson = await readFile(path.join(sdkRoot, 'package.json'), 'utf8');
  const version = (JSON.parse(packageJson) as { version?: unknown }).version;
  if (version !== PATCHED_SDK_VERSION) {
    throw new Error(
      `@cursor/sdk is ${String(version)}, but the fake Cursor backend patch was verified on ` +
        `${PATCHED_SDK_VERSION}. Re-check the webpack require symbol and the wire protocol, then update ` +
        `PATCHED_SDK_VERSION in test/fakes/cursor-backend/sdk-proto-registry.ts.`,
    );
  }
  const indexSource = await readFile(path.join(sdkRoot, 'dist', 'esm', 'index.js'), 'utf8');
  assertWebpackRequireIsK(indexSource, version);
  const hash = createHash('sha256')
    .update(indexSource)
    .update(String(PATCH_FORMAT))
    .digest('hex')
    .slice(0, 12);
  const finalDir = path.join(cacheRoot, `cursor-sdk-${version}-${hash}`);
  const packageDir = (root: string): string => path.join(root, 'node_modules', '@cursor', 'sdk');
  const entry = path.join(packageDir(finalDir), 'dist', 'esm', 'index.js');
  if (await exists(path.join(finalDir, READY_MARKER))) return entry;

  await mkdir(cacheRoot, { recursive: true });
  const tempDir = path.join(cacheRoot, `.tmp-sdk-${process.pid}-${randomBytes(6).toString('hex')}`);
  try {
    const tempPackage = packageDir(tempDir);
    await mkdir(path.join(tempPackage, 'dist'), { recursive: true });
    await cp(path.join(sdkRoot, 'dist', 'esm'), path.join(tempPackage, 'dist', 'esm'), { recursive: true });
    await writeFile(path.join(tempPackage, 'package.json'), packageJson);
    // The SDK pins its own zod 3 under its node_modules; link it so the copy loads the same instance.
    const nestedModules = path.join(sdkRoot, 'node_modules');
    if (await exists(nestedModules))
      await symlink(nestedModules, path.join(tempPackage, 'node_modules'), 'dir');
    await writeFile(path.join(tempPackage, 'dist', 'esm', 'index.js'), indexSource + EXPORT_LINE);
    await writeFile(path.join(tempDir, READY_MARKER), `${version}\n`);
    try {
      await rename(tempDir, finalDir);
    } catch (error) {
      // Another process won the race (ENOTEMPTY / EEXIST); its copy is complete because it was renamed
      // into place whole.
      if (!(await exists(path.join(finalDir, READY_MARKER)))) throw error;
    }
  } finally {
    await rm(tempDir, { recursive: true, force: true });
  }
  return entry;
};

const isMessageType = (value: unknown): value is ProtoMessageType & { fields: { list(): FieldInfo[] } } =>
  typeof value === 'function' &&
  typeof (value as { typeName?: unknown }).typeName === 'string' &&
  typeof (value as { fromBinary?: unknown }).fromBinary === 'function';

const buildRegistry = async (): Promise<ProtoRegistry> => {
  const entry = await ensurePatchedSdkCopy();
  const patched = (await import(pathToFileURL(entry).href)) as { __wpRequire?: unknown };
  const webpackRequire = patched.__wpRequire as WebpackRequire | undefined;
  if (typeof webpackRequire !== 'function' || typeof webpackRequire.m !== 'object') {
    throw new Error(`The patched @cursor/sdk copy at ${entry} does not export a webpack require function.`);
  }
  const types = new Map<string, ProtoMessageType & { fields: { list(): FieldInfo[] } }>();
  for (const moduleId of Object.keys(webpackRequire.m)) {
    if (!moduleId.includes('proto/dist/generated')) continue;
    let moduleExports: unknown;
    try {
      moduleExports = webpackRequire(moduleId);
    } catch {
      continue;
    }
    if (typeof moduleExports !== 'object' || moduleExports === null) continue;
    for (const value of Object.values(moduleExports)) {
      if (isMessageType(value)) types.set(value.typeName, value);
    }
  }
  // Some message classes are only reachable through fields of other messages.
  const queue = [...types.values()];
  for (let type = queue.pop(); type !== undefined; type = queue.pop()) {
    let fields: FieldInfo[];
    try {
      fields = type.fields.list();
    } catch {
      continue;
    }
    for (const field of fields) {
      const candidate =
        field.kind === 'message' ? field.T : field.V?.kind === 'message' ? field.V.T : undefined;
      if (isMessageType(candidate) && !types.has(candidate.typeName)) {
        types.set(candidate.typeName, candidate);
        queue.push(candidate);
      }
    }
  }
  if (types.size < 100) {
    throw new Error(
      `Only ${types.size} protobuf types found in the patched @cursor/sdk; the bundle layout changed.`,
    );
  }
  return {
    size: types.size,
    has: (typeName) => types.has(typeName),
    get: (typeName) => {
      const type = types.get(typeName);
      if (!type) throw new Error(`@cursor/sdk ${PATCHED_SDK_VERSION} has no protobuf type ${typeName}`);
      return type;
    },
  };
};

let registryPromise: Promise<ProtoRegistry> | undefined;

/** Loads (once per process) the protobuf classes of the installed `@cursor/sdk`. */
export const loadSdkProtoRegistry = (): Promise<ProtoRegistry> => {
  registryPromise ??= buildRegistry().catch((error: unknown) => {
    registryPromise = undefined;
    throw error;
  });
  return registryPromise;
};
