// The cursor-bridge console: Preact + htm, no build step. It reads the bridge's /console/api and its live
// feed (Server-Sent Events); it never receives what a user or a model said, only figures and names. This
// module is the page itself (login, the tabs) and the Live tab; the Grounding tab is `template-editor.js`.
import { h, render } from './vendor/preact.mjs';
import { useCallback, useEffect, useMemo, useRef, useState } from './vendor/preact-hooks.mjs';
import htm from './vendor/htm.mjs';
import uPlot from './vendor/uPlot.esm.js';
import { api, changing, request } from './console-api.js';
import { bytes, cents, duration, number, shortKey, since } from './console-format.js';
import { TemplateEditor } from './template-editor.js';

const html = htm.bind(h);

// --- live data --------------------------------------------------------------------------------------

/** The live feed: state every tick, the hour's history now and then, template reloads when they happen. */
const useLiveFeed = (enabled, onTemplates) => {
  const [state, setState] = useState(undefined);
  const [history, setHistory] = useState(undefined);
  const [connected, setConnected] = useState(false);
  const templatesRef = useRef(onTemplates);
  templatesRef.current = onTemplates;
  useEffect(() => {
    if (!enabled) return undefined;
    const source = new EventSource(`${api}/events`);
    source.addEventListener('open', () => setConnected(true));
    source.addEventListener('error', () => setConnected(false));
    source.addEventListener('state', (event) => {
      setConnected(true);
      setState(JSON.parse(event.data));
    });
    source.addEventListener('history', (event) => setHistory(JSON.parse(event.data)));
    source.addEventListener('templates', (event) => templatesRef.current(JSON.parse(event.data)));
    return () => source.close();
  }, [enabled]);
  return { state, history, connected };
};

// --- login ------------------------------------------------------------------------------------------

const Login = ({ onLogin }) => {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const submit = async (event) => {
    event.preventDefault();
    const { status, body } = await request('login', {
      method: 'POST',
      headers: changing,
      body: JSON.stringify({ key }),
    });
    if (status === 200) onLogin();
    else setError(body.error?.message ?? `The bridge answered ${status}.`);
  };
  return html`<section>
    <h2>Log in</h2>
    <form class="login" onSubmit=${submit}>
      <p class="muted">
        This bridge has an API key (APIKEY in its config). Enter it once: the console keeps a login cookie,
        never the key.
      </p>
      <input
        type="password"
        data-testid="login-key"
        autocomplete="current-password"
        value=${key}
        onInput=${(event) => setKey(event.target.value)}
      />
      <div class="toolbar"><button class="primary" type="submit">Log in</button></div>
      ${error && html`<p class="issues" role="alert">${error}</p>`}
    </form>
  </section>`;
};

// --- live view ----------------------------------------------------------------------------------------

const Figure = ({ label, value, testid }) =>
  html`<div class="figure" data-testid=${testid}>
    <div class="value">${value}</div>
    <div class="label">${label}</div>
  </div>`;

const ProcessPanel = ({ process: info }) => {
  if (info === undefined)
    return html`<section>
      <h2>Process</h2>
      <p class="muted">Waiting for the bridge…</p>
    </section>`;
  const pool = info.warmPool === null ? 'off' : `${info.warmPool.size} (${info.warmPool.state})`;
  return html`<section data-testid="process">
    <h2>
      Process ${info.draining && html`<span class="badge draining" data-testid="draining">draining</span>`}
    </h2>
    <div class="grid">
      <${Figure} label="uptime" value=${duration(info.uptimeSeconds)} testid="uptime" />
      <${Figure} label="resident memory" value=${bytes(info.rssBytes)} testid="rss" />
      <${Figure} label="JS heap in use" value=${bytes(info.heapUsedBytes)} />
      <${Figure} label="CPU (one core)" value=${`${info.cpuPercent} %`} />
      <${Figure} label="sessions / cap" value=${`${info.sessions} / ${info.maxSessions}`} testid="sessions" />
      <${Figure} label="turns in flight" value=${info.inFlight} />
      <${Figure} label="parked tool calls" value=${info.parkedCalls} testid="parked-calls" />
      <${Figure} label="warm workspaces" value=${pool} />
    </div>
  </section>`;
};

