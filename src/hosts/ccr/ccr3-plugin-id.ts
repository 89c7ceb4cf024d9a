/** The plugin's id in CCR 3's `plugins[]` and of its HTTP backend. */
export const ccr3PluginId = 'cursor-bridge';
