// cursor-bridge deny-hook, rendered into every scratch workspace from workspace-templates/.
//
// Cursor runs it (see .cursor/hooks.json) with the hook event as JSON on stdin and reads the answer as
// JSON from stdout: {"permission":"allow"} or {"permission":"deny","user_message":…,"agent_message":…}.
// In bridge mode the client hosts every tool, so each Cursor built-in tool is denied; MCP calls to the
// client's own tool server are allowed. Anything unexpected (unknown event, unreadable input) is denied.
import { Buffer } from 'node:buffer';
import process from 'node:process';

const DENY_MESSAGE = '{{json denyMessage}}';
const TOOL_SERVER = '{{json toolServer}}';

// Cursor names an MCP tool call `MCP:<tool>`; the SDK registers the client's tools as
// `custom-user-tools-<tool>`; MCP plumbing (tool and resource listing) carries "Mcp" in its name.
const isMcpTool = (name) =>
  typeof name === 'string' &&
  (name.startsWith('MCP:') || name.startsWith(`${TOOL_SERVER}-`) || /mcp/i.test(name));

const describe = (input) => {
  switch (input.hook_event_name) {
    case 'preToolUse':
      return `The Cursor built-in tool "${String(input.tool_name)}" is disabled in bridge mode.`;
    case 'beforeShellExecution':
      return "Cursor's built-in shell is disabled in bridge mode.";
    case 'beforeReadFile':
      return "Cursor's built-in file reading is disabled in bridge mode.";
    case 'beforeMCPExecution':
      return `Only the "${TOOL_SERVER}" MCP server is available in bridge mode, not "${String(input.mcp_server_name)}".`;
    case 'subagentStart':
      return 'Cursor subagents are disabled in bridge mode.';
    default:
      return 'This Cursor built-in action is disabled in bridge mode.';
  }
};

const decide = (input) => {
  if (input.hook_event_name === 'beforeMCPExecution' && input.mcp_server_name === TOOL_SERVER) {
    return { permission: 'allow' };
  }
  if (input.hook_event_name === 'preToolUse' && isMcpTool(input.tool_name)) return { permission: 'allow' };
  const message = `${describe(input)} ${DENY_MESSAGE}`;
  return { permission: 'deny', user_message: message, agent_message: message };
};

const readStdin = async () => {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
};

let input = {};
try {
  const parsed = JSON.parse(await readStdin());
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) input = parsed;
} catch {
  // Unreadable input: `input` stays empty and the call is denied.
}
process.stdout.write(`${JSON.stringify(decide(input))}\n`);
