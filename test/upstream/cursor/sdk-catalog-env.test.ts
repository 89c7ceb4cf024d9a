import { describe, expect, it } from 'vitest';
import {
  SDK_CATALOG_ENV,
  sdkCatalogPublisher,
  type SdkEnv,
} from '../../../src/upstream/cursor/sdk-catalog-env.js';

const read = (env: SdkEnv): unknown => JSON.parse(env[SDK_CATALOG_ENV] ?? 'null');

describe('the catalog handed to the SDK through its environment', () => {
  it('holds the latest catalog of each upstream, merged, in the `{ items }` form the SDK reads', () => {
    const env: SdkEnv = {};
    const publisher = sdkCatalogPublisher(env);
    const [first, second] = [{}, {}];
    publisher.publish(first, [{ id: 'composer-2', aliases: ['composer'] }, { id: 'gpt-5' }]);
    publisher.publish(second, [{ id: 'composer-2', aliases: ['c2'] }, { id: 'claude-4' }]);
    expect(read(env)).toEqual({
      items: [{ id: 'composer-2', aliases: ['composer', 'c2'] }, { id: 'gpt-5' }, { id: 'claude-4' }],
    });
    // A refresh replaces that upstream's catalog: a model it no longer lists is gone unless another has it.
    publisher.publish(first, [{ id: 'composer-2' }]);
    expect(read(env)).toEqual({ items: [{ id: 'composer-2', aliases: ['c2'] }, { id: 'claude-4' }] });
  });

  it('is removed when the last upstream withdraws, so the SDK lists the catalog itself again', () => {
    const env: SdkEnv = { OTHER: 'kept' };
    const publisher = sdkCatalogPublisher(env);
    const [first, second] = [{}, {}];
    publisher.publish(first, [{ id: 'a' }]);
    publisher.publish(second, [{ id: 'b' }]);
    publisher.withdraw(first);
    expect(read(env)).toEqual({ items: [{ id: 'b' }] });
    publisher.withdraw(second);
    expect(env).toEqual({ OTHER: 'kept' });
    // A later upstream publishes again.
    publisher.publish(first, [{ id: 'c' }]);
    expect(read(env)).toEqual({ items: [{ id: 'c' }] });
  });

  it("never overwrites nor removes an operator's own value", () => {
    const own = '[{"id":"composer-2"}]';
    const env: SdkEnv = { [SDK_CATALOG_ENV]: own };
    const publisher = sdkCatalogPublisher(env);
    const owner = {};
    publisher.publish(owner, [{ id: 'gpt-5' }]);
    expect(env[SDK_CATALOG_ENV]).toBe(own);
    publisher.withdraw(owner);
    expect(env[SDK_CATALOG_ENV]).toBe(own);
  });

  it('stands down once someone else replaced its value, for the life of the process', () => {
    const env: SdkEnv = {};
    const publisher = sdkCatalogPublisher(env);
    const owner = {};
    publisher.publish(owner, [{ id: 'a' }]);
    env[SDK_CATALOG_ENV] = '{"items":[{"id":"theirs"}]}';
    publisher.publish(owner, [{ id: 'b' }]);
    publisher.withdraw(owner);
    expect(read(env)).toEqual({ items: [{ id: 'theirs' }] });
  });

  it('is one publisher per environment, shared by every upstream of the process', () => {
    const env: SdkEnv = {};
    expect(sdkCatalogPublisher(env)).toBe(sdkCatalogPublisher(env));
    expect(sdkCatalogPublisher({})).not.toBe(sdkCatalogPublisher(env));
  });
});
