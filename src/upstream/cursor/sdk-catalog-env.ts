/**
 * Hands the model catalog the process already cached to the SDK's own model check, so a new conversation
 * does not list the catalog again.
 *
 * `@cursor/sdk` (1.0.32) checks the model of every `Agent.create` against the catalog. A create with its
 * own store (every agent of the bridge has one) builds a new platform whose catalog cache is empty, so each
 * new conversation fetched `GET /v1/models` before its first send: one round trip on its path. The SDK
 * skips the fetch when `CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON` holds a catalog (`{ items: [{ id, aliases }] }`),
 * which it reads from the environment at each create, so this module keeps that variable equal to the
 * catalogs the process's upstreams cached, rewritten whenever one of them refreshes.
 *
 * Why a process-wide variable is safe with creates in flight: the SDK reads it once per create, and each
 * write replaces the whole value (JavaScript runs one thing at a time: a read sees one whole catalog). The
 * value is the union of every live upstream's latest catalog, and an upstream only creates an agent for a
 * model it found in its own latest catalog, so the SDK's check accepts whatever the bridge accepted. A
 * model the latest refresh dropped is refused, as the SDK's own fetch would have refused it. The check
 * only resolves an id or alias; Cursor's backend still decides what the key may run. The cost: a key
 * revoked while the catalog is cached is no longer refused by the create's catalog fetch (a typed 401 at
 * once) but by the run's key exchange, which the SDK retries (≈ 15 s) before the run fails; the client still
 * gets an authentication error.
 *
 * An operator's own value of the variable is never overwritten: when it holds something this module did
 * not write, the module leaves it alone for the life of the process. When the last upstream closes, the
 * module's value is removed, and the SDK lists the catalog itself again.
 */

/** The variable the SDK reads at each create. */
export const SDK_CATALOG_ENV = 'CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON';

/** What the SDK's check reads of a catalog entry. */
export type SdkCatalogEntry = { id: string; aliases?: readonly string[] };

/** The environment the SDK reads (`process.env` in production). */
export type SdkEnv = Record<string, string | undefined>;

/** One environment's publisher: the catalogs of the upstreams that use it. */
class CatalogPublisher {
  readonly #env: SdkEnv;
  readonly #catalogs = new Map<object, readonly SdkCatalogEntry[]>();
  /** The value last written, to tell it from an operator's. */
  #written: string | undefined;
  /** Set once the variable was found holding a value this module did not write. */
  #foreign = false;

  constructor(env: SdkEnv) {
    this.#env = env;
  }

  publish(owner: object, models: readonly SdkCatalogEntry[]): void {
    if (this.#yielded()) return;
    this.#catalogs.set(owner, models);
    this.#write();
  }

  withdraw(owner: object): void {
    if (!this.#catalogs.delete(owner) || this.#yielded()) return;
    this.#write();
  }

  /** Whether the variable is an operator's: true from the first time it holds a value not written here. */
  #yielded(): boolean {
    const current = this.#env[SDK_CATALOG_ENV];
    if (!this.#foreign && current !== undefined && current !== this.#written) this.#foreign = true;
    return this.#foreign;
  }

  #write(): void {
    if (this.#catalogs.size === 0) {
      delete this.#env[SDK_CATALOG_ENV];
      this.#written = undefined;
      return;
    }
    const aliases = new Map<string, Set<string>>();
    for (const models of this.#catalogs.values()) {
      for (const model of models) {
        const known = aliases.get(model.id) ?? new Set<string>();
        for (const alias of model.aliases ?? []) known.add(alias);
        aliases.set(model.id, known);
      }
    }
    const items = [...aliases].map(([id, names]) =>
      names.size === 0 ? { id } : { id, aliases: [...names] },
    );
    this.#written = JSON.stringify({ items });
    this.#env[SDK_CATALOG_ENV] = this.#written;
  }
}

const publishers = new WeakMap<SdkEnv, CatalogPublisher>();

/** The publisher of `env` (one per environment object, shared by every upstream of the process). */
export const sdkCatalogPublisher = (env: SdkEnv): CatalogPublisher => {
  let publisher = publishers.get(env);
  if (publisher === undefined) {
    publisher = new CatalogPublisher(env);
    publishers.set(env, publisher);
  }
  return publisher;
};
