/** What a model lookup reads of a Cursor catalog entry (structurally the SDK's `ModelListItem`). */
export type CatalogEntry = { id: string; aliases?: readonly string[] };

/**
 * The catalog entry for `name`, as the SDK resolves a model name: exact id, then alias, then either
 * ignoring case.
 */
export const findCatalogEntry = <T extends CatalogEntry>(
  catalog: readonly T[],
  name: string,
): T | undefined => {
  const lower = name.toLowerCase();
  return (
    catalog.find((entry) => entry.id === name) ??
    catalog.find((entry) => entry.aliases?.includes(name)) ??
    catalog.find(
      (entry) =>
        entry.id.toLowerCase() === lower || entry.aliases?.some((alias) => alias.toLowerCase() === lower),
    )
  );
};