const ConversationRow = ({ conversation: c, now }) => {
  const usage = c.usage ?? {};
  const parked = c.parked.map((call) => `${call.tool} · ${since(call.since, now)}`).join(', ');
  return html`<tr data-testid="conversation-row" data-session=${c.session} data-state=${c.state}>
    <td><code title=${c.session}>${shortKey(c.session)}</code></td>
    <td>${c.client ?? '–'}</td>
    <td>${c.protocol ?? '–'}</td>
    <td>
      ${c.model ?? '–'}
      <div class="muted">${c.route ?? ''}</div>
    </td>
    <td>
      <span class=${`badge ${c.state}`} data-testid="conversation-state">${c.state}</span>
      ${parked && html`<div class="muted" data-testid="parked-tools">${parked}</div>`}
    </td>
    <td class="num">${c.turns}</td>
    <td class="num">${number(usage.inputTokens)} / ${number(usage.outputTokens)}</td>
    <td class="num">${number(usage.cacheReadTokens)}</td>
    <td class="num" title=${`${cents(c.cost?.rawCents)} before discounts`}>
      ${cents(c.cost?.chargedCents)}${c.unpricedRuns > 0 ? html`<div class="muted">${c.unpricedRuns} unpriced</div>` : ''}
    </td>
    <td class="num">${c.scratchPathCorrections} / ${c.scratchPathViolations}</td>
    <td class="num">${since(c.lastUsedAt, now)} ago</td>
  </tr>`;
};

const Conversations = ({ state }) => {
  if (state === undefined) return null;
  const now = Date.parse(state.at);
  const list = [...state.conversations].reverse();
  const side = state.sideCalls;
  return html`<section>
    <h2>Conversations (${list.length})</h2>
    ${
      list.length === 0
        ? html`<p class="muted" data-testid="no-conversations">
            No live conversation. One appears here at its first turn.
          </p>`
        : html`<table data-testid="conversations">
            <thead>
              <tr>
                <th>session</th>
                <th>client</th>
                <th>protocol</th>
                <th>model / route</th>
                <th>state</th>
                <th class="num">turns</th>
                <th class="num">tokens in / out</th>
                <th class="num">cache read</th>
                <th class="num">cost</th>
                <th class="num" title="scratch-path corrections / violations">scratch fixes</th>
                <th class="num">last used</th>
              </tr>
            </thead>
            <tbody>
              ${list.map((conversation) => html`<${ConversationRow} key=${conversation.session} conversation=${conversation} now=${now} />`)}
            </tbody>
          </table>`
    }
    ${
      side.runs > 0 &&
      html`<p class="muted">
        Web search side calls: ${side.runs} runs, ${number(side.usage.inputTokens)} /
        ${number(side.usage.outputTokens)} tokens, ${cents(side.cost.chargedCents)}.
      </p>`
    }
  </section>`;
};

const Chart = ({ title, series, data, testid }) => {
  const target = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    if (target.current === null) return undefined;
    plot.current = new uPlot(
      {
        width: Math.max(320, target.current.clientWidth),
        height: 180,
        series: [{}, ...series],
        axes: [{}, { size: 50 }],
        legend: { show: true },
      },
      data,
      target.current,
    );
    return () => plot.current?.destroy();
  }, [series.map((entry) => entry.label).join()]);
  useEffect(() => plot.current?.setData(data), [data]);
  return html`<div class="chart" data-testid=${testid}>
    <h3>${title}</h3>
    <div ref=${target}></div>
  </div>`;
};

const palette = ['#2f5bd3', '#1f8a4c', '#c0392b', '#b26a00', '#7b3fc4', '#008b8b'];

const Charts = ({ history }) => {
  const charts = useMemo(() => {
    if (history === undefined) return undefined;
    const { buckets } = history;
    const times = buckets.map((bucket) => bucket.start / 1000);
    const turns = (bucket) => Object.values(bucket.turns).reduce((sum, value) => sum + value, 0);
    const kinds = [...new Set(buckets.flatMap((bucket) => Object.keys(bucket.errors)))].sort();
    const line = (label, index) => ({
      label,
      stroke: palette[index % palette.length],
      width: 1.5,
      points: { show: true, size: 4 },
    });
    return [
      {
        title: 'Turns per minute',
        testid: 'chart-turns',
        series: ['finished', 'tool-use', 'failed', 'cancelled'].map(line),
        data: [
          times,
          ...['finished', 'tool-use', 'failed', 'cancelled'].map((k) => buckets.map((b) => b.turns[k])),
        ],
      },
      {
        title: 'Turn duration (ms)',
        testid: 'chart-latency',
        series: ['mean', 'max'].map(line),
        data: [
          times,
          buckets.map((b) => (turns(b) === 0 ? null : Math.round(b.durationMsSum / turns(b)))),
          buckets.map((b) => (turns(b) === 0 ? null : b.durationMsMax)),
        ],
      },
      {
        title: 'Tokens per minute',
        testid: 'chart-tokens',
        series: ['input', 'output'].map(line),
        data: [times, buckets.map((b) => b.inputTokens), buckets.map((b) => b.outputTokens)],
      },
      {
        title: 'Errors by kind',
        testid: 'chart-errors',
        series: (kinds.length === 0 ? ['none'] : kinds).map(line),
        data: [
          times,
          ...(kinds.length === 0
            ? [buckets.map(() => 0)]
            : kinds.map((k) => buckets.map((b) => b.errors[k] ?? 0))),
        ],
      },
    ];
  }, [history]);
  return html`<section>
    <h2>The last hour</h2>
    ${
      charts === undefined
        ? html`<p class="muted">Waiting for the history…</p>`
        : html`<div class="charts">
            ${charts.map((chart) => html`<${Chart} key=${chart.testid} ...${chart} />`)}
          </div>`
    }
  </section>`;
};

