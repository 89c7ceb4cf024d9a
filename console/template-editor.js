// The console's Grounding tab: the bridge's workspace templates (those its cursorMode does not use shown
// apart), each edited with a live preview, saved as an override or reverted to its default. The catalog is
// read again whenever the live feed reports that the bridge's watcher reloaded the templates.
import { h } from './vendor/preact.mjs';
import { useCallback, useEffect, useState } from './vendor/preact-hooks.mjs';
import htm from './vendor/htm.mjs';
import { changing, request } from './console-api.js';
import { shortKey } from './console-format.js';

const html = htm.bind(h);

const roleLabels = {
  'workspace-file': 'workspace file',
  'deny-message': 'deny message',
  'prompt-head': 'prompt head',
  'prompt-tail': 'prompt tail',
};

const issueText = (issue) =>
  issue.line === undefined ? issue.message : `line ${issue.line}, column ${issue.column}: ${issue.message}`;

/** `reloads`: the template reloads the live feed announced, `{ count, latest }`. */
export const TemplateEditor = ({ reloads }) => {
  const [catalog, setCatalog] = useState(undefined);
  const [selected, setSelected] = useState(undefined);
  const [draft, setDraft] = useState('');
  const [target, setTarget] = useState('');
  const [preview, setPreview] = useState({ ok: true, text: '' });
  const [status, setStatus] = useState('');
  const [error, setError] = useState('');
  const [saving, setSaving] = useState(false);

  const load = useCallback(async () => {
    const { status: code, body } = await request('templates');
    if (code !== 200) return setError(body.error?.message ?? `The bridge answered ${code}.`);
    setCatalog(body);
    return body;
  }, []);
  useEffect(() => {
    load().then((body) => {
      const first = body?.templates.find((template) => template.modes.includes(body.mode));
      if (first !== undefined) {
        setSelected(first.name);
        setDraft(first.text);
      }
    });
  }, []);
  // The watcher reloaded the store: show what is in use now.
  useEffect(() => {
    const { latest } = reloads;
    if (latest === undefined) return;
    load();
    if (latest.changed.length > 0)
      setStatus(`The bridge reloaded ${latest.changed.join(', ')} at ${latest.at}.`);
  }, [reloads.count]);

  const template = catalog?.templates.find((entry) => entry.name === selected);

  useEffect(() => {
    if (template === undefined) return undefined;
    const timer = setTimeout(async () => {
      const { status: code, body } = await request('templates/preview', {
        method: 'POST',
        headers: changing,
        body: JSON.stringify({
          name: template.name,
          text: draft,
          ...(target === '' ? {} : { session: target }),
        }),
      });
      if (code === 200) setPreview(body);
      else
        setPreview({
          ok: false,
          issues: [{ message: body.error?.message ?? `The bridge answered ${code}.` }],
        });
    }, 200);
    return () => clearTimeout(timer);
  }, [selected, draft, target]);

  if (error)
    return html`<section>
      <h2>Grounding</h2>
      <p class="issues">${error}</p>
    </section>`;
  if (catalog === undefined)
    return html`<section>
      <h2>Grounding</h2>
      <p class="muted">Reading the templates…</p>
    </section>`;

  const choose = (name) => {
    const next = catalog.templates.find((entry) => entry.name === name);
    setSelected(name);
    setDraft(next?.text ?? '');
    setStatus('');
  };
  const issues = preview.ok ? [] : preview.issues;
  const dirty = template !== undefined && draft !== template.text;
  const save = async () => {
    setSaving(true);
    const { status: code, body } = await request(`templates/${encodeURIComponent(template.name)}`, {
      method: 'PUT',
      headers: changing,
      body: JSON.stringify({ text: draft }),
    });
    setSaving(false);
    if (code === 200)
      setStatus(`Saved to ${body.saved}; the bridge picks it up when its watcher sees the file.`);
    else
      setPreview({
        ok: false,
        issues: body.error?.issues ?? [{ message: body.error?.message ?? `${code}` }],
      });
    await load();
  };
  const revert = async () => {
    const { status: code, body } = await request(`templates/${encodeURIComponent(template.name)}`, {
      method: 'DELETE',
      headers: changing,
    });
    if (code !== 200) return setStatus(body.error?.message ?? `The bridge answered ${code}.`);
    setStatus(
      body.reverted
        ? 'Override removed: the default applies once the watcher sees it.'
        : 'There was no override.',
    );
    setDraft(template.defaultText);
    await load();
  };

  return html`<section data-testid="grounding">
    <h2>Grounding (cursorMode ${catalog.mode})</h2>
    <p class="muted">
      Defaults: <code>${catalog.defaultDir}</code>. Saves go to
      <code>${catalog.overrideDir ?? '(none)'}</code>; the next turn's prompt head and tail use them, and
      AGENTS.md and the hooks are rewritten for the next agent.
    </p>
    ${
      catalog.problems.length > 0 &&
      html`<div class="issues" data-testid="template-problems">
        ${catalog.problems.map((problem) => html`<div>${problem.path}: ${problem.message}</div>`)}
      </div>`
    }
    <div class="editor">
      <div class="templates" data-testid="template-list">
        ${catalog.templates.map(
          (entry) =>
            html`<button
              key=${entry.name}
              data-template=${entry.name}
              aria-current=${String(entry.name === selected)}
              class=${entry.modes.includes(catalog.mode) ? '' : 'unused'}
              onClick=${() => choose(entry.name)}
            >
              <div><code>${entry.name}</code></div>
              <div class="muted">
                ${roleLabels[entry.role]} · ${entry.modes.join(', ')}
                ${entry.source.origin === 'override' && html` <span class="badge override">override</span>`}
              </div>
            </button>`,
        )}
      </div>
      <div>
        <div class="toolbar">
          <strong><code>${template?.name}</code></strong>
          <span class="muted" data-testid="template-in-use"
            >in use: ${template?.source.origin} (${template?.source.path})</span
          >
        </div>
        <textarea
          data-testid="template-editor"
          spellcheck="false"
          value=${draft}
          onInput=${(event) => setDraft(event.target.value)}
        ></textarea>
        <div class="toolbar">
          <button
            class="primary"
            data-testid="template-save"
            disabled=${saving || issues.length > 0 || !dirty}
            onClick=${save}
          >
            Save override
          </button>
          <button data-testid="template-reset" disabled=${!dirty} onClick=${() => setDraft(template.text)}>
            Undo edits
          </button>
          <button
            data-testid="template-revert"
            disabled=${template?.source.origin !== 'override' && template?.overrideText === null}
            onClick=${revert}
          >
            Revert to default
          </button>
        </div>
        ${
          issues.length > 0 &&
          html`<div class="issues" role="alert" data-testid="template-issues">
            ${issues.map((issue) => html`<div>${issueText(issue)}</div>`)}
          </div>`
        }
        ${status && html`<div class="status" data-testid="template-status">${status}</div>`}
      </div>
      <div>
        <div class="toolbar">
          <label>
            Preview for
            <select
              data-testid="preview-target"
              value=${target}
              onChange=${(event) => setTarget(event.target.value)}
            >
              <option value="">example environment (${catalog.example.root})</option>
              ${(catalog.sessions ?? []).map(
                (session) =>
                  html`<option value=${session.session}>
                    conversation ${shortKey(session.session)} (${session.root ?? 'no root reported'})
                  </option>`,
              )}
            </select>
          </label>
          ${
            catalog.sessions === null &&
            html`<span class="muted"
              >Live conversations' host facts are shown on the bridge's own machine only.</span
            >`
          }
        </div>
        <pre class="preview" data-testid="template-preview">${preview.ok ? preview.text : ''}</pre>
      </div>
    </div>
    <h2 style="margin-top:14px">Placeholders</h2>
    <table class="placeholders" data-testid="placeholder-table">
      <thead>
        <tr>
          <th>placeholder</th>
          <th>kind</th>
          <th>meaning</th>
          <th>example</th>
        </tr>
      </thead>
      <tbody>
        ${catalog.placeholders.map(
          (placeholder) =>
            html`<tr key=${placeholder.name}>
              <td><code>{{${placeholder.name}}}</code></td>
              <td>${placeholder.kind}</td>
              <td>${placeholder.meaning}</td>
              <td><code>${placeholder.example}</code></td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
};
