/**
 * The tool host's MCP server name, in a module of its own: a public entry point that loads nothing else, so
 * code that only needs the name (the deny-hook's allow-list in `src/workspace`) does not load the MCP SDK
 * that `./index.js` brings in.
 */

/**
 * The name of the MCP server that carries the client's tools: its `serverInfo.name`, the provider
 * identifier `@cursor/sdk` gives its custom tools, and the one MCP server a workspace's deny-hook lets through.
 */
export const CUSTOM_USER_TOOLS_SERVER_NAME = 'custom-user-tools';