const Models = () => {
  const [models, setModels] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    request('models').then(({ status, body }) =>
      status === 200 ? setModels(body) : setError(body.error?.message ?? `The bridge answered ${status}.`),
    );
  }, []);
  if (error)
    return html`<section>
      <h2>Models</h2>
      <p class="issues">${error}</p>
    </section>`;
  if (models === undefined)
    return html`<section>
      <h2>Models</h2>
      <p class="muted">Reading the catalog…</p>
    </section>`;
  const routes = Object.entries(models.router);
  return html`<section data-testid="models">
    <h2>Models and Router</h2>
    <div class="charts">
      <table>
        <thead>
          <tr>
            <th>Router</th>
            <th>route</th>
          </tr>
        </thead>
        <tbody>
          ${routes.map(
            ([name, value]) =>
              html`<tr key=${name}>
                <td>${name}</td>
                <td><code>${String(value)}</code></td>
              </tr>`,
          )}
        </tbody>
      </table>
      <table>
        <thead>
          <tr>
            <th>model</th>
            <th>name</th>
            <th class="num">context window</th>
          </tr>
        </thead>
        <tbody>
          ${models.models.map(
            (model) =>
              html`<tr key=${model.id}>
                <td><code>${model.id}</code></td>
                <td>${model.displayName ?? ''}</td>
                <td class="num">${model.contextWindow === undefined ? '–' : number(model.contextWindow)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
};

// --- the page -----------------------------------------------------------------------------------------

const App = () => {
  const [auth, setAuth] = useState('checking');
  const [tab, setTab] = useState(location.hash === '#grounding' ? 'grounding' : 'live');
  // The template reloads the live feed announced: how many, and the latest.
  const [reloads, setReloads] = useState({ count: 0, latest: undefined });
  const checkLogin = useCallback(async () => {
    const { status } = await request('state');
    setAuth(status === 401 ? 'login' : 'in');
  }, []);
  useEffect(() => void checkLogin(), []);
  const onTemplates = useCallback(
    (report) => setReloads((seen) => ({ count: seen.count + 1, latest: report })),
    [],
  );
  const { state, history, connected } = useLiveFeed(auth === 'in', onTemplates);
  const show = (name) => {
    setTab(name);
    window.history.replaceState(null, '', `#${name}`);
  };
  if (auth === 'checking') return html`<p class="muted">Loading the console…</p>`;
  const info = state?.process;
  return html`<div>
    <header>
      <h1>cursor-bridge console</h1>
      ${info && html`<span class="muted">v${info.version} · pid ${info.pid} · cursorMode ${info.mode}</span>`}
      <span class=${`badge ${connected ? 'live' : 'down'}`} data-testid="connection"
        >${connected ? 'live' : 'disconnected'}</span
      >
      <nav>
        <button aria-selected=${String(tab === 'live')} data-testid="tab-live" onClick=${() => show('live')}>
          Live
        </button>
        <button
          aria-selected=${String(tab === 'grounding')}
          data-testid="tab-grounding"
          onClick=${() => show('grounding')}
        >
          Grounding
        </button>
      </nav>
    </header>
    ${
      auth === 'login'
        ? html`<${Login} onLogin=${() => setAuth('in')} />`
        : tab === 'live'
          ? html`<${ProcessPanel} process=${info} /><${Conversations} state=${state} /><${Charts}
                history=${history}
              /><${Models} />`
          : html`<${TemplateEditor} reloads=${reloads} />`
    }
  </div>`;
};

render(html`<${App} />`, document.getElementById('app'));
