/**
 * Parsers for the three environment-block shapes real clients send: Claude Code's `# Environment` section
 * ("Primary working directory: …"), OpenCode's `<env>…</env>` and Codex's `<environment_context>`. Each takes
 * the whole text and the offset of its marker and reads only the block around it: no regex runs over
 * the whole text, so a huge transcript costs one `indexOf` per marker.
 */

/** Which block shape the facts came from. */
export type HostFactsSource = 'claude-code' | 'opencode' | 'codex' | 'env-block';

/** One reported fact, key and value exactly as the client wrote them (trimmed). */
export type HostFact = { key: string; value: string };

/** A parsed block, before normalisation. */
export type HostFactBlock = { source: HostFactsSource; facts: HostFact[] };

/** At most this many lines are read on each side of a Claude Code marker. */
const maxListLines = 64;

/**
 * A `Key: value` fact line, or `undefined` for prose. Keys are short labels ("Primary working
 * directory", "Today's date"); a sentence that happens to contain a colon is not a fact.
 */
export const parseFactLine = (line: string): HostFact | undefined => {
  const colon = line.indexOf(':');
  if (colon <= 0) return undefined;
  const key = line.slice(0, colon).trim();
  if (key.length === 0 || key.length > 48 || !/^[A-Za-z][A-Za-z0-9 '()/_.-]*$/.test(key)) return undefined;
  if (key.split(' ').length > 6) return undefined;
  return { key, value: line.slice(colon + 1).trim() };
};

const lineBounds = (text: string, offset: number): { start: number; end: number } => {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  const newline = text.indexOf('\n', offset);
  return { start, end: newline === -1 ? text.length : newline };
};

const listItem = (line: string): string | undefined => {
  const trimmed = line.trimStart();
  return trimmed.startsWith('- ') ? trimmed.slice(2) : undefined;
};

/**
 * Claude Code's `# Environment` list, anchored on its "Primary working directory:" line: the run of
 * ` - ` items around it, every `Key: value` item kept in order.
 */
export const parseClaudeCodeEnvironment = (text: string, offset: number): HostFactBlock | undefined => {
  const anchor = lineBounds(text, offset);
  if (listItem(text.slice(anchor.start, anchor.end)) === undefined) {
    // Not a list item: take just this line ("Primary working directory: /x" in some custom prompt).
    const fact = parseFactLine(text.slice(offset, anchor.end));
    return fact === undefined ? undefined : { source: 'claude-code', facts: [fact] };
  }
  let first = anchor;
  for (let count = 0; count < maxListLines && first.start > 0; count += 1) {
    const previous = lineBounds(text, first.start - 1);
    if (listItem(text.slice(previous.start, previous.end)) === undefined) break;
    first = previous;
  }
  const facts: HostFact[] = [];
  let line = first;
  for (let count = 0; count < 2 * maxListLines + 1; count += 1) {
    const item = listItem(text.slice(line.start, line.end));
    if (item === undefined) break;
    const fact = parseFactLine(item);
    if (fact !== undefined) facts.push(fact);
    if (line.end >= text.length) break;
    line = lineBounds(text, line.end + 1);
  }
  return { source: 'claude-code', facts };
};

/** A generic `<env>…</env>` block of `Key: value` lines; OpenCode's when it names its working directory. */
export const parseEnvBlock = (text: string, offset: number): HostFactBlock | undefined => {
  const bodyStart = offset + '<env>'.length;
  const close = text.indexOf('</env>', bodyStart);
  if (close === -1) return undefined;
  const facts: HostFact[] = [];
  for (const line of text.slice(bodyStart, close).split('\n')) {
    const fact = parseFactLine(line.trim());
    if (fact !== undefined) facts.push(fact);
  }
  const opencode = facts.some(({ key }) => key === 'Working directory' || key === 'Workspace root folder');
  return { source: opencode ? 'opencode' : 'env-block', facts };
};

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

const decodeEntities = (value: string): string =>
  value.replace(/&(amp|lt|gt|quot|apos);/g, (_match, name: string) => entities[name] ?? '');

/**
 * Codex's `<environment_context>`: its direct leaf elements (`<cwd>`, `<shell>`, `<current_date>`,
 * `<timezone>`, …) under their tag names, plus every `<root>` of a `<…_roots>` container as
 * `workspace_root` (`writable_root`, …). Elements with attributes and other nested content are skipped.
 */
export const parseCodexEnvironment = (text: string, offset: number): HostFactBlock | undefined => {
  const bodyStart = offset + '<environment_context>'.length;
  const close = text.indexOf('</environment_context>', bodyStart);
  if (close === -1) return undefined;
  const body = text.slice(bodyStart, close);
  const facts: HostFact[] = [];
  const open: string[] = [];
  for (let lt = body.indexOf('<'); lt !== -1;) {
    const gt = body.indexOf('>', lt);
    if (gt === -1) break;
    const tag = body.slice(lt + 1, gt);
    if (tag.startsWith('/')) {
      const closing = tag.slice(1).trim();
      const at = open.lastIndexOf(closing);
      if (at !== -1) open.length = at;
    } else if (/^[A-Za-z_][\w-]*$/.test(tag)) {
      const next = body.indexOf('<', gt + 1);
      if (next !== -1 && body.startsWith(`</${tag}>`, next)) {
        const value = decodeEntities(body.slice(gt + 1, next).trim());
        const parent = open.at(-1);
        if (parent === undefined) facts.push({ key: tag, value });
        else if (tag === 'root' && parent.endsWith('_roots')) facts.push({ key: parent.slice(0, -1), value });
        lt = body.indexOf('<', next + tag.length + 3);
        continue;
      }
      open.push(tag);
    } else if (!tag.endsWith('/')) {
      const name = /^[A-Za-z_][\w-]*/.exec(tag)?.[0];
      if (name !== undefined) open.push(name);
    }
    lt = body.indexOf('<', gt + 1);
  }
  return { source: 'codex', facts };
};
