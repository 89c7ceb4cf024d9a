/**
 * What `GET /v1/models` lists: Cursor's live catalog, each model with the context window of the variant the
 * bridge runs for it, then the provider's configured `models` the catalog lacks (no window: Cursor does
 * not say one). While the catalog cannot be read, the configured models alone.
 */

import type { Logger } from 'pino';
import type { BridgeConfig } from '../config/load-config.js';
import type { ListedModel } from '../hosts/http/create-server.js';
import { findCatalogEntry } from '../config/find-catalog-entry.js';
import {
  contextWindowOf,
  cursorDefaultContextWindow,
  type CatalogModel,
} from '../upstream/cursor/model-selection.js';
import type { UpstreamPort } from '../upstream/upstream-port.js';

/**
 * A catalog entry as an upstream lists it: the Cursor upstream's are the SDK's `ModelListItem`s, whose
 * parameters and variants say the context window; an entry without them is a model without a context
 * parameter (Cursor's default window).
 */
type ListableModel = Pick<CatalogModel, 'id'> & Partial<Omit<CatalogModel, 'id'>>;

const describe = (model: ListableModel): ListedModel => ({
  id: model.id,
  ...(model.displayName === undefined ? {} : { displayName: model.displayName }),
  ...(model.aliases === undefined ? {} : { aliases: model.aliases }),
  contextWindow:
    contextWindowOf({ ...model, displayName: model.displayName ?? model.id }) ?? cursorDefaultContextWindow,
});

/** The `/v1/models` entries; never rejects (a catalog that cannot be read is logged at `debug`). */
export const listBridgeModels = async (
  config: Pick<BridgeConfig, 'cursor'>,
  upstream: Pick<UpstreamPort, 'listModels'>,
  logger: Logger,
): Promise<ListedModel[]> => {
  let catalog: readonly ListableModel[] | undefined;
  try {
    catalog = await upstream.listModels?.();
  } catch (error) {
    logger.debug(
      { err: error },
      "GET /v1/models: Cursor's catalog could not be read; listing the configured models",
    );
  }
  if (catalog === undefined) return config.cursor.models.map((id) => ({ id }));
  const listed = catalog.map(describe);
  const configuredOnly = config.cursor.models.filter((id) => findCatalogEntry(catalog, id) === undefined);
  return [...listed, ...configuredOnly.map((id) => ({ id }))];
};
